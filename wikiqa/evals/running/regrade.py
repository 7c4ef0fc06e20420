"""Regrade a logged run with today's graders, without calling its model again.

A grader fix changes verdicts, not answers, and the answers of a model run are hours of compute.
Every logged trial holds the agent's whole result, so `score` grades the same answers again: the
regraded run is a new run (its own id, log and parquet) whose trials are the original's results,
its kind `grader`, its cassette the original's (the same source replies). Recorded, its change-log
row is paired with the original's, so the Δ is the graders' alone. A judge's verdicts come from
the response cache when nothing it reads changed, so a regrade with a judge costs no judge call
then.

`check` grades a run again and counts the verdicts that differ from its parquet, writing nothing:
the test that a refactor of the graders changed no verdict.

Only complete runs regrade (a trial missing or lost to infrastructure would be a hole the new
graders never saw).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pandas as pd

from wikiqa.evals.analysis.summary import summarize
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.paths import git_sha
from wikiqa.evals.running.frame import to_frame, write_parquet
from wikiqa.evals.running.records import TrialRecord
from wikiqa.evals.running.runlog import RunLog, RunLogError
from wikiqa.evals.running.runner import RunOutcome, _portable, slug
from wikiqa.evals.running.scoring import Scored, score
from wikiqa.evals.tasks.task import Task, bytes_hash, parse_tasks, read_suite
from wikiqa.project import project_root


class RegradeError(ValueError):
    """The run cannot be regraded as it is (missing, incomplete, its suite changed)."""


def _graded(
    out: Path, run_id: str, judge: Callable[[int], Judge] | None
) -> tuple[RunLog, list[Task], Scored]:
    """Run `run_id`'s log, its tasks, and every trial graded by this checkout's graders."""
    try:
        log = RunLog.load(out, run_id)
    except RunLogError as err:
        raise RegradeError(str(err)) from None
    meta = log.meta
    if meta.judge is not None and judge is None:
        raise RegradeError(f"{run_id} was graded with judge {meta.judge}: give it with --judge")
    suite_path = Path(meta.suite_path)  # a committed log names it from the project root
    suite_path = suite_path if suite_path.is_absolute() else project_root() / suite_path
    raw = read_suite(suite_path)
    if bytes_hash(raw) != meta.suite_hash:
        raise RegradeError(f"{run_id} used suite {meta.suite_hash}; {suite_path} is now another")
    tasks = parse_tasks(raw, suite_path)
    if meta.config.limit is not None:
        # the tasks the run drew are the ones its log holds (how a limited run draws its tasks
        # has changed over time; the log is the record of what it ran)
        drawn = min(meta.config.limit, len(tasks))
        logged = {task_id for task_id, _ in log.trials}
        tasks = [t for t in tasks if t.id in logged]
        if len(tasks) < drawn:
            raise RegradeError(
                f"{run_id}: {drawn - len(tasks)} of its {drawn} tasks have no trial in its log; "
                "finish the run (resume it) before regrading"
            )
    wanted = [(t.id, trial) for t in tasks for trial in range(meta.config.trials)]
    missing = [k for k in wanted if k not in log.trials or log.trials[k].failed]
    if missing:
        raise RegradeError(
            f"{run_id}: {len(missing)} of {len(wanted)} trials are missing or lost to "
            f"infrastructure (first {missing[0][0]} trial {missing[0][1]}); finish the run "
            "(resume it) before regrading"
        )
    trials = {k: log.trials[k] for k in wanted}
    return log, tasks, score(trials, {t.id: t for t in tasks}, judge)


def regrade(
    run_id: str, out: Path, change: str, judge: Callable[[int], Judge] | None = None
) -> RunOutcome:
    """A new run: `run_id`'s logged results graded by the graders of this checkout."""
    log, tasks, scored = _graded(out, run_id, judge)
    meta = log.meta
    now = datetime.now(UTC)
    new = meta.model_copy(
        update={
            "run_id": f"{now:%Y%m%dT%H%M%SZ}-{slug(meta.config.experiment)[:31]}-regraded-"
            f"{uuid.uuid4().hex[:6]}",
            "created_at": now.isoformat(timespec="seconds"),
            "git_sha": git_sha(),
            "wikiqa_version": version("wikiqa"),
            "config": meta.config.model_copy(update={"kind": "grader", "change": change}),
        }
    )
    header = _portable(new).model_dump(mode="json")
    header["config"].pop("out")
    copy = RunLog.create(out, new, header)
    for key in sorted(scored.records):
        copy.append_trial(log.trials[key])
    if log.cassette is not None:
        copy.bind_cassette(log.cassette.file, log.cassette.sha256)
    copy.append_pass(new.judge, scored.records)
    frame = to_frame(new, tasks, scored.records)
    parquet = write_parquet(frame, out / "runs" / f"{new.run_id}.parquet")
    return RunOutcome(
        meta=new,
        frame=frame,
        summary=summarize(frame),
        parquet=parquet,
        trials_run=0,
        model_calls=0,
        cached_calls=0,
        judge_calls=scored.judge_calls,
    )


def check(run_id: str, out: Path, judge: Callable[[int], Judge] | None = None) -> tuple[int, int]:
    """(verdicts that differ from the run's parquet, verdicts compared), writing nothing."""
    log, tasks, scored = _graded(out, run_id, judge)
    parquet = out / "runs" / f"{run_id}.parquet"
    try:
        before = pd.read_parquet(parquet, columns=["task_id", "trial", "dimension", "verdict"])
    except (OSError, ValueError) as err:
        raise RegradeError(f"{parquet}: cannot read the run's results: {err}") from None
    after = to_frame(log.meta, tasks, scored.records)[["task_id", "trial", "dimension", "verdict"]]
    both = before.merge(after, on=["task_id", "trial", "dimension"], how="outer")
    return int((both["verdict_x"] != both["verdict_y"]).sum()), len(both)


def logged_runs(out: Path) -> list[str]:
    """Every run with a log under `out`, oldest first."""
    return sorted(p.name.removesuffix(".log.jsonl") for p in (out / "runs").glob("*.log.jsonl"))


__all__ = ["RegradeError", "TrialRecord", "check", "logged_runs", "regrade"]
