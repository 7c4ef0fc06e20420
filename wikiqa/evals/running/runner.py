"""The eval runner: tasks x trials through the agent, logged, graded, written as one parquet.

It runs and summarises; it neither renders nor records (the change log is `climb`'s, which also
keeps the held-out split to one run).

- Bounded concurrency with a progress bar: an executor (`executors`: this process's threads by
  default, or Ray across machines) maps the run's trial function (`trial`) over the trials the
  log lacks; only this process writes the run log and the cassette, and counts the calls.
- Every finished trial is appended to the run log (`runlog`) at once, so `resume` picks an
  interrupted run up without redoing finished trials, and `score` then grades every trial,
  logged or new. Trials that ended in an infrastructure error are retried
  (here, then again on resume) and reported apart from agent failures.
- Model and judge calls go through a response cache keyed by trial index: repeated trials stay
  independent samples, and an unchanged rerun makes zero model calls.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tqdm import tqdm

from wikiqa.agent import AgentConfig, prompt_hash
from wikiqa.evals.graders import Judge, check_not_self
from wikiqa.evals.paths import git_sha, results_dir
from wikiqa.evals.running.cache import (
    Cache,
    CachingModel,
    ResponseCache,
    cache_path,
    imported_note,
    output_cap,
)
from wikiqa.evals.running.cassettes import check_replay, open_recorder, with_cassette
from wikiqa.evals.running.executors import Executor, open_executor
from wikiqa.evals.running.locks import run_lock
from wikiqa.evals.running.passes import RunOutcome, finish
from wikiqa.evals.running.records import RunConfig, RunMeta, TrialRecord, portable
from wikiqa.evals.running.runlog import RunLog
from wikiqa.evals.running.scoring import score
from wikiqa.evals.running.served import open_run_model
from wikiqa.evals.running.trial import Trial
from wikiqa.evals.tasks.task import (
    Task,
    bytes_hash,
    parse_tasks,
    read_suite,
    refuse_held_out,
    resolve_suite,
    sample,
)
from wikiqa.models import Model
from wikiqa.outputs import check_run_id
from wikiqa.registry import open_source
from wikiqa.secrets import scrub
from wikiqa.sources import WikiSource

# What a resumed run must share with the run it finishes, besides every agent lever: a run
# resumed under other values would mix two agents, or two measurements, in one log. A resume
# takes none of them from the log: it is given them, and the log is checked against them.
RUN_FIELDS = ("model", "source", "judge", "suite", "holdout", "trials", "limit", "experiment",
              "change", "kind")  # fmt: skip


def _source_hash(source: WikiSource) -> str | None:
    inner: Any = source
    while hasattr(inner, "inner"):
        inner = inner.inner
    value = getattr(inner, "sha256", None)
    return str(value) if value else None


class Runner:
    def __init__(
        self,
        config: RunConfig,
        *,
        model: Model | None = None,
        source: WikiSource | None = None,
        judge_model: Model | None = None,
        progress: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        notify: Callable[[str], None] | None = None,
        record_cassette: bool = True,
        executor: Executor | None = None,
        admit: Callable[[RunMeta], None] | None = None,
    ) -> None:
        self.config = config
        # Called with a new run's metadata before anything is written: it may refuse the run
        # (the change log refuses a rerun whose row is already recorded) by raising.
        self.admit = admit
        self.executor = executor  # None: the one config.executor names
        self.model = model or open_run_model(config.model, config.max_tokens, config.timeout)
        self.source = source or open_source(config.source, (config.out,))
        # Every run records what its source answered (runs/RUN_ID.cassette.jsonl.gz)
        self.record_cassette = record_cassette
        if judge_model is None and config.judge:
            judge_model = open_run_model(config.judge, config.max_tokens, config.timeout)
        if judge_model is not None:
            check_not_self(judge_model.spec, self.model.spec, config.allow_self_judge)
        self.judge_model = judge_model
        self.progress = progress
        self.sleep = sleep
        # Where a run without a progress bar reports as it goes (a line every tenth of the
        # trials) and where the first infrastructure error is told the moment it happens.
        self.notify = notify
        self.cache: Cache | None = ResponseCache(cache_path()) if config.cache else None

    def judge_for(self, trial: int) -> Judge:
        """The judge for one trial's grading, its calls through the response cache."""
        assert self.judge_model is not None
        if self.cache is None:
            return Judge(self.judge_model)
        return Judge(CachingModel(self.judge_model, self.cache, f"judge:trial={trial}"))

    # -- a run --------------------------------------------------------------------------------

    def run(self, resume: str | None = None) -> RunOutcome:
        config = self.config
        executor = self.executor or open_executor(
            config.executor
        )  # Ray missing: said before anything is written
        if config.agent.ranker != "bm25" and config.executor == "local":
            from wikiqa.sources.dense import DenseError, missing

            if missing():  # said before a log is started (a node of a cluster may have it
                raise DenseError(missing())  # where the driver has not: not checked there)
        suite_path = resolve_suite(config.suite, config.holdout)
        raw = read_suite(suite_path)
        all_tasks = parse_tasks(raw, suite_path)
        if not config.holdout:
            refuse_held_out(all_tasks, suite_path)
        tasks = sample(all_tasks, config.limit)
        digest = bytes_hash(raw)
        check_replay(self.source, digest, (config.out, results_dir()))
        now = datetime.now(UTC)
        run_id = (
            check_run_id(resume)
            if resume
            else (f"{now:%Y%m%dT%H%M%SZ}-{slug(config.experiment)}-{uuid.uuid4().hex[:6]}")
        )
        meta = self._meta(run_id, now, suite_path, digest, len(tasks))
        if not resume and self.admit is not None:
            self.admit(meta)
        with run_lock(config.out, run_id):
            if resume:
                log = RunLog.load(config.out, run_id)
                self._check_resume(log.meta, digest)
                log.drop_cut_tail()
            else:
                header = portable(meta).model_dump(mode="json")
                header["config"].pop("out")  # a log is read where it lies, never where it says
                log = RunLog.create(config.out, meta, header)
            return self._finish(log, tasks, executor)

    def _meta(
        self, run_id: str, now: datetime, suite_path: Path, digest: str, tasks: int
    ) -> RunMeta:
        config = self.config
        return RunMeta(
            run_id=run_id,
            created_at=now.isoformat(timespec="seconds"),
            git_sha=git_sha(),
            wikiqa_version=version("wikiqa"),
            config=config,
            suite_path=str(suite_path),
            suite_hash=digest,
            source_name=self.source.name,
            source_hash=_source_hash(self.source),
            prompt_hash=prompt_hash(config.agent),
            model=self.model.spec,
            judge=self.judge_model.spec if self.judge_model else None,
            tasks=tasks,
            max_tokens=output_cap(self.model),
        )

    def _check_resume(self, logged: RunMeta, digest: str) -> None:
        """A resume runs the model, judge and source it is given (never the log's), with the
        levers the run was made with: any difference is refused, named, before a call is made."""
        resume = logged.run_id
        if logged.suite_hash != digest:
            raise ValueError(
                f"run {resume} used suite {logged.suite_hash}; the file is now {digest}"
            )
        changed = differences(logged.config, self.config)
        if changed:
            raise ValueError(
                f"run {resume} was made with "
                + ", ".join(f"{f}={old!r}" for f, old, _ in changed)
                + "; this run sets "
                + ", ".join(f"{f}={new!r}" for f, _, new in changed)
                + ": resume it with the parameters it ran with (nothing is taken from its log)"
            )
        cap = output_cap(self.model)
        if logged.max_tokens is not None and logged.max_tokens != cap:
            raise ValueError(
                f"run {resume} called its model with max_tokens {logged.max_tokens}; this "
                f"model's cap is {cap}: resume it with --max-tokens {logged.max_tokens} (a "
                f"step's MAX_TOKENS)"
            )

    def _finish(self, log: RunLog, tasks: list[Task], executor: Executor) -> RunOutcome:
        """Run the trials the log lacks (or lost to infrastructure), log each as it finishes,
        bind the cassette, then grade every trial (`score`) and derive the results from them."""
        config, meta = (
            self.config,
            log.meta.model_copy(
                update={"config": log.meta.config.model_copy(update={"out": self.config.out})}
            ),
        )
        recorder = open_recorder(self.source, meta, config.out) if self.record_cassette else None
        logged = log.trials
        todo = [
            (task, t)
            for task in tasks
            for t in range(meta.config.trials)
            if (task.id, t) not in logged or logged[(task.id, t)].result.infrastructure_error
        ]
        trial = Trial(
            config, record_cassette=recorder is not None, model=self.model, source=self.source,
            cache=self.cache, sleep=self.sleep,
        )  # fmt: skip
        bar = tqdm(total=len(todo), desc=meta.run_id, unit="trial", disable=not self.progress)
        seen: set[tuple[str, int]] = set()
        model_calls = cached_calls = 0
        try:
            told, step = False, max(1, len(todo) // 10)
            for done in executor.map(trial, todo):
                model_calls += done.model_calls
                cached_calls += done.cached_calls
                record = done.record
                key = (record.task_id, record.trial)
                if key in seen:
                    continue  # yielded twice (a lost worker's retry): logged once
                seen.add(key)
                if recorder is not None:
                    recorder.add(done.cassette)
                    recorder.flush()  # its calls on disk before the log holds the trial
                log.append_trial(record)
                bar.update()
                if self.notify is not None and record.failed and not told:
                    told = True
                    self.notify(f"wikiqa: infrastructure error on {record.task_id}: {record.cause}")
                if self.notify is not None and not self.progress and len(seen) % step == 0:
                    self.notify(f"wikiqa: {len(seen)}/{len(todo)} trials done")
        finally:
            bar.close()
        meta = with_cassette(meta, recorder, config.out)
        if meta.cassette is not None and meta.cassette_hash is not None:
            log.bind_cassette(meta.cassette, meta.cassette_hash)
        by_id = {t.id: t for t in tasks}
        wanted = {
            k: r for k, r in log.trials.items() if k[0] in by_id and k[1] < meta.config.trials
        }
        meta = meta.model_copy(update={"imported_replies": _imported(wanted.values())})
        scored = score(
            wanted, by_id, self.judge_for if self.judge_model else None, config.concurrency
        )
        return finish(
            log, meta, tasks, scored, trials_run=len(todo), model_calls=model_calls,
            cached_calls=cached_calls,
        )  # fmt: skip


def _imported(records: Iterable[TrialRecord]) -> str | None:
    """What imported replies answered across a run's trials, for its row and parquet."""
    files: Counter[str] = Counter()
    calls = 0
    for record in records:
        files.update(record.imported)
        calls += record.result.usage.model_calls
    return imported_note(sum(files.values()), calls, files)


def differences(old: RunConfig, new: RunConfig) -> list[tuple[str, Any, Any]]:
    """What a resume may not change, as (name, the run's value, this one's): the model, source
    and judge, and every agent lever. A spec with a password in its URL is logged masked, so
    both sides are compared masked."""
    pairs = [(f, getattr(old, f), getattr(new, f)) for f in RUN_FIELDS]
    pairs += [(f, getattr(old.agent, f), getattr(new.agent, f)) for f in AgentConfig.model_fields]
    masked = [(f, _masked(a), _masked(b)) for f, a, b in pairs]
    return [(f, a, b) for f, a, b in masked if a != b]


def _masked(value: Any) -> Any:
    return scrub(value) if isinstance(value, str) else value


def slug(text: str) -> str:
    """A run id's name part: the experiment in lower case, other characters as dashes."""
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:40] or "run"


def run_eval(config: RunConfig, resume: str | None = None, **kwargs: Any) -> RunOutcome:
    runner = Runner(config, **kwargs)
    try:
        return runner.run(resume)
    finally:
        if isinstance(runner.cache, ResponseCache):
            runner.cache.close()  # now, not whenever the collector gets to it
