"""One hillclimb step from a notebook: run the suite, show the table and plot, record the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from wikiqa.agent import DEFAULT_BUDGET
from wikiqa.evals import RunConfig, RunOutcome, results_dir, run_eval
from wikiqa.evals.changelog import record_run
from wikiqa.evals.report import COLUMNS, Summary


def run_step(
    experiment: str,
    *,
    model: str = "extractive",
    judge: str | None = None,
    source: str = "snapshot",
    suite: str = "dev",
    trials: int = 3,
    concurrency: int = 8,
    limit: int | None = None,
    change: str = "",
    kind: str = "adhoc",
    retrieval: bool = True,
    budget: int = DEFAULT_BUDGET,
    read_first: int = 0,
    out: str | Path | None = None,
) -> RunOutcome:
    """One hillclimb step: run the suite and return the outcome (parquet already written)."""
    config = RunConfig(
        experiment=experiment, model=model, judge=judge, source=source, suite=suite,
        trials=trials, concurrency=concurrency, limit=limit, change=change, kind=kind,
        retrieval=retrieval, budget=budget, read_first=read_first,
        out=Path(out) if out else results_dir(),
    )  # fmt: skip
    return run_eval(config, progress=False)


def table(summary: Summary) -> pd.DataFrame:
    """Category x dimension, as passes/applicable strings (the notebook's headline table)."""
    rows = {}
    for category, cells in summary.cells.items():
        rows[category] = {d: cells[d].text() if d in cells else "-" for d in COLUMNS}
        rows[category]["tasks"] = summary.task_cells[category].text()
    return pd.DataFrame.from_dict(rows, orient="index")


def rates(summary: Summary) -> pd.DataFrame:
    """Category x dimension pass rates (NaN where nothing applied), for plots."""
    return pd.DataFrame.from_dict(
        {
            c: {d: cells[d].rate if d in cells else None for d in COLUMNS}
            for c, cells in summary.cells.items()
        },
        orient="index",
    ).astype(float)


def plot(summary: Summary, title: str = "") -> Any:
    """Pass rate per dimension, one group of bars per category."""
    import matplotlib.pyplot as plt

    frame = rates(summary).drop(index="all", errors="ignore")
    ax = frame.plot.bar(figsize=(10, 4), ylim=(0, 1), rot=0, width=0.8)
    ax.set_ylabel("pass rate (majority vote)")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1, 0.5), fontsize="small")
    plt.tight_layout()
    return ax.figure


def record(outcome: RunOutcome) -> dict[str, Any]:
    """Append the run to the change log (jsonl + markdown) and say where everything is."""
    out = outcome.meta.config.out
    row = record_run(outcome, out)
    print(f"parquet:   {outcome.parquet}")
    print(f"changelog: {out / 'CHANGELOG.md'} (+ changelog.jsonl)")
    return row
