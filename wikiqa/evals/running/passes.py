"""How a grading pass ends, for a run, a resume and a regrade alike: the table of the graded
trials written as parquet, then the pass appended to the run log binding that file's hash, so a
reader can tell the parquet the log vouches for from any other (`results.load`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from wikiqa.evals.running.frame import to_frame, write_parquet
from wikiqa.evals.running.records import RunMeta
from wikiqa.evals.running.runlog import ParquetBinding, RunLog
from wikiqa.evals.running.scoring import Scored
from wikiqa.evals.tasks.task import Task
from wikiqa.inputs import MAX_PARQUET_BYTES, read_bounded


def file_hash(path: Path) -> str:
    """A parquet's sha256, read bounded (never through a link)."""
    return hashlib.sha256(read_bounded(path, MAX_PARQUET_BYTES, "run")).hexdigest()


def write_pass(
    log: RunLog, meta: RunMeta, tasks: list[Task], scored: Scored
) -> tuple[pd.DataFrame, Path]:
    """End a grading pass: the table of `scored` written as `runs/RUN_ID.parquet` (`meta`'s run
    id: a regrade's own), then the pass appended to `log` binding that file's hash."""
    frame = to_frame(meta, tasks, scored.records)
    parquet = write_parquet(frame, meta.config.out / "runs" / f"{meta.run_id}.parquet")
    binding = ParquetBinding(file=f"runs/{parquet.name}", sha256=file_hash(parquet))
    log.append_pass(meta.judge, scored.records, binding)
    return frame, parquet


__all__ = ["file_hash", "write_pass"]
