"""A run's results table as its log vouches for it: written with the grading pass that binds it,
read back only if it still hashes to that binding.

A grading pass ends in `passes.write_pass` (the parquet written, then the pass binding its hash).
`load` is how every reader gets a run's table (`compare`, `outcomes`, a new row's Δ, the notebooks):

- a parquet whose log's last pass binds its hash is read, and carries the log's provenance
  (`sealed`, `committed` or `foreign`) in a `record` column, so a foreign run says so in every
  table it reaches;
- a parquet that does not match (edited, or another run's copied over it) is never believed:
  the table is rebuilt from the log by `score`, in memory, and says so (`rebuilt`); a run graded
  by a judge cannot be rebuilt without one, so it is refused, naming the command that regrades
  it;
- a run whose log was never kept (rows recorded before logs were committed) is read from its
  parquet and marked `no log kept`: shown, never vouched for.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wikiqa.evals.running.passes import file_hash
from wikiqa.evals.running.runlog import RunLog, RunLogError, existing_log
from wikiqa.inputs import InputError
from wikiqa.parquets import read_parquet

NO_LOG = "no log kept"
RECORD_COLUMN = "record"


class UnverifiedRun(RunLogError):
    """A run's table that its log does not vouch for and that cannot be rebuilt here."""


def provenance(out: Path, run_id: str) -> str:
    """What vouches for run `run_id`'s record under `out`: its log's provenance, or `no log
    kept`; a log that does not load says why."""
    if existing_log(out, run_id) is None:
        return NO_LOG
    try:
        return RunLog.load(out, run_id).provenance()
    except RunLogError as err:
        return f"unreadable log ({err})"


def load(parquet: Path, out: Path, log_run: str | None = None) -> pd.DataFrame:
    """The table of the run whose parquet is `parquet` (under `out`/runs), as its log vouches
    for it (see the module docstring). `log_run` names the log when it is another run's (a
    regrade's pass in its original's log); by default the parquet's own name."""
    run_id = log_run or parquet.name.removesuffix(".parquet")
    base = parquet.parent.parent if parquet.parent.name == "runs" else out
    if existing_log(base, run_id) is None:
        frame = read_parquet(parquet, "run")
        return _marked(frame, NO_LOG)
    log = RunLog.load(base, run_id)
    origin = log.provenance()
    binding = next(
        (b for _, b in sorted(log.parquets.items(), reverse=True) if b.file.endswith(parquet.name)),
        None,
    )
    if binding is not None and parquet.exists():
        try:
            if file_hash(parquet) == binding.sha256:
                return _marked(read_parquet(parquet, "run"), origin)
        except (OSError, InputError):
            pass
    return _marked(rebuild(log, parquet), f"{origin}, rebuilt")


def rebuild(log: RunLog, parquet: Path) -> pd.DataFrame:
    """`log`'s table graded again by `score`, in memory: what a parquet that does not match
    its log is replaced by. A judge-graded run needs its judge: refused, naming the command."""
    from wikiqa.evals.running.frame import to_frame
    from wikiqa.evals.running.regrade import RegradeError, graded

    run_id = log.meta.run_id
    if log.meta.judge is not None:
        raise UnverifiedRun(
            f"{parquet}: does not match the parquet {run_id}'s log binds (edited, or missing); "
            f"it was graded by {log.meta.judge}: rebuild it with `wikiqa regrade {run_id} "
            f"--judge {log.meta.judge} --check`"
        )
    try:
        _, tasks, scored = graded(log, None)
    except RegradeError as err:
        raise UnverifiedRun(
            f"{parquet}: does not match the parquet {run_id}'s log binds, and the log cannot "
            f"be graded again here: {err}"
        ) from None
    return to_frame(log.meta, tasks, scored.records)


def _marked(frame: pd.DataFrame, record: str) -> pd.DataFrame:
    frame = frame.copy()
    frame[RECORD_COLUMN] = record
    return frame


def record_of(frame: pd.DataFrame) -> str | None:
    """What vouches for a loaded table (`load`'s mark), or None for a table from elsewhere."""
    if RECORD_COLUMN not in frame.columns or frame.empty:
        return None
    return str(frame[RECORD_COLUMN].iloc[0])


__all__ = [
    "NO_LOG",
    "RECORD_COLUMN",
    "UnverifiedRun",
    "load",
    "provenance",
    "rebuild",
    "record_of",
]
