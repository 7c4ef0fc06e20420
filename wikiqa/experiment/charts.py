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
    """Risk (error among answered) against coverage, answering the most confident first: the
    curve with its 95% interval as a band; a confidence worth having makes it fall to the left.
    Where no answered trial was decided incorrect the curve is flat at zero, and the plot says
    so rather than drawing bars that start at zero: the band is then how high risk could be."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    report = summary.confidence
    curve = report.curve if report else []
    top = 1.0
    if curve:
        cover = [p.coverage for p in curve]
        risks = [p.risk for p in curve]
        bands = [wilson(round(p.risk * p.answered), p.answered) or (p.risk, p.risk) for p in curve]
        ax.fill_between(cover, [b[0] for b in bands], [b[1] for b in bands], color="C0",
                        alpha=0.2, lw=0, label="95% interval")  # fmt: skip
        ax.plot(cover, risks, marker="o", ms=4, color="C0", label="risk")
        top = min(1.0, max(b[1] for b in bands) * 1.15 + 0.05)
        if not any(risks):
            ax.text(0.5, 0.55, "no answered trial was decided incorrect:\nrisk is 0 at every "
                    "coverage, nothing to rank", ha="center", transform=ax.transAxes,
                    fontsize=9, color="0.3")  # fmt: skip
        ax.legend(fontsize="small", loc="upper left")
    else:
        ax.text(0.5, 0.5, "no answered trial with decided correctness", ha="center")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, top)
    ax.grid(color="0.92")
    ax.set_xlabel("coverage (share answered, most confident first)")
    ax.set_ylabel("risk (share incorrect)")
    auroc = "n/a" if report is None or report.auroc is None else f"{report.auroc:.2f}"
    points = report.points if report else 0
    ax.set_title(f"{title or 'Risk-coverage'}\n{points} answered trials with decided "
                 f"correctness, AUROC {auroc}", fontsize=10)  # fmt: skip
    fig.tight_layout()
    return fig


def plot_climb(climb: pd.DataFrame) -> Any:
    """Tasks passing every dimension, with 95% intervals: one panel per suite (the suites with
    the most runs first), one series per line (a model on that suite) in a colour of its own,
    named by the model (without where it was served) and its trial count, points in the order
    recorded and labelled by step number. A series never joins two versions of a suite (a task
    added, a key point fixed): each version is its own segment, the older ones faded. Hollow
    points are regraded runs (`kind = grader`)."""
    import matplotlib.pyplot as plt

    if not len(climb) or "tasks_rate" not in climb:
        fig, ax = plt.subplots(figsize=(12, 2))
        ax.text(0.5, 0.5, "no recorded runs yet", ha="center")
        ax.set_axis_off()
        return fig
    suites = list(climb["suite"].value_counts().index)
    models = list(dict.fromkeys(climb["model"]))
    palette = [plt.get_cmap(name)(i) for name, n in (("tab10", 10), ("Dark2", 8)) for i in range(n)]
    colour = {m: palette[i % len(palette)] for i, m in enumerate(models)}
    fig, axes = plt.subplots(len(suites), 1, figsize=(12, 2.6 * len(suites) + 0.6), squeeze=False)
    for ax, suite in zip(axes[:, 0], suites, strict=True):
        runs = climb[climb["suite"] == suite].reset_index(drop=True)
        runs["x"] = range(len(runs))
        versions = list(dict.fromkeys(runs["suite_hash"]))
        named: set[str] = set()
        for (model, trials, version), group in runs.groupby(
            ["model", "trials", "suite_hash"], sort=False
        ):
            group = group[group["tasks_rate"].notna()]
            current = version == versions[-1]
            label = f"{model} · {trials} trial{'s' if trials != 1 else ''}"
            shown = label not in named  # one legend entry per model and trial count
            named.add(label)
            below = (group["tasks_rate"] - group["tasks_low"]).clip(lower=0)
            above = (group["tasks_high"] - group["tasks_rate"]).clip(lower=0)
            ax.errorbar(group["x"], group["tasks_rate"], yerr=[below, above], color=colour[model],
                        alpha=1.0 if current else 0.45, marker="o", ms=5, capsize=2, lw=1.2,
                        label=label if shown else "_" + label)  # fmt: skip
            regraded = group[group["kind"] == "grader"]
            ax.scatter(regraded["x"], regraded["tasks_rate"], s=30, color="white", zorder=3,
                       edgecolors=colour[model])  # fmt: skip
        ax.set_xticks(list(runs["x"]), [str(e).split("_", 1)[0] for e in runs["experiment"]],
                      fontsize=8)  # fmt: skip
        ax.set_xlim(-0.6, max(len(runs), 6) - 0.4)
        ax.set_ylim(0, 1)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.grid(axis="y", color="0.9")
        older = f"; faded: {len(versions) - 1} older versions of it" if len(versions) > 1 else ""
        ax.set_title(f"suite {suite}: {len(runs)} recorded runs{older}", fontsize=10, loc="left")
        ax.set_ylabel("tasks passing\nevery dimension", fontsize=9)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    axes[-1, 0].set_xlabel(
        "step of each recorded run, in the order recorded (hollow: regraded; bars: 95% interval)"
    )
    fig.tight_layout()
    return fig
