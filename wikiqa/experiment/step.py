"""One hillclimb step from a notebook: run the suite, show the table and plot, record the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from wikiqa.agent import DEFAULT_BUDGET
from wikiqa.evals import RunConfig, RunOutcome, results_dir, run_eval
from wikiqa.evals.analysis.summary import COLUMNS, Summary
from wikiqa.evals.climb.changelog import record_run


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
    spotlight: bool = False,
    out: str | Path | None = None,
) -> RunOutcome:
    """One hillclimb step: run the suite and return the outcome (parquet already written)."""
    config = RunConfig(
        experiment=experiment, model=model, judge=judge, source=source, suite=suite,
        trials=trials, concurrency=concurrency, limit=limit, change=change, kind=kind,
        retrieval=retrieval, budget=budget, read_first=read_first, spotlight=spotlight,
        out=Path(out) if out else results_dir(),
    )  # fmt: skip
    return run_eval(config, progress=False)


def with_lever(model: str, lever: str, value: object) -> str:
    """`model` with one extractive lever set (`extractive:scoring=idf` + hits_read=5 ->
    `extractive:scoring=idf,hits_read=5`), so a step's own lever survives a MODEL that sets
    others. The same lever set both ways is a mistake, said at once; another model is returned
    unchanged (the lever is the extractive answerer's)."""
    kind, _, options = model.partition(":")
    if kind != "extractive":
        print(f"{lever} applies to the extractive answerer only; running {model} unchanged")
        return model
    given = dict(item.split("=", 1) for item in filter(None, options.split(",")) if "=" in item)
    if lever in given and given[lever] != str(value):
        raise ValueError(f"{lever} is set twice: {given[lever]} in MODEL, {value} as the lever")
    given[lever] = str(value)
    return "extractive:" + ",".join(f"{k}={v}" for k, v in given.items())


def table(summary: Summary) -> pd.DataFrame:
    """Category x dimension, as "passes/applicable [95% interval]" (the headline table)."""
    rows = {}
    for category, cells in summary.cells.items():
        rows[category] = {d: cells[d].text(interval=True) if d in cells else "-" for d in COLUMNS}
        rows[category]["tasks"] = summary.task_cells[category].text(interval=True)
    return pd.DataFrame.from_dict(rows, orient="index")


def abstention(summary: Summary) -> pd.DataFrame:
    """SimpleQA's outcomes and what confidence is worth, as one small table."""
    rows: dict[str, object] = {}
    if summary.simpleqa is not None:
        s = summary.simpleqa
        for name, count in [
            ("correct", s.correct),
            ("incorrect", s.incorrect),
            ("not attempted", s.not_attempted),
            ("undecided", s.undecided),
        ]:
            rows[name] = f"{count}/{s.tasks}"  # fmt: skip
        rows["correct given attempted"] = s.correct_given_attempted
        rows["F-score"] = s.f_score
    if summary.confidence is not None:
        rows["confidence AUROC (correctness)"] = summary.confidence.auroc
        rows["expected calibration error"] = summary.confidence.ece
        rows["answered trials with decided correctness"] = summary.confidence.points
    return pd.DataFrame.from_dict(rows, orient="index", columns=["value"])


def plot_risk_coverage(summary: Summary, title: str = "") -> Any:
    """Risk (error among answered) against coverage, answering the most confident first; a
    confidence worth having makes the curve fall to the left."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    curve = summary.confidence.curve if summary.confidence else []
    if curve:
        ax.plot([p.coverage for p in curve], [p.risk for p in curve], marker="o")
    else:
        ax.text(0.5, 0.5, "no answered trial with decided correctness", ha="center")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1)
    ax.set_xlabel("coverage (share answered, most confident first)")
    ax.set_ylabel("risk (share incorrect)")
    ax.set_title(title or "Risk-coverage")
    plt.tight_layout()
    return fig


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
    # error bars: distance from the rate to each end of its 95% interval (NaN where none)
    errors = []
    for d in frame.columns:
        below, above = [], []
        for category in frame.index:
            cell = summary.cells[str(category)].get(str(d))
            if cell is None or cell.rate is None or cell.low is None or cell.high is None:
                below.append(float("nan"))
                above.append(float("nan"))
            else:
                below.append(cell.rate - cell.low)
                above.append(cell.high - cell.rate)
        errors.append([below, above])
    ax = frame.plot.bar(figsize=(10, 4), ylim=(0, 1), rot=25, width=0.8, yerr=errors, capsize=2)
    plt.setp(ax.get_xticklabels(), ha="right")  # category names no longer overlap
    # a dimension that does not apply is no bar at all, which would read as 0: say "n/a"
    width = 0.8 / len(frame.columns)
    for i in range(len(frame.index)):
        for j, d in enumerate(frame.columns):
            if frame[d].isna().iloc[i]:
                x = i - 0.4 + width * (j + 0.5)
                ax.text(x, 0.01, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
    ax.set_ylabel("pass rate (majority vote), 95% interval")
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
