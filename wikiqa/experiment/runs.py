"""Finding a recorded or exploratory run's parquet, and reading it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wikiqa.evals import results_dir
from wikiqa.inputs import read_parquet

# What every reader of a run relies on (one row per graded dimension of a trial); a parquet
# without them is some other table. Each reader checks the further columns it needs.
RUN_COLUMNS = ("dimension", "verdict")


def load_run(run: str | Path | None = None, out: Path | None = None) -> pd.DataFrame:
    """A run's long table: by parquet path, by run id, or (None) the latest run. Run ids are
    looked up in the results folder, then in its scratch area (exploratory runs); the latest
    run is the newest recorded one, or the newest exploratory one when none is recorded."""
    return read_parquet(find_run(run, out), "run", RUN_COLUMNS)


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
