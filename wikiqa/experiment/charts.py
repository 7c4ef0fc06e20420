"""Charts a reader can take in at a glance: one run's pass rates per category and dimension, its
risk-coverage curve, and the climb across recorded runs. Every rate carries its 95% interval;
every axis says what it measures; series never join runs of different suites or trial counts.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from wikiqa.evals.analysis import COLUMNS, Summary
from wikiqa.evals.analysis.stats import wilson


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
    """Pass rate per dimension, one group of bars per category, with 95% intervals; a cell
    where the dimension does not apply is a hatched stub marked n/a, never a bar of height 0."""
    import matplotlib.pyplot as plt

    frame = rates(summary).drop(index="all", errors="ignore")
    fig, ax = plt.subplots(figsize=(12, 4.2))
    width = 0.8 / max(1, len(frame.columns))
    for j, d in enumerate(frame.columns):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(frame.index))]
        heights, low, high = [], [], []
        for category in frame.index:
            cell = summary.cells[str(category)].get(str(d))
            rate = cell.rate if cell is not None else None
            known = cell is not None and rate is not None
            bounds = (cell.low, cell.high) if cell is not None else (None, None)
            if not known or bounds[0] is None or bounds[1] is None or rate is None:
                heights += [0.0]
                low += [0.0]
                high += [0.0]
            else:
                heights += [rate]
                low += [rate - bounds[0]]
                high += [bounds[1] - rate]
        ax.bar(xs, heights, width, label=str(d), yerr=[low, high], capsize=2)
        for x, category in zip(xs, frame.index, strict=True):
            if frame[d].isna()[category]:
                ax.bar(x, 0.06, width, color="none", edgecolor="0.6", hatch="///", lw=0.5)
                ax.text(x, 0.07, "n/a", ha="center", va="bottom", fontsize=8, color="0.35",
                        rotation=90)  # fmt: skip
    ax.set_xticks(range(len(frame.index)), [str(c) for c in frame.index])
    ax.set_ylim(0, 1.12)  # room above 1.0 for the whiskers
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xlabel("category")
    ax.set_ylabel("pass rate (majority vote), 95% interval")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1, 0.5), fontsize="small")
    fig.tight_layout()
    return fig


def plot_risk_coverage(summary: Summary, title: str = "") -> Any:
    """Risk (error among answered) against coverage, answering the most confident first, with
    each point's 95% interval; a confidence worth having makes the curve fall to the left."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    report = summary.confidence
    curve = report.curve if report else []
    if curve:
        bands = [wilson(round(p.risk * p.answered), p.answered) or (p.risk, p.risk) for p in curve]
        risks = [p.risk for p in curve]
        below = [max(0.0, r - b[0]) for r, b in zip(risks, bands, strict=True)]
        above = [max(0.0, b[1] - r) for r, b in zip(risks, bands, strict=True)]
        ax.errorbar([p.coverage for p in curve], risks, yerr=[below, above], marker="o",
                    capsize=3, label="risk, 95% interval")  # fmt: skip
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no answered trial with decided correctness", ha="center")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1)
    ax.set_xlabel("coverage (share answered, most confident first)")
    ax.set_ylabel("risk (share incorrect)")
    auroc = "n/a" if report is None or report.auroc is None else f"{report.auroc:.2f}"
    points = report.points if report else 0
    ax.set_title(f"{title or 'Risk-coverage'}\n{points} answered trials, AUROC {auroc}",
                 fontsize=10)  # fmt: skip
    fig.tight_layout()
    return fig


def plot_climb(climb: pd.DataFrame) -> Any:
    """Tasks passing every dimension, one point per recorded run in the order recorded, with
    its 95% interval: one series per suite version (its hash) and trial count, so a line never
    joins runs that are not comparable (dev before and after a task was added); a suite with
    more than one version names each by its hash. The x axis is labelled by each run's step."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 4.2))
    if not len(climb) or "tasks_rate" not in climb:
        ax.text(0.5, 0.5, "no recorded runs yet", ha="center")
        return fig
    keys = ["suite", "suite_hash", "trials"] if "suite_hash" in climb else ["suite", "trials"]
    counted = climb.groupby("suite")["suite_hash"].nunique() if "suite_hash" in climb else None
    versions = {str(k): int(v) for k, v in counted.items()} if counted is not None else {}
    for key, group in climb.groupby(keys, sort=False):
        suite, trials = str(key[0]), key[-1]
        if versions.get(suite, 1) > 1:
            suite = f"{suite} {str(key[1])[:6]}"
        group = group[group["tasks_rate"].notna()]
        below = (group["tasks_rate"] - group["tasks_low"]).clip(lower=0)
        above = (group["tasks_high"] - group["tasks_rate"]).clip(lower=0)
        ax.errorbar(group["row"], group["tasks_rate"], yerr=[below, above], marker="o",
                    capsize=3, label=f"{suite} · {trials} trial{'s' if trials != 1 else ''}")  # fmt: skip
    steps = [str(e).split("_", 1)[0] for e in climb["experiment"]]
    ax.set_xticks(list(climb["row"]), steps, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_xlabel("recorded run, in order (labelled by its step number)")
    ax.set_ylabel("tasks passing every dimension, 95% interval")
    ax.set_title("The climb: one series per suite version and trial count")
    ax.legend(loc="center left", bbox_to_anchor=(1, 0.5), fontsize="small")
    fig.tight_layout()
    return fig
