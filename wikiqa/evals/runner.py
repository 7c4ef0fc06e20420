"""The eval runner: tasks x trials through the agent, graded, journaled, written as one parquet.

- Bounded concurrency (a thread pool; the agent's work is I/O and SQLite) with a progress bar.
- Every finished trial is appended to a journal at once, so `resume` picks an interrupted run up
  without redoing finished trials. Trials that ended in an infrastructure error are retried
  (here, then again on resume) and reported apart from agent failures.
- Model and judge calls go through a response cache keyed by trial index: repeated trials stay
  independent samples, and an unchanged rerun makes zero model calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field, model_validator
from tqdm import tqdm

from wikiqa.agent import DEFAULT_BUDGET, Agent, AgentResult, prompt_hash
from wikiqa.config import Settings
from wikiqa.evals.cache import CachingModel, ResponseCache
from wikiqa.evals.graders import Grade, calibration, grade
from wikiqa.evals.judge import Judge, check_not_self
from wikiqa.evals.report import Summary, render, summarize
from wikiqa.evals.tasks import Task, load_tasks, resolve_suite, suite_hash
from wikiqa.models import Model
from wikiqa.registry import open_model, open_source
from wikiqa.sources import InjectionSource, WikiSource

REPO_RESULTS = Path(__file__).resolve().parents[2] / "results"


def results_dir() -> Path:
    """`WIKIQA_RESULTS` if set (tests and notebook checks write elsewhere), else results/."""
    configured = Settings().results
    return configured.expanduser() if configured is not None else REPO_RESULTS


# Columns that identify a run; the rest describe one task x trial x dimension.
META_COLUMNS = (
    "run_id", "git_sha", "experiment", "change", "kind", "model", "judge", "source",
    "source_hash", "prompt_hash", "suite", "suite_hash", "trials", "created_at",
)  # fmt: skip


class HoldoutRefused(RuntimeError):
    """The held-out suite was already run on this suite hash."""


class RunConfig(BaseModel):
    suite: str = "dev"
    holdout: bool = False
    allow_holdout_rerun: bool = False
    trials: int = Field(3, ge=1, le=100)
    model: str = "extractive"
    judge: str | None = None
    allow_self_judge: bool = False
    source: str = "snapshot"
    concurrency: int = Field(8, ge=1, le=256)
    budget: int = Field(DEFAULT_BUDGET, ge=1, le=64)
    retrieval: bool = Field(True, description="False: the no-retrieval baseline (tools off).")
    read_first: int = Field(
        0, ge=0, description="Top search hits the agent fetches before the model's first turn."
    )
    limit: int | None = Field(None, ge=1, description="Run only the first N tasks.")
    experiment: str = "adhoc"
    change: str = ""
    kind: str = "adhoc"
    out: Path = Field(default_factory=results_dir)
    cache: bool = True
    infra_attempts: int = Field(3, ge=1)
    infra_backoff: float = Field(2.0, ge=0)

    @model_validator(mode="after")
    def _reads_fit_budget(self) -> RunConfig:
        if self.read_first >= self.budget:
            raise ValueError(f"read_first ({self.read_first}) must be below budget ({self.budget})")
        return self


class RunMeta(BaseModel):
    run_id: str
    created_at: str
    git_sha: str
    wikiqa_version: str
    config: RunConfig
    suite_path: str
    suite_hash: str
    source_name: str
    source_hash: str | None
    prompt_hash: str
    model: str
    judge: str | None
    tasks: int


class TrialRecord(BaseModel):
    task_id: str
    trial: int
    attempts: int
    decision: str
    result: AgentResult
    grades: list[Grade]


class RunOutcome(BaseModel):
    meta: RunMeta
    summary: Summary
    table: str
    parquet: Path
    trials_run: int = Field(description="Trials executed now (not taken from the journal).")
    model_calls: int = Field(description="Model calls that reached the model (cache misses).")
    cached_calls: int
    judge_calls: int


def git_sha() -> str:
    """The commit the run's code came from, `-dirty` when tracked files were changed."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return git("rev-parse", "--short", "HEAD") + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _source_hash(source: WikiSource) -> str | None:
    inner: Any = source
    while hasattr(inner, "inner"):
        inner = inner.inner
    value = getattr(inner, "sha256", None)
    return str(value) if value else None


