"""The eval runner: tasks x trials through the agent, logged, graded, written as one parquet.

It runs and summarises; it neither renders nor records (the change log is `climb`'s, which also
keeps the held-out split to one run).

- Bounded concurrency with a progress bar: trials run on an executor (`executors`: this
  process's threads by default, or Ray across machines); only this process writes the run log.
- Every finished trial is appended to the run log (`runlog`) at once, so `resume` picks an
  interrupted run up without redoing finished trials, and `score` then grades every trial,
  logged or new. Trials that ended in an infrastructure error are retried
  (here, then again on resume) and reported apart from agent failures.
- Model and judge calls go through a response cache keyed by trial index: repeated trials stay
  independent samples, and an unchanged rerun makes zero model calls.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tqdm import tqdm

from wikiqa.agent import Agent, AgentConfig, prompt_hash
from wikiqa.evals.graders import Judge, check_not_self, decision_of
from wikiqa.evals.paths import git_sha, results_dir
from wikiqa.evals.running.cache import (
    Cache,
    CachingModel,
    ResponseCache,
    cache_path,
    imported_note,
    output_cap,
)
from wikiqa.evals.running.cassettes import check_replay, open_recorder, replaying, with_cassette
from wikiqa.evals.running.executors import Executor, open_executor
from wikiqa.evals.running.locks import run_lock
from wikiqa.evals.running.passes import RunOutcome, finish
from wikiqa.evals.running.records import RunConfig, RunMeta, TrialRecord, portable
from wikiqa.evals.running.runlog import RunLog
from wikiqa.evals.running.scoring import score
from wikiqa.evals.running.served import open_run_model
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
from wikiqa.sources import InjectionSource, WikiSource
from wikiqa.sources.cassette import CassetteRecorder

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
        self.model = model or open_run_model(config.model)
        self.source = source or open_source(config.source, (config.out,))
        # Every run records what its source answered (runs/RUN_ID.cassette.jsonl.gz); a replayed
        # cassette's misses are final, so they are not retried (`cassettes`).
        self.record_cassette = record_cassette
        self.recorder: CassetteRecorder | None = None
        self.infra_attempts = 1 if replaying(self.source) else config.infra_attempts
        judge_model = judge_model or (open_run_model(config.judge) if config.judge else None)
        if judge_model is not None:
            check_not_self(judge_model.spec, self.model.spec, config.allow_self_judge)
        self.judge_model = judge_model
        self.progress = progress
        self.sleep = sleep
        # Where a run without a progress bar reports as it goes (a line every tenth of the
        # trials) and where the first infrastructure error is told the moment it happens.
        self.notify = notify
        self.cache: Cache | None = ResponseCache(cache_path()) if config.cache else None
        self._counter_lock = threading.Lock()
        self.model_calls = self.cached_calls = self.judge_calls = 0

    def tally(self, model_calls: int, cached_calls: int, judge_calls: int) -> None:
        """Add calls made elsewhere (a Ray worker's trial) to this run's counts."""
        with self._counter_lock:
            self.model_calls += model_calls
            self.cached_calls += cached_calls
            self.judge_calls += judge_calls

    # -- one trial ----------------------------------------------------------------------------

    def _wrap(self, model: Model, namespace: str) -> Model:
        return CachingModel(model, self.cache, namespace) if self.cache is not None else model

    def run_trial(self, task: Task, trial: int) -> TrialRecord:
        """One trial through the agent, retried on infrastructure errors; ungraded (grading is
        `score`'s, once the trials are logged). Plants go above the recorder, so the cassette
        holds what the source itself answered and a replay plants them again."""
        source: WikiSource = self.recorder or self.source
        if task.injection is not None:
            source = InjectionSource(source, task.injection.plants)
        model = self._wrap(self.model, f"trial={trial}")
        attempts = 0
        while True:
            attempts += 1
            agent = Agent(model, source, self.config.agent)
            result = agent.ask(task.question)
            if not result.infrastructure_error or attempts >= self.infra_attempts:
                break
            self.sleep(self.config.infra_backoff * 2 ** (attempts - 1))
        imported: dict[str, int] = {}
        with self._counter_lock:
            if isinstance(model, CachingModel):
                self.model_calls += model.calls
                self.cached_calls += model.hits
                imported = dict(model.imported_files)
            else:
                self.model_calls += result.usage.model_calls
        return TrialRecord(
            imported=imported,
            task_id=task.id,
            trial=trial,
            attempts=attempts,
            decision=decision_of(result),
            result=result,
            grades=[],
        )

    def judge_for(self, trial: int) -> Judge:
        """The judge for one trial's grading, its calls through the response cache."""
        assert self.judge_model is not None
        return Judge(self._wrap(self.judge_model, f"judge:trial={trial}"))

    # -- a run --------------------------------------------------------------------------------

    def run(self, resume: str | None = None) -> RunOutcome:
        config = self.config
        executor = self.executor or open_executor(
            config.executor
        )  # Ray missing: said before anything is written
        if config.agent.ranker != "bm25" and config.executor == "local":
            from wikiqa.sources.dense import MISSING, DenseError, dense_available

            if not dense_available():  # said before a log is started (a node of a cluster may
                raise DenseError(MISSING)  # have it where the driver has not: not checked there)
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
                f"model's cap is {cap} (set WIKIQA_MODEL_MAX_TOKENS, or a step's MAX_TOKENS)"
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
        # Under Ray, each worker opens its own source and sends what it answered to this recorder
        recorder = open_recorder(self.source, meta, config.out) if self.record_cassette else None
        self.recorder = recorder
        logged = log.trials
        todo = [
            (task, t)
            for task in tasks
            for t in range(meta.config.trials)
            if (task.id, t) not in logged or logged[(task.id, t)].result.infrastructure_error
        ]
        bar = tqdm(total=len(todo), desc=meta.run_id, unit="trial", disable=not self.progress)
        seen: set[tuple[str, int]] = set()
        try:
            told, step = False, max(1, len(todo) // 10)
            for record in executor.run(self, todo):
                key = (record.task_id, record.trial)
                if key in seen:
                    continue  # yielded twice (a lost worker's retry): logged once
                seen.add(key)
                if recorder is not None:
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
            log, meta, tasks, scored, trials_run=len(todo), model_calls=self.model_calls,
            cached_calls=self.cached_calls, judge_calls=self.judge_calls,
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
