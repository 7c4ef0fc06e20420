"""Finding a recorded or exploratory run's parquet, and reading it as its run log vouches for it
(`wikiqa.evals.running.results.load`: a parquet that does not match its log is rebuilt from the
log, never believed; each table carries a `record` column saying what vouches for it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wikiqa.evals import results_dir
from wikiqa.evals.climb.changelog import ChangelogError, read
from wikiqa.evals.running.results import load, record_of
from wikiqa.evals.running.runlog import RunLogError
from wikiqa.inputs import InputError

# What every reader of a run relies on (one row per graded dimension of a trial); a parquet
# without them is some other table. Each reader checks the further columns it needs.
RUN_COLUMNS = ("dimension", "verdict")


def load_run(run: str | Path | None = None, out: Path | None = None) -> pd.DataFrame:
    """A run's long table: by parquet path, by run id, or (None) the latest run. Run ids are
    looked up in the results folder, then in its scratch area (exploratory runs); the latest
    run is the newest recorded one, or the newest exploratory one when none is recorded. An
    unverifiable table is an InputError naming why."""
    path = find_run(run, out)
    base = out or results_dir()
    try:
        frame = load(path, base, log_run_of(path, base))
    except RunLogError as err:
        raise InputError(str(err)) from None
    missing = [c for c in RUN_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: not a run: no {', '.join(missing)} column")
    return frame


def log_run_of(parquet: Path, out: Path) -> str | None:
    """The run whose log holds `parquet`'s grading pass, when its change-log row names one
    other than its own (a regrade's pass lives in its original run's log)."""
    run_id = parquet.name.removesuffix(".parquet")
    try:
        rows = read(out)
    except (ChangelogError, InputError):
        return None
    return next((r.log_run for r in rows if r.run_id == run_id and r.log_run), None)


def find_run(run: str | Path | None = None, out: Path | None = None) -> Path:
    """The parquet of a run (see `load_run`), or FileNotFoundError naming where it looked."""
    base = out or results_dir()
    folders = [base / "runs", base / "scratch" / "runs"]
    if run is None:
        for folder in folders:
            paths = sorted(folder.glob("*.parquet"))
            if paths:
                return paths[-1]
        raise FileNotFoundError(f"no runs under {folders[0]} or {folders[1]}; run a step first")
    path = Path(run)
    if path.suffix:
        if not path.is_absolute() and not path.exists():
            path = base / path  # a change-log path, relative to the results folder
        if not path.exists():
            raise FileNotFoundError(f"no such run: {path}")
        return path
    for folder in folders:
        if (folder / f"{run}.parquet").exists():
            return folder / f"{run}.parquet"
    raise FileNotFoundError(f"no run {run!r} under {folders[0]} or {folders[1]}")


RECORD_NOTES = {
    "sealed": "its log sealed here",
    "committed": "its log committed",
    "foreign": "FOREIGN: its log was not sealed here and is not the repository's",
    "no log kept": "no log kept: its parquet is shown unchecked",
}


def record_note(frame: pd.DataFrame) -> str:
    """What vouches for a loaded run's table, in words (`results.load`'s `record` column)."""
    kept = record_of(frame)
    if kept is None:
        return "unknown"
    origin, _, rebuilt = kept.partition(", ")
    note = RECORD_NOTES.get(origin, origin)
    return note + ("; its parquet did not match its log, rebuilt from the log" if rebuilt else "")


def recorded_trace(
    frame: pd.DataFrame, task_id: str, out: Path | None = None
) -> tuple[str, list[str]] | None:
    """A task's trace in a run as the run's log recorded it, without a model call: its first
    failing trial (else its first trial), every search, fetch, model call and decision, then
    what it returned. (where it came from, its lines), or None when the run kept no log or
    the log holds no such trial (a regrade's trials are its original run's)."""
    from wikiqa.evals.running.runlog import find_log

    base = out or results_dir()
    run_id = str(frame["run_id"].iloc[0])
    try:
        log_run = log_run_of(find_run(run_id, out), base) or run_id
        log = find_log(log_run, base)
    except (RunLogError, FileNotFoundError, InputError, OSError):
        return None
    rows = frame[frame["task_id"] == task_id]
    failing = sorted(set(rows[rows["verdict"] == "fail"]["trial"])) or sorted(set(rows["trial"]))
    record = next((log.trials[(task_id, int(t))] for t in failing if (task_id, int(t)) in log.trials),
                  None)  # fmt: skip
    if record is None:
        return None
    output = record.result.output
    said = (f"answer: {output.text}" if hasattr(output, "text")
            else f"refusal ({getattr(output, 'reason_code', '?')}): {output.reason}")  # fmt: skip
    where = f"trial {record.trial} as run {log_run}'s log recorded it ({log.provenance()})"
    return where, [*(event.line() for event in record.result.trace), said]