class Journal:
    """Append-only JSON lines, one per finished trial; a line is written in one call."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()

    def append(self, record: TrialRecord) -> None:
        line = (record.model_dump_json() + "\n").encode()
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)

    def read(self) -> dict[tuple[str, int], TrialRecord]:
        records: dict[tuple[str, int], TrialRecord] = {}
        if not self.path.exists():
            return records
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                record = TrialRecord.model_validate_json(line)
            except ValueError:
                continue  # a line cut short by a kill: that trial simply runs again
            records[(record.task_id, record.trial)] = record
        return records


def journal_dir(out: Path, run_id: str) -> Path:
    return out / "journals" / run_id


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
    ) -> None:
        self.config = config
        self.model = model or open_model(config.model)
        self.source = source or open_source(config.source)
        judge_model = judge_model or (open_model(config.judge) if config.judge else None)
        if judge_model is not None:
            check_not_self(judge_model.spec, self.model.spec, config.allow_self_judge)
        self.judge_model = judge_model
        self.progress = progress
        self.sleep = sleep
        self.cache = (
            ResponseCache(Settings().cache_dir() / "responses.sqlite") if config.cache else None
        )
        self._counter_lock = threading.Lock()
        self.model_calls = self.cached_calls = self.judge_calls = 0

    # -- one trial ----------------------------------------------------------------------------

    def _wrap(self, model: Model, namespace: str) -> Model:
        return CachingModel(model, self.cache, namespace) if self.cache is not None else model

    def run_trial(self, task: Task, trial: int) -> TrialRecord:
        source: WikiSource = self.source
        if task.injection is not None:
            source = InjectionSource(self.source, task.injection.plants)
        model = self._wrap(self.model, f"trial={trial}")
        attempts = 0
        while True:
            attempts += 1
            agent = Agent(
                model,
                source,
                budget=self.config.budget,
                retrieval=self.config.retrieval,
                read_first=self.config.read_first,
            )
            result = agent.ask(task.question)
            if not result.infrastructure_error or attempts >= self.config.infra_attempts:
                break
            self.sleep(self.config.infra_backoff * 2 ** (attempts - 1))
        judge = None
        if self.judge_model is not None:
            judge = Judge(self._wrap(self.judge_model, f"judge:trial={trial}"))
        grades = grade(task, result, judge)
        with self._counter_lock:
            if isinstance(model, CachingModel):
                self.model_calls += model.calls
                self.cached_calls += model.hits
            else:
                self.model_calls += result.usage.model_calls
            if judge is not None and isinstance(judge.model, CachingModel):
                self.judge_calls += judge.model.calls
        return TrialRecord(
            task_id=task.id,
            trial=trial,
            attempts=attempts,
            decision=str(calibration(task, result).detail["detected"]),
            result=result,
            grades=grades,
        )

    # -- a run --------------------------------------------------------------------------------

    def run(self, resume: str | None = None) -> RunOutcome:
        config = self.config
        suite_path = resolve_suite(config.suite, config.holdout)
        tasks = load_tasks(suite_path)[: config.limit]
        digest = suite_hash(suite_path)
        if config.holdout and not resume:
            _check_holdout(config.out, digest, config.allow_holdout_rerun)
        if resume:
            meta = RunMeta.model_validate_json(
                (journal_dir(config.out, resume) / "meta.json").read_text()
            )
            if meta.suite_hash != digest:
                raise ValueError(
                    f"run {resume} used suite {meta.suite_hash}; the file is now {digest}"
                )
        else:
            now = datetime.now(UTC)
            meta = RunMeta(
                run_id=f"{now:%Y%m%dT%H%M%SZ}-{_slug(config.experiment)}-{uuid.uuid4().hex[:6]}",
                created_at=now.isoformat(timespec="seconds"),
                git_sha=git_sha(),
                wikiqa_version=version("wikiqa"),
                config=config,
                suite_path=str(suite_path),
                suite_hash=digest,
                source_name=self.source.name,
                source_hash=_source_hash(self.source),
                prompt_hash=prompt_hash(config.retrieval),
                model=self.model.spec,
                judge=self.judge_model.spec if self.judge_model else None,
                tasks=len(tasks),
            )
            folder = journal_dir(config.out, meta.run_id)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "meta.json").write_text(meta.model_dump_json(indent=2))
        journal = Journal(journal_dir(config.out, meta.run_id) / "journal.jsonl")
        records = journal.read()
        trials = meta.config.trials
        todo = [
            (task, t)
            for task in tasks
            for t in range(trials)
            if (task.id, t) not in records or records[(task.id, t)].result.infrastructure_error
        ]
        bar = tqdm(total=len(todo), desc=meta.run_id, unit="trial", disable=not self.progress)
        with ThreadPoolExecutor(max_workers=config.concurrency) as pool:
            futures = {pool.submit(self.run_trial, task, t): (task.id, t) for task, t in todo}
            try:
                for future in as_completed(futures):
                    record = future.result()
                    journal.append(record)
                    records[(record.task_id, record.trial)] = record
                    bar.update()
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
            finally:
                bar.close()
        frame = to_frame(meta, tasks, records)
        parquet = write_parquet(frame, config.out / "runs" / f"{meta.run_id}.parquet")
        summary = summarize(frame)
        outcome = RunOutcome(
            meta=meta,
            summary=summary,
            table=render(summary),
            parquet=parquet,
            trials_run=len(todo),
            model_calls=self.model_calls,
            cached_calls=self.cached_calls,
            judge_calls=self.judge_calls,
        )
        if config.holdout:
            from wikiqa.evals.changelog import record_run

            record_run(outcome, config.out)
        return outcome


def _check_holdout(out: Path, digest: str, allow_rerun: bool) -> None:
    log = out / "changelog.jsonl"
    if allow_rerun or not log.exists():
        return
    for line in log.read_text(encoding="utf-8").splitlines():
        if (
            line.strip()
            and (row := json.loads(line)).get("holdout")
            and row.get("suite_hash") == digest
        ):
            raise HoldoutRefused(
                f"the held-out suite {digest} was already run ({row.get('run_id')}); it is run "
                "once, at the end. Pass --allow-holdout-rerun to run it again anyway."
            )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:40] or "run"


def to_frame(
    meta: RunMeta, tasks: list[Task], records: dict[tuple[str, int], TrialRecord]
) -> pd.DataFrame:
    """The long results table: one row per task x trial x graded dimension."""
    c = meta.config
    run = {
        "run_id": meta.run_id, "git_sha": meta.git_sha, "experiment": c.experiment,
        "change": c.change, "kind": c.kind, "model": meta.model, "judge": meta.judge,
        "source": meta.source_name, "source_hash": meta.source_hash,
        "prompt_hash": meta.prompt_hash, "suite": c.suite if not c.holdout else "holdout",
        "suite_hash": meta.suite_hash, "trials": c.trials, "created_at": meta.created_at,
    }  # fmt: skip
    rows = []
    for task in tasks:
        for trial in range(c.trials):
            record = records.get((task.id, trial))
            if record is None:
                continue
            result = record.result
            output = result.output
            answer = output.text if output.kind == "answer" else None
            trial_cols = {
                "task_id": task.id, "category": task.category, "question": task.question,
                "trial": trial, "should_refuse": task.should_refuse, "outcome": output.kind,
                "decision": record.decision,
                "reason_code": None if output.kind == "answer" else output.reason_code,
                "answer": answer,
                "refusal_reason": None if output.kind == "answer" else output.reason,
                "citations": json.dumps(
                    [ci.model_dump() for ci in output.citations] if output.kind == "answer" else []
                ),
                "infra_error": result.infrastructure_error, "attempts": record.attempts,
                "repairs": result.repairs, "guard_blocked": result.guard_blocked,
                "confidence": result.confidence, "needs_human_review": result.needs_human_review,
                "input_tokens": result.usage.tokens.input_tokens,
                "output_tokens": result.usage.tokens.output_tokens,
                "cache_read_tokens": result.usage.tokens.cache_read_tokens,
                "cache_write_tokens": result.usage.tokens.cache_write_tokens,
                "estimated_cost_usd": result.usage.estimated_cost_usd,
                "model_calls": result.usage.model_calls, "tool_calls": result.usage.tool_calls,
                "latency_ms": result.latency_ms,
            }  # fmt: skip
            for g in record.grades:
                rows.append(
                    run
                    | trial_cols
                    | {
                        "dimension": g.dimension,
                        "verdict": g.verdict,
                        "passed": {"pass": True, "fail": False}.get(g.verdict),
                        "fraction": g.fraction,
                        "tier": g.tier,
                        "detail": json.dumps(g.detail, ensure_ascii=False, default=str),
                    }
                )
    return pd.DataFrame.from_records(rows)


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    """Write beside the final name, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return path


def run_eval(config: RunConfig, resume: str | None = None, **kwargs: Any) -> RunOutcome:
    return Runner(config, **kwargs).run(resume)
