"""Two runs of one suite, compared the way a reader can trust: paired, per task, with error bars.

For each dimension (and for tasks passing everything) the per-task score is the task's share of
passing trials among its decided ones (0 or 1 with one trial); only tasks both runs decided are
compared. The difference B - A comes with its 95% interval (CLT on the paired per-task
differences) and McNemar's exact p on the tasks that flipped. Runs of different suites are not
compared unless asked: a different suite is a different instrument.

A task left out of the pairing is named, with why: one run did not run it, or every trial of it
ended in an infrastructure error (a replay's cassette lacking a call, Wikipedia or the model
down), with the first error's cause. Where the runs saw different text (drift, from their
cassettes), each task that read a drifted article or made a drifted search is listed with its
verdict in both runs (`TaskDrift`, joined by `drifted_tasks`).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pandas as pd
from pydantic import BaseModel, Field, computed_field

from wikiqa.evals.analysis.reduce import COLUMNS, records_of, task_records, trial_records
from wikiqa.evals.analysis.stats import Paired, paired
from wikiqa.sources.cassette_drift import Drift
from wikiqa.sources.protocol import normalize_title


class Reads(NamedTuple):
    """What one task read in one run: the titles of the articles it fetched, the queries it
    searched (from its trials' traces)."""

    titles: frozenset[str] = frozenset()
    queries: frozenset[str] = frozenset()


class DifferentSuites(ValueError):
    """The two runs graded different suites (or different versions of one)."""


class LeftOut(BaseModel):
    """A task one of the runs graded that the pairing could not use, and why."""

    task_id: str
    reason: str


class TaskDrift(BaseModel):
    """A task that read text that drifted between the runs, and what each run made of it."""

    task_id: str
    articles: list[str]  # drifted articles the task fetched, in either run
    searches: list[str]  # drifted searches (queries) the task made, in either run
    a: str  # the task's verdict in each run (pass, fail, needs_judge, error, or absent)
    b: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def changed(self) -> bool:
        return self.a != self.b


class Comparison(BaseModel):
    a: str
    b: str
    suite: str
    suite_hash: str
    rows: dict[str, dict[str, Any]]
    left_out: list[LeftOut] = Field(default_factory=list)
    # What changed in the text and searches the two runs saw (their cassettes); None when a
    # run has no cassette (recorded before cassettes), with `drift_unknown` saying why.
    drift: Drift | None = None
    drift_unknown: str | None = None
    drift_tasks: list[TaskDrift] = Field(default_factory=list)
    drift_tasks_unknown: str | None = None  # why the tasks that read drifted text are not known


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
        left_out=left_out(a, b, set(score_a.get("tasks", {})) & set(score_b.get("tasks", {}))),
    )  # fmt: skip


def left_out(a: pd.DataFrame, b: pd.DataFrame, paired: set[str]) -> list[LeftOut]:
    """The tasks either run has that are not among the `paired` ones, each with why."""
    errors = _errored(a), _errored(b)
    ran = set(a["task_id"]), set(b["task_id"])
    found = []
    for task in sorted((ran[0] | ran[1]) - paired):
        why = [f"not run in {side}" for side, r in zip("AB", ran, strict=True) if task not in r]
        why += [f"every trial errored in {side} ({e[task]})"
                for side, e in zip("AB", errors, strict=True) if task in e]  # fmt: skip
        found.append(LeftOut(task_id=task, reason="; ".join(why) or "no decided trial"))
    return found


def _errored(frame: pd.DataFrame) -> dict[str, str]:
    """task -> the first error's cause, for tasks none of whose trials was graded (every one
    ended in an infrastructure error, or in a judge error)."""
    trials: dict[str, set[int]] = {}
    errors: dict[str, set[int]] = {}
    causes: dict[str, str] = {}
    for r in frame.reindex(columns=["task_id", "trial", "verdict", "detail"]).to_dict("records"):
        task, trial = str(r["task_id"]), int(r["trial"])
        trials.setdefault(task, set()).add(trial)
        if r["verdict"] == "error":
            errors.setdefault(task, set()).add(trial)
            causes.setdefault(task, _reason(r["detail"]))
    return {task: causes[task] for task, failed in errors.items() if failed == trials[task]}


def _reason(detail: Any) -> str:
    """An error grade's reason, from its detail (a JSON object, as the results table holds it)."""
    try:
        found = json.loads(detail).get("reason") if isinstance(detail, str) else None
    except (ValueError, AttributeError):
        found = None
    return str(found) if found else "no cause recorded"


def drifted_tasks(
    drift: Drift,
    reads: tuple[dict[str, Reads], dict[str, Reads]],
    a: pd.DataFrame,
    b: pd.DataFrame,
) -> list[TaskDrift]:
    """The tasks that fetched an article or made a search that drifted between the runs (`reads`:
    per run, task -> the titles it fetched and the queries it searched), with each run's task
    verdict; the tasks whose verdict changed first."""
    articles = {normalize_title(d.title): d.title for d in drift.articles}
    queries = {d.query for d in drift.searches}
    verdicts = [{r["task_id"]: r["task"] for r in task_records(records_of(f))} for f in (a, b)]
    found = []
    for task in sorted(set(reads[0]) | set(reads[1])):
        titles: set[str] = set()
        searched: set[str] = set()
        for side in reads:
            fetched, made = side.get(task, Reads())
            titles |= {articles[t] for t in map(normalize_title, fetched) if t in articles}
            searched |= made & queries
        if titles or searched:
            found.append(TaskDrift(
                task_id=task, articles=sorted(titles), searches=sorted(searched),
                a=verdicts[0].get(task, "absent"), b=verdicts[1].get(task, "absent"),
            ))  # fmt: skip
    return sorted(found, key=lambda t: not t.changed)


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
         *text, *_left_out_lines(c), drift, *_drift_task_lines(c), "",
         "* McNemar p < 0.05: the change is unlikely to be noise"]
    )  # fmt: skip


def _left_out_lines(c: Comparison) -> list[str]:
    if not c.left_out:
        return []
    return [f"left out {len(c.left_out)} tasks:"] + [
        f"  {t.task_id}: {t.reason}" for t in c.left_out
    ]


def _drift_task_lines(c: Comparison) -> list[str]:
    if c.drift_tasks_unknown:
        return [f"tasks that read drifted text: unknown ({c.drift_tasks_unknown})"]
    if not c.drift_tasks:
        return []
    changed = sum(t.changed for t in c.drift_tasks)
    lines = [f"tasks that read drifted text: {len(c.drift_tasks)}, verdict changed in {changed}"]
    for t in c.drift_tasks:
        read = [*t.articles, *(repr(q) for q in t.searches)]
        mark = "changed" if t.changed else "same"
        lines.append(f"  {t.task_id}: {t.a} -> {t.b} ({mark}); read {', '.join(read)}")
    return lines
