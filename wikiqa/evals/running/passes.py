"""How a run ends, for a run, a resume and a regrade alike (`finish`): the table of the graded
trials written as parquet, then the grading pass appended to the run log binding that file's
hash, so a reader can tell the parquet the log vouches for from any other (`results.load`),
then the outcome: the metadata, the table, its summary and what the run cost."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from wikiqa.evals.analysis.summary import Summary, summarize
from wikiqa.evals.running.frame import to_frame, write_parquet
from wikiqa.evals.running.records import RunMeta
from wikiqa.evals.running.runlog import ParquetBinding, RunLog
from wikiqa.evals.running.scoring import Scored
from wikiqa.evals.tasks.task import Task
from wikiqa.inputs import read_bounded
from wikiqa.parquets import MAX_PARQUET_BYTES


def file_hash(path: Path) -> str:
    """A parquet's sha256, read bounded (never through a link)."""
    return hashlib.sha256(read_bounded(path, MAX_PARQUET_BYTES, "run")).hexdigest()


class RunOutcome(BaseModel):
    """A finished run: its metadata, its results table (in memory, and written as parquet) and
    its summary, with what it cost."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    meta: RunMeta
    frame: pd.DataFrame = Field(exclude=True, repr=False)
    summary: Summary
    parquet: Path
    trials_run: int = Field(description="Trials executed now (not taken from the run log).")
    model_calls: int = Field(description="Model calls that reached the model (cache misses).")
    cached_calls: int
    judge_calls: int
    first_error: str | None = Field(None, description="The first infrastructure error's cause.")
    provenance: str = Field(
        "sealed", description="Who made the run's log: sealed (here), committed or foreign."
    )
    log_run: str | None = Field(
        None, description="The run whose log holds this grading pass, when not this run's own."
    )

    @property
    def all_failed(self) -> bool:
        """Every trial ended in an infrastructure error (Wikipedia or the model down)."""
        return (
            self.summary.errors > 0
            and self.summary.errors >= self.meta.tasks * self.meta.config.trials
        )


def finish(
    log: RunLog,
    meta: RunMeta,
    tasks: list[Task],
    scored: Scored,
    *,
    trials_run: int = 0,
    model_calls: int = 0,
    cached_calls: int = 0,
    judge_calls: int = 0,
    log_run: str | None = None,
) -> RunOutcome:
    """End a run (or a regrade): the table of `scored` written as `runs/RUN_ID.parquet`
    (`meta`'s run id: a regrade's own), the pass appended to `log` binding that file's hash,
    and the outcome derived from the same table. The calls counted are the run's own
    (`judge_calls`: those judged while the trials ran) and the grading's."""
    frame = to_frame(meta, tasks, scored.records)
    parquet = write_parquet(frame, meta.config.out / "runs" / f"{meta.run_id}.parquet")
    binding = ParquetBinding(file=f"runs/{parquet.name}", sha256=file_hash(parquet))
    log.append_pass(meta.judge, scored.records, binding)
    failed = [r for _, r in sorted(scored.records.items()) if r.failed]
    return RunOutcome(
        meta=meta,
        frame=frame,
        summary=summarize(frame),
        parquet=parquet,
        trials_run=trials_run,
        model_calls=model_calls,
        cached_calls=cached_calls,
        judge_calls=judge_calls + scored.judge_calls,
        first_error=f"{failed[0].task_id}: {failed[0].cause}" if failed else None,
        provenance=log.provenance(),
        log_run=log_run,
    )


__all__ = ["RunOutcome", "file_hash", "finish"]
