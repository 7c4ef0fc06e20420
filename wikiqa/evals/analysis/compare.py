"""Two runs of one suite, compared the way a reader can trust: paired, per task, with error bars.

For each dimension (and for tasks passing everything) the per-task score is the task's share of
passing trials among its decided ones (0 or 1 with one trial); only tasks both runs decided are
compared. The difference B - A comes with its 95% interval (CLT on the paired per-task
differences) and McNemar's exact p on the tasks that flipped. Runs of different suites are not
compared unless asked: a different suite is a different instrument.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import BaseModel

from wikiqa.evals.analysis.reduce import COLUMNS, records_of, trial_records
from wikiqa.evals.analysis.stats import Paired, paired
from wikiqa.sources.cassette_drift import Drift


class DifferentSuites(ValueError):
    """The two runs graded different suites (or different versions of one)."""


class Comparison(BaseModel):
    a: str
    b: str
    suite: str
    suite_hash: str
    rows: dict[str, dict[str, Any]]
    # What changed in the text and searches the two runs saw (their cassettes); None when a
    # run has no cassette (recorded before cassettes), with `drift_unknown` saying why.
    drift: Drift | None = None
    drift_unknown: str | None = None


def _scores(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """dimension -> task -> share of passing trials among the decided ones."""
    records = records_of(frame)
    votes: dict[str, dict[str, list[bool]]] = {}
    for r in records:
        if r["verdict"] in ("pass", "fail"):
            votes.setdefault(r["dimension"], {}).setdefault(r["task_id"], []).append(
                r["verdict"] == "pass"
            )
    for t in trial_records(records):
        if t["task"] != "error":
            votes.setdefault("tasks", {}).setdefault(t["task_id"], []).append(t["task"] == "pass")
    return {d: {k: sum(v) / len(v) for k, v in tasks.items()} for d, tasks in votes.items()}


def _meta(frame: pd.DataFrame, column: str) -> str:
    values = frame[column].dropna().unique()
    return str(values[0]) if len(values) else ""


def compare(a: pd.DataFrame, b: pd.DataFrame, allow_different_suites: bool = False) -> Comparison:
    suites = {(_meta(f, "suite"), _meta(f, "suite_hash")) for f in (a, b)}
    if len(suites) > 1 and not allow_different_suites:
        (sa, ha), (sb, hb) = (_meta(a, "suite"), _meta(a, "suite_hash")), (
            _meta(b, "suite"), _meta(b, "suite_hash"),
        )  # fmt: skip
        raise DifferentSuites(
            f"the runs graded different suites ({sa} {ha} vs {sb} {hb}); a different suite is a "
            "different instrument (pass --allow-different-suites to compare anyway)"
        )
    score_a, score_b = _scores(a), _scores(b)
    rows: dict[str, dict[str, Any]] = {}
    for dimension in [*COLUMNS, "tasks"]:
        in_a, in_b = score_a.get(dimension, {}), score_b.get(dimension, {})
        shared = sorted(set(in_a) & set(in_b))
        result = paired([in_a[t] for t in shared], [in_b[t] for t in shared])
        if result is not None:
            rows[dimension] = _row(result)
    return Comparison(
        a=_meta(a, "run_id"), b=_meta(b, "run_id"), suite=_meta(a, "suite"),
        suite_hash=_meta(a, "suite_hash"), rows=rows,
    )  # fmt: skip


def _row(p: Paired) -> dict[str, Any]:
    return {
        "tasks": p.tasks, "a": round(p.a_rate, 4), "b": round(p.b_rate, 4),
        "diff": round(p.diff, 4), "ci": [round(p.low, 4), round(p.high, 4)],
        "gained": p.gained, "lost": p.lost, "mcnemar_p": round(p.p_value, 4),
        "significant": p.significant,
    }  # fmt: skip


def render(c: Comparison) -> str:
    header = ["dimension", "tasks", "A", "B", "B - A [95% CI]", "gained", "lost", "McNemar p"]
    lines = [header]
    for dim, r in c.rows.items():
        mark = " *" if r["significant"] else ""
        lines.append([
            dim, str(r["tasks"]), f"{r['a']:.3f}", f"{r['b']:.3f}",
            f"{r['diff']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]", str(r["gained"]),
            str(r["lost"]), f"{r['mcnemar_p']:.3f}{mark}",
        ])  # fmt: skip
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in lines]  # fmt: skip
    drift = c.drift.line() if c.drift else f"drift: unknown ({c.drift_unknown or 'not read'})"
    return "\n".join(
        [f"A {c.a}\nB {c.b}\nsuite {c.suite} ({c.suite_hash}); paired on the tasks both decided", "",
         *text, drift, "", "* McNemar p < 0.05: the change is unlikely to be noise"]
    )  # fmt: skip
