"""Tables a reader takes in at a glance: the category x dimension table of one run, its
abstention figures, and the climb across runs, styled to fit 1,400 px without a number ever
broken across lines (counts and intervals do not wrap; free text does)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pandas as pd

from wikiqa.evals.analysis import COLUMNS, Summary

# Numbers never wrap mid-figure; prose columns wrap at a readable width.
NOWRAP: Any = [
    {"selector": "td, th", "props": "white-space: nowrap; font-size: 12px; padding: 2px 6px"}
]


def table(summary: Summary) -> Any:
    """Category x dimension, as "passes/applicable [95% interval]" (the headline table)."""
    rows = {}
    for category, cells in summary.cells.items():
        rows[category] = {d: cells[d].text(interval=True) if d in cells else "-" for d in COLUMNS}
        rows[category]["tasks"] = summary.task_cells[category].text(interval=True)
    frame = pd.DataFrame.from_dict(rows, orient="index")
    kind = "Wilson's" if summary.trials <= 1 else f"clustered by task, {summary.trials} trials"
    return frame.style.set_table_styles(NOWRAP).set_caption(
        f"passes/applicable [95% interval: {kind}]; ?n undecided by the offline graders (decide "
        "them with a judge, or at human rates: `wikiqa outcomes`); !n infrastructure errors"
    )


def abstention(summary: Summary) -> pd.DataFrame:
    """SimpleQA's outcomes and what confidence is worth, as one small table; where a figure
    cannot be computed, the table says why."""
    rows: dict[str, object] = {}
    if summary.simpleqa is not None:
        s = summary.simpleqa
        for name, count in [
            ("correct", s.correct),
            ("incorrect", s.incorrect),
            ("not attempted", s.not_attempted),
            ("undecided", s.undecided),
        ]:
            rows[name] = f"{count}/{s.tasks}"
        rows["correct given attempted"] = _or_why(s.correct_given_attempted, "nothing attempted")
        rows["F-score"] = _or_why(s.f_score, "nothing attempted")
    confidence = summary.confidence
    if confidence is None:
        rows["confidence AUROC (correctness)"] = "n/a: no answered trial with decided correctness"
    else:
        auroc = confidence.auroc
        if auroc is None:
            why = "all correct" if confidence.correct == confidence.points else "none correct"
            rows["confidence AUROC (correctness)"] = f"n/a: {why}, so nothing to rank"
        else:
            ci = confidence.auroc_ci
            rows["confidence AUROC (correctness)"] = f"{auroc:.3f}" + (
                f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
            )
        rows["expected calibration error"] = _or_why(confidence.ece, "no points")
        rows["answered trials with decided correctness"] = confidence.points
    return pd.DataFrame.from_dict(rows, orient="index", columns=["value"])


def _or_why(value: float | None, why: str) -> str:
    return f"n/a: {why}" if value is None else f"{value:.3f}"


SMALL: Any = [{"selector": "td, th", "props": "font-size: 12px; padding: 2px 5px"}]


def climb_table(climb: pd.DataFrame) -> Any:
    """The climb as a reader sees it, within 1,400 px: one row per recorded run in order; each
    cell wraps by line, never inside a number (a count over its interval, a step over its kind,
    the Δ over the step it is against); "-" where a dimension did not apply; the change last.
    Under a step, what vouches for its row when it is not its own log: `no log kept` (shown,
    not regradable) or `FOREIGN log` (someone else's, recorded by name)."""
    if not len(climb):
        return climb
    rows = []
    for _, r in climb.iterrows():
        kept = str(r.get("record", "log"))
        note = {"log": "", "foreign log": "\nFOREIGN log"}.get(kept, f"\n{kept}")
        row: dict[Hashable, str] = {
            "step": f"{r['experiment']}\n{r['kind']}{note}",
            "suite": f"{r['suite']}\n×{r['trials']} trial{'s' if r['trials'] != 1 else ''}",
        }
        for column in [*COLUMNS, "tasks"]:
            value = r.get(column)
            row[column] = "-" if not isinstance(value, str) else value.replace(" [", "\n[", 1)
        delta, versus = str(r.get("Δ tasks [95% CI]", "-")), str(r.get("vs", "-"))
        lever = f" [{r['lever']}]" if r.get("lever") else ""
        if delta != "-":
            row["Δ tasks"] = delta.replace(" [", "\n[", 1) + f"\nvs {versus.split('_', 1)[0]}"
            drift = r.get("drift")
            if isinstance(drift, str):
                row["Δ tasks"] += "\ndrift " + drift.replace(", ", "\n", 1)
            unlike = f" (Δ not like with like: {r['unlike']})" if r.get("unlike") else ""
            row["change"] = str(r["change"]) + lever + unlike
        else:
            row["Δ tasks"] = "-"
            why = f" (no Δ: {versus})" if versus != "-" else ""
            row["change"] = str(r["change"]) + lever + why
        rows.append(row)
    shown = pd.DataFrame.from_records(rows)
    figures: list[Hashable] = [c for c in shown.columns if c != "change"]
    text = {"white-space": "normal", "min-width": "12em", "max-width": "20em", "text-align": "left"}
    return (
        shown.style.hide(axis="index")
        .set_table_styles(SMALL)
        .set_properties(subset=figures, **{"white-space": "pre", "text-align": "right"})
        .set_properties(subset=["change"], **text)
    )


def lines_table(lines: Any) -> Any:
    """The climb's lines (`views.lines`), one row each, within 1,400 px: figures never wrap,
    the Δ and the best run wrap as text."""
    if not len(lines):
        return lines
    text = {"white-space": "normal", "min-width": "14em", "max-width": "26em"}
    return (
        lines.style.hide(axis="index")
        .set_table_styles(SMALL)
        .set_properties(
            subset=["line", "newest", "date", "tasks pass-all"], **{"white-space": "nowrap"}
        )
        .set_properties(subset=["Δ [95% CI]", "best on this suite version"], **text)
    )
