"""Regrade a journaled run with today's graders, without calling its model again.

A grader fix changes verdicts, not answers, and the answers of a model run are hours of
compute (a local model takes tens of seconds a trial). Every journaled trial holds
the agent's whole result, so the same answers can be graded again: the regraded run is a new
run (its own id, journal and parquet) whose trials are the original's results with fresh grades,
its kind `grader`, its cassette the original's (the same source replies). Recorded, its change-log
row is paired with the original's, so the Δ is the graders' alone.

Only complete runs regrade (a trial missing or lost to infrastructure would be a hole the new
graders never saw); a run graded by a judge does not, since regrading it would call the judge.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from pydantic import ValidationError

from wikiqa.evals.analysis.summary import summarize
from wikiqa.evals.paths import ROOT, git_sha
from wikiqa.evals.running.frame import to_frame, write_parquet
from wikiqa.evals.running.journal import Journal, journal_dir
from wikiqa.evals.running.records import RunMeta
from wikiqa.evals.running.runner import RunOutcome, graded_again, slug
from wikiqa.evals.tasks.task import bytes_hash, parse_tasks, read_suite
from wikiqa.inputs import MiB, first_problem, read_text
from wikiqa.secrets import scrub


class RegradeError(ValueError):
    """The run cannot be regraded as it is (missing, incomplete, judged, its suite changed)."""


def regrade(run_id: str, out: Path, change: str) -> RunOutcome:
    """A new run: `run_id`'s journaled results graded by the graders of this checkout."""
    folder = journal_dir(out, run_id)
    if not (folder / "meta.json").exists():  # a FIFO or a device is refused as such below
        raise RegradeError(f"{run_id}: no journal in {folder} (only journaled runs regrade)")
    try:
        meta = RunMeta.model_validate_json(read_text(folder / "meta.json", MiB, "run metadata"))
    except ValidationError as err:
        problem = first_problem(err)
        raise RegradeError(f"{folder / 'meta.json'}: not a run's metadata: {problem}") from None
    if meta.judge is not None:
        raise RegradeError(f"{run_id} was graded with judge {meta.judge}: regrading would call it")
    suite_path = Path(meta.suite_path)  # a committed journal names it from the repository
    suite_path = suite_path if suite_path.is_absolute() else ROOT / suite_path
    raw = read_suite(suite_path)
    if bytes_hash(raw) != meta.suite_hash:
        raise RegradeError(f"{run_id} used suite {meta.suite_hash}; {suite_path} is now another")
    tasks = parse_tasks(raw, suite_path)[: meta.config.limit]
    records = Journal(folder / "journal.jsonl").read()
    wanted = [(t.id, trial) for t in tasks for trial in range(meta.config.trials)]
    missing = [key for key in wanted if key not in records or records[key].failed]
    if missing:
        raise RegradeError(
            f"{run_id}: {len(missing)} of {len(wanted)} trials are missing or lost to "
            f"infrastructure (first {missing[0][0]} trial {missing[0][1]}); finish the run "
            "(resume it) before regrading"
        )
    by_id = {t.id: t for t in tasks}
    regraded = {key: graded_again(by_id[key[0]], records[key]) for key in wanted}
    now = datetime.now(UTC)
    experiment = meta.config.experiment
    new = meta.model_copy(
        update={
            "run_id": f"{now:%Y%m%dT%H%M%SZ}-{slug(experiment)[:31]}-regraded-{uuid.uuid4().hex[:6]}",
            "created_at": now.isoformat(timespec="seconds"),
            "git_sha": git_sha(),
            "wikiqa_version": version("wikiqa"),
            "config": meta.config.model_copy(
                update={"kind": "grader", "change": change, "out": out}
            ),
        }
    )
    target = journal_dir(out, new.run_id)
    target.mkdir(parents=True, exist_ok=True)
    (target / "meta.json").write_text(scrub(_as_committed(new, meta).model_dump_json(indent=2)))
    journal = Journal(target / "journal.jsonl")
    for key in wanted:
        journal.append(regraded[key])
    frame = to_frame(new, tasks, regraded)
    parquet = write_parquet(frame, out / "runs" / f"{new.run_id}.parquet")
    return RunOutcome(
        meta=new,
        frame=frame,
        summary=summarize(frame),
        parquet=parquet,
        trials_run=0,
        model_calls=0,
        cached_calls=0,
        judge_calls=0,
    )


def _as_committed(new: RunMeta, old: RunMeta) -> RunMeta:
    """The meta.json as written: the results folder as the original's journal named it (relative
    to the repository when it was), so no machine's path is committed."""
    return new.model_copy(update={"config": new.config.model_copy(update={"out": old.config.out})})
