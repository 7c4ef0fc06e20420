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
    """Which change helped: one panel per suite (the suite of the newest row first), its x
    axis the steps recorded on it, each once and in step order, labelled by the step's name;
    each point the step's Δ of tasks passing every dimension against its own base (its
    `VS`), with its 95% interval (`views.steps` picks the row that stands for a step).
    A significant Δ is a star with its value beside it, and only a like-with-like Δ can be one:
    a Δ against a run of another model, source or judge is a hollow grey diamond (it measures
    that difference too). A step with no Δ is a grey cross on 0, saying so. Above each step,
    its tasks passing every dimension; faded: a step measured on an older version of the
    suite. `fig.tips` holds, per point (its artist's gid), the step's change and its Δ in
    words: `climb_svg` makes them the points' tooltips."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from wikiqa.experiment.views import steps

    points = steps(climb) if len(climb) and "delta" in climb else climb.iloc[0:0]
    if not len(points):
        fig, ax = plt.subplots(figsize=(12, 2))
        ax.text(0.5, 0.5, "no recorded runs yet", ha="center")
        ax.set_axis_off()
        fig.tips = {}  # type: ignore[attr-defined]
        return fig
    newest = points.groupby("suite")["row"].max().sort_values(ascending=False)
    suites = list(newest.index)
    models = list(dict.fromkeys(climb["model"]))
    palette = [plt.get_cmap(name)(i) for name, n in (("tab10", 10), ("Dark2", 8)) for i in range(n)]
    colour = {m: palette[i % len(palette)] for i, m in enumerate(models)}
    fig, axes = plt.subplots(len(suites), 1, figsize=(12, 3.7 * len(suites)), squeeze=False)
    tips: dict[str, str] = {}
    for ax, suite in zip(axes[:, 0], suites, strict=True):
        runs = points[points["suite"] == suite].reset_index(drop=True)
        current = climb[climb["suite"] == suite]["suite_hash"].iloc[-1]
        ax.axhline(0, color="0.5", lw=0.8, zorder=1)
        for x, r in runs.iterrows():
            gid = f"step-{suite}-{r['experiment']}"
            alpha = 1.0 if r["suite_hash"] == current else 0.45
            tips[gid] = _tip(r)
            ax.text(x, 1.0, str(r.get("tasks", "-")).split(" [", 1)[0], ha="center",
                    va="bottom", fontsize=7, color="0.35", transform=ax.get_xaxis_transform())  # fmt: skip
            if pd.isna(r["delta"]):
                ax.plot([x], [0], marker="x", ms=7, color="0.55", alpha=alpha, gid=gid)
                ax.annotate("no Δ", (x, 0), xytext=(0, -11), textcoords="offset points",
                            ha="center", fontsize=7, color="0.45")  # fmt: skip
                continue
            below = max(0.0, r["delta"] - r["delta_low"])
            above = max(0.0, r["delta_high"] - r["delta"])
            tone = colour[r["model"]] if r["like"] else "0.55"
            style = {"marker": "D", "ms": 6, "mfc": "white", "mec": "0.45"}
            if r["like"]:
                style = {"marker": "o", "ms": 6, "mfc": tone, "mec": tone}
            if r["significant"]:
                style = {"marker": "*", "ms": 17, "mfc": tone, "mec": "black", "mew": 0.8}
            bars = ax.errorbar([x], [r["delta"]], yerr=[[below], [above]], color=tone,
                               alpha=alpha, capsize=3, lw=1.3, zorder=3, **style)  # fmt: skip
            bars.lines[0].set_gid(gid)
            if r["significant"]:
                ax.annotate(f"{r['delta']:+.3f}\n{_p(r['delta_p'])}", (x, r["delta_high"]),
                            xytext=(0, 3), textcoords="offset points", ha="center",
                            va="bottom", fontsize=7.5, fontweight="bold")  # fmt: skip
        ax.set_xticks(range(len(runs)), [str(e).replace("_", " ") for e in runs["experiment"]],
                      rotation=28, ha="right", rotation_mode="anchor", fontsize=8)  # fmt: skip
        ax.set_xlim(-0.6, max(len(runs), 4) - 0.4)
        low = min([0.0, *runs["delta_low"].dropna()])
        high = max([0.0, *runs["delta_high"].dropna()])
        pad = max(0.03, (high - low) * 0.22)
        ax.set_ylim(low - pad, high + pad * 1.6)
        ax.grid(axis="y", color="0.92")
        faded = (runs["suite_hash"] != current).sum()
        older = f"; faded: {faded} measured on an older version of it" if faded else ""
        ax.set_title(f"suite {suite}: {len(runs)} steps{older} (above each: tasks passing every "
                     "dimension)", fontsize=10, loc="left", pad=14)  # fmt: skip
        ax.set_ylabel("Δ tasks passing every\ndimension vs its VS", fontsize=9)
        shown = list(dict.fromkeys(runs["model"]))
        handles = [Line2D([], [], color=colour[m], marker="o", lw=0, label=model_label(m, runs))
                   for m in shown]  # fmt: skip
        handles += [
            Line2D([], [], color="0.3", marker="*", ms=12, lw=0, label="significant (like with like)"),
            Line2D([], [], color="0.45", marker="D", mfc="white", lw=0,
                   label="not like with like:\nanother model, source\nor judge (never starred)"),
            Line2D([], [], color="0.55", marker="x", lw=0, label="no Δ (no base row)"),
        ]  # fmt: skip
        ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5),
                  fontsize="small", frameon=False)  # fmt: skip
    fig.supxlabel("step (each once, in step order); bars: 95% interval of the paired Δ",
                  fontsize=9)  # fmt: skip
    fig.tight_layout()
    fig.tips = tips  # type: ignore[attr-defined]
    return fig


def _p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def model_label(model: str, climb: pd.DataFrame) -> str:
    """A model as the legend names it: cut to 28 characters, with its trial counts in
    `climb` (the panel's points)."""
    trials = sorted(set(climb[climb["model"] == model]["trials"]))
    name = model if len(model) <= 28 else model[:27] + "…"
    return f"{name} · {'/'.join(map(str, trials))} trial{'s' if trials != [1] else ''}"


def _tip(r: Any) -> str:
    """A chart point's tooltip: the step, its change, its Δ and against what."""
    if pd.isna(r["delta"]):
        said = f"no Δ: {r['vs']}"
    else:
        said = f"Δ {r['Δ tasks [95% CI]']} vs {r['vs']}, McNemar p {r['delta_p']:.3f}"
        said += "" if r["like"] else f" (not like with like: {r['unlike']})"
    return f"{r['experiment']} ({r['suite']}, {r['kind']}): {r['change']}\n{said}"


def climb_svg(fig: Any) -> str:
    """The climb chart as SVG, each point carrying its step's change and Δ as a tooltip (an
    SVG `<title>`: shown on hover in a browser and in a rendered notebook)."""
    import io
    import xml.etree.ElementTree as ET

    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    with plt.rc_context({"svg.fonttype": "none"}):  # text as text: a tenth of the size
        fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    ns = "http://www.w3.org/2000/svg"
    ET.register_namespace("", ns)
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    tree = ET.fromstring(buffer.getvalue())
    tips = getattr(fig, "tips", {})
    for group in tree.iter(f"{{{ns}}}g"):
        tip = tips.get(group.get("id", ""))
        if tip is not None:
            title = ET.Element(f"{{{ns}}}title")
            title.text = tip
            group.insert(0, title)
    return ET.tostring(tree, encoding="unicode")


class ClimbChart:
    """The climb chart for a notebook: its SVG (`climb_svg`) inline in HTML, so that hovering a
    point shows its tooltip (an SVG shown as an image, as notebooks show `image/svg+xml`,
    shows none)."""

    def __init__(self, climb: pd.DataFrame) -> None:
        self.figure = plot_climb(climb)
        self.svg = climb_svg(self.figure)

    def _repr_mimebundle_(self, **_: Any) -> dict[str, str]:
        html = f'<div style="max-width: 100%; overflow-x: auto">{self.svg}</div>'
        return {"text/html": html, "text/plain": "<the climb chart: one panel per suite>"}
