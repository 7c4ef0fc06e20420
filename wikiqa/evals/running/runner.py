"""The eval runner: tasks x trials through the agent, graded, journaled, written as one parquet.

It runs and summarises; it neither renders nor records (the change log is `climb`'s, which also
keeps the held-out split to one run).

- Bounded concurrency with a progress bar: trials run on an executor (`executors`: this
  process's threads by default, or Ray across machines); only this process writes the journal.
- Every finished trial is appended to a journal at once, so `resume` picks an interrupted run up
  without redoing finished trials. Trials that ended in an infrastructure error are retried
  (here, then again on resume) and reported apart from agent failures.
- Model and judge calls go through a response cache keyed by trial index: repeated trials stay
  independent samples, and an unchanged rerun makes zero model calls.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from wikiqa.agent import Agent, AgentConfig, prompt_hash
from wikiqa.evals.analysis.summary import Summary, summarize
from wikiqa.evals.graders import Judge, check_not_self, decision_of, error_grades, grade
from wikiqa.evals.paths import ROOT, git_sha
from wikiqa.evals.running.cache import (
    Cache,
    CachingModel,
    ResponseCache,
    cache_path,
    output_cap,
)
from wikiqa.evals.running.cassettes import check_replay, open_recorder, replaying, with_cassette
from wikiqa.evals.running.executors import Executor, open_executor
from wikiqa.evals.running.frame import to_frame, write_parquet
from wikiqa.evals.running.journal import Journal, journal_dir
from wikiqa.evals.running.records import RunConfig, RunMeta, TrialRecord
from wikiqa.evals.running.served import open_run_model
from wikiqa.evals.tasks.task import (
    Task,
    bytes_hash,
    parse_tasks,
    read_suite,
    refuse_held_out,
    resolve_suite,
)
from wikiqa.inputs import MiB, read_text
from wikiqa.models import Model, ModelUnavailable
from wikiqa.registry import open_source
from wikiqa.secrets import scrub
from wikiqa.sources import InjectionSource, WikiSource
from wikiqa.sources.cassette import CassetteRecorder

# What a resumed run must share with the run it finishes, besides every agent lever: a run
# resumed under other values would mix two agents in one journal.
RUN_FIELDS = ("model", "source", "judge")


class RunOutcome(BaseModel):
    """A finished run: its metadata, its results table (in memory, and written as parquet) and
    its summary, with what it cost."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    meta: RunMeta
    frame: pd.DataFrame = Field(exclude=True, repr=False)
    summary: Summary
    parquet: Path
    trials_run: int = Field(description="Trials executed now (not taken from the journal).")
    model_calls: int = Field(description="Model calls that reached the model (cache misses).")
    cached_calls: int
    judge_calls: int
    first_error: str | None = Field(None, description="The first infrastructure error's cause.")

    @property
    def all_failed(self) -> bool:
        """Every trial ended in an infrastructure error (Wikipedia or the model down)."""
        return (
            self.summary.errors > 0
            and self.summary.errors >= self.meta.tasks * self.meta.config.trials
        )


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
    ) -> None:
        self.config = config
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
        source: WikiSource = self.recorder or self.source
        if task.injection is not None:
            source = InjectionSource(self.source, task.injection.plants)
        model = self._wrap(self.model, f"trial={trial}")
        attempts = 0
        while True:
            attempts += 1
            agent = Agent(model, source, self.config.agent)
            result = agent.ask(task.question)
            if not result.infrastructure_error or attempts >= self.infra_attempts:
                break
            self.sleep(self.config.infra_backoff * 2 ** (attempts - 1))
        judge = None
        if self.judge_model is not None:
            judge = Judge(self._wrap(self.judge_model, f"judge:trial={trial}"))
        judge_error = None
        try:
            graded = grade(task, result, judge)
            grades, decision = graded.grades, graded.decision
        except ModelUnavailable as err:  # the judge, after its own retries: not the agent's fault
            judge_error = f"judge unavailable: {err}"
            grades, decision = error_grades(task, judge_error), decision_of(result)
        with self._counter_lock:
            if isinstance(model, CachingModel):
                self.model_calls += model.calls
                self.cached_calls += model.hits
            else:
                self.model_calls += result.usage.model_calls
            if judge is not None:
                self.judge_calls += judge.calls
        return TrialRecord(
            task_id=task.id,
            trial=trial,
            attempts=attempts,
            decision=decision,
            result=result,
            grades=grades,
            judge_error=judge_error,
        )

    def _graded_again(
        self, records: dict[tuple[str, int], TrialRecord], tasks: dict[str, Task]
    ) -> dict[tuple[str, int], TrialRecord]:
        """The journal's finished trials graded by this checkout's graders, so that a run
        resumed across a grader change is one grader's, never a mix (a long run spans sessions,
        and the graders may change between them). The journal itself keeps what was graded
        then. A run with a judge keeps its journaled verdicts: grading again would call it."""
        if self.judge_model is not None:
            return records
        again = dict(records)
        changed = 0
        for key, record in records.items():
            task = tasks.get(record.task_id)
            if task is None or record.failed or record.judge_error:
                continue
            fresh = graded_again(task, record)
            if fresh.grades != record.grades or fresh.decision != record.decision:
                changed += 1
                again[key] = fresh
        if changed and self.notify is not None:
            self.notify(f"wikiqa: {changed} journaled trials graded otherwise by today's graders")
        return again

    # -- a run --------------------------------------------------------------------------------

    def run(self, resume: str | None = None) -> RunOutcome:
        config = self.config
        executor = self.executor or open_executor(
            config.executor
        )  # Ray missing: said before anything is written
        suite_path = resolve_suite(config.suite, config.holdout)
        raw = read_suite(suite_path)
        all_tasks = parse_tasks(raw, suite_path)
        if not config.holdout:
            refuse_held_out(all_tasks, suite_path)
        tasks = all_tasks[: config.limit]
        digest = bytes_hash(raw)
        check_replay(self.source, digest)
        if resume:
            meta = RunMeta.model_validate_json(
                read_text(journal_dir(config.out, resume) / "meta.json", MiB, "run metadata")
            )
            if meta.suite_hash != digest:
                raise ValueError(
                    f"run {resume} used suite {meta.suite_hash}; the file is now {digest}"
                )
            changed = differences(meta.config, config)
            if changed:
                raise ValueError(
                    f"run {resume} was made with "
                    + ", ".join(f"{f}={old!r}" for f, old, _ in changed)
                    + "; this run sets "
                    + ", ".join(f"{f}={new!r}" for f, _, new in changed)
                    + ": resume it with the parameters it ran with"
                )
            cap = output_cap(self.model)
            if meta.max_tokens is not None and meta.max_tokens != cap:
                raise ValueError(
                    f"run {resume} called its model with max_tokens {meta.max_tokens}; this "
                    f"model's cap is {cap} (set WIKIQA_MODEL_MAX_TOKENS, or a step's MAX_TOKENS)"
                )
            # The run's folder is where it is resumed, not what its meta.json says: a committed
            # journal names it relative to the repository, and read from a notebook's working
            # directory that put the change-log row in experiments/results/.
            meta = meta.model_copy(
                update={"config": meta.config.model_copy(update={"out": config.out})}
            )
        else:
            now = datetime.now(UTC)
            meta = RunMeta(
                run_id=f"{now:%Y%m%dT%H%M%SZ}-{slug(config.experiment)}-{uuid.uuid4().hex[:6]}",
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
                tasks=len(tasks),
                max_tokens=output_cap(self.model),
            )
            folder = journal_dir(config.out, meta.run_id)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "meta.json").write_text(scrub(_portable(meta).model_dump_json(indent=2)))
        journal = Journal(journal_dir(config.out, meta.run_id) / "journal.jsonl")
        # Under Ray, each worker opens its own source and sends what it answered to this recorder
        recorder = open_recorder(self.source, meta, config.out) if self.record_cassette else None
        self.recorder = recorder
        records = journal.read()
        if resume:
            records = self._graded_again(records, {t.id: t for t in tasks})
        trials = meta.config.trials
        todo = [
            (task, t)
            for task in tasks
            for t in range(trials)
            if (task.id, t) not in records or records[(task.id, t)].failed
        ]
        bar = tqdm(total=len(todo), desc=meta.run_id, unit="trial", disable=not self.progress)
        seen: set[tuple[str, int]] = set()
        try:
            told, step = False, max(1, len(todo) // 10)
            for record in executor.run(self, todo):
                key = (record.task_id, record.trial)
                if key in seen:
                    continue  # yielded twice (a lost worker's retry): journaled once
                seen.add(key)
                if recorder is not None:
                    recorder.flush()  # its calls on disk before the journal holds it
                journal.append(record)
                records[key] = record
                bar.update()
                if self.notify is not None and record.failed and not told:
                    told = True
                    self.notify(f"wikiqa: infrastructure error on {record.task_id}: {record.cause}")
                if self.notify is not None and not self.progress and len(seen) % step == 0:
                    self.notify(f"wikiqa: {len(seen)}/{len(todo)} trials done")
        finally:
            bar.close()
        meta = with_cassette(meta, recorder, config.out)
        frame = to_frame(meta, tasks, records)
        parquet = write_parquet(frame, config.out / "runs" / f"{meta.run_id}.parquet")
        summary = summarize(frame)
        failed = [r for _, r in sorted(records.items()) if r.failed]
        first_error = f"{failed[0].task_id}: {failed[0].cause}" if failed else None
        return RunOutcome(
            meta=meta,
            frame=frame,
            summary=summary,
            parquet=parquet,
            trials_run=len(todo),
            model_calls=self.model_calls,
            cached_calls=self.cached_calls,
            judge_calls=self.judge_calls,
            first_error=first_error,
        )


def graded_again(task: Task, record: TrialRecord) -> TrialRecord:
    """A journaled trial with the verdicts of this checkout's offline graders: the agent's
    result is kept, so no model is called."""
    graded = grade(task, record.result)
    return record.model_copy(update={"grades": graded.grades, "decision": graded.decision})


def differences(old: RunConfig, new: RunConfig) -> list[tuple[str, Any, Any]]:
    """What a resume may not change, as (name, the run's value, this one's): the model, source
    and judge, and every agent lever. A spec with a password in its URL is journaled masked, so
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


def _portable(meta: RunMeta) -> RunMeta:
    """The metadata as a journal is committed: its results folder and suite file relative to
    the repository when inside it, so no machine's path is committed (a resume writes where it
    is resumed, and reads its suite from the config)."""

    def inside(path: Path) -> Path | None:
        try:
            return path.resolve().relative_to(ROOT)
        except ValueError:
            return None

    out, suite = inside(meta.config.out), inside(Path(meta.suite_path))
    config = meta.config.model_copy(update={"out": out}) if out is not None else meta.config
    return meta.model_copy(
        update={"config": config, "suite_path": str(suite) if suite else meta.suite_path}
    )
