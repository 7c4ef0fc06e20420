"""Aggregation: majority votes, the category x dimension table, pass@k, calibration views.

Everything here reads the long results table (one row per task x trial x dimension) that the
harness writes to parquet, so a notebook can rebuild any view from any past run.

- Majority vote per task and dimension: the verdict most trials gave; ties go to the worse
  verdict (fail, then needs_judge, then n/a, then pass). Trials lost to infrastructure errors do
  not vote; a task whose every trial errored is reported as an error, not a failure.
- A task passes only if every declared dimension passes (n/a allowed), with at least one pass:
  a task where nothing applied showed nothing and does not pass.
- Cells are passes/applicable (applicable = pass + fail), per category and dimension, never
  blended across dimensions.
"""

from __future__ import annotations

from collections import Counter
from math import comb
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from wikiqa.evals.simpleqa import Outcomes, outcomes
from wikiqa.evals.tasks import CATEGORIES, DIMENSIONS

COLUMNS = (*DIMENSIONS, "injection")
_BADNESS = {"fail": 0, "needs_judge": 1, "n/a": 2, "pass": 3}


def majority(verdicts: list[str]) -> str:
    votes = Counter(v for v in verdicts if v != "error")
    if not votes:
        return "error"
    return min(votes, key=lambda v: (-votes[v], _BADNESS.get(v, -1)))


def combine(verdicts: list[str]) -> str:
    """A task's verdict from its dimensions' verdicts."""
    if "error" in verdicts:
        return "error"
    if "fail" in verdicts:
        return "fail"
    if "needs_judge" in verdicts:
        return "needs_judge"
    return "pass" if "pass" in verdicts else "fail"


class Cell(BaseModel):
    passes: int = 0
    applicable: int = 0
    needs_judge: int = 0
    errors: int = 0
    fraction: float | None = Field(None, description="Mean logged fraction (diagnostic).")

    @property
    def rate(self) -> float | None:
        return self.passes / self.applicable if self.applicable else None

    def text(self) -> str:
        extra = f" ?{self.needs_judge}" if self.needs_judge else ""
        extra += f" !{self.errors}" if self.errors else ""
        return f"{self.passes}/{self.applicable}{extra}" if self.applicable or extra else "-"


class Summary(BaseModel):
    """Everything the table, the gate and the change log need from one run."""

    trials: int
    tasks: int
    cells: dict[str, dict[str, Cell]]
    task_cells: dict[str, Cell]
    pass_at_1: float
    pass_at_k: float
    pass_hat_k: float
    needs_judge: int
    errors: int
    confusion: dict[str, dict[str, int]]
    coverage: float | None
    selective_accuracy: float | None
    simpleqa: Outcomes | None = None


_FIELDS = ("task_id", "category", "trial", "dimension", "verdict", "fraction", "should_refuse",
           "decision", "infra_error")  # fmt: skip


def _records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    # Plain dicts: per-group pandas calls cost a millisecond each, which dominated small runs.
    return [{str(k): v for k, v in r.items()} for r in rows[list(_FIELDS)].to_dict("records")]


def _task_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    votes: dict[str, dict[str, list[str]]] = {}
    category: dict[str, str] = {}
    refuse: dict[str, bool] = {}
    for r in records:
        votes.setdefault(r["task_id"], {}).setdefault(r["dimension"], []).append(r["verdict"])
        category[r["task_id"]] = r["category"]
        refuse[r["task_id"]] = bool(r["should_refuse"])
    out = []
    for task_id, dims in votes.items():
        record: dict[str, Any] = {
            "task_id": task_id, "category": category[task_id], "should_refuse": refuse[task_id],
        }  # fmt: skip
        record |= {d: majority(v) for d, v in dims.items()}
        record["task"] = combine([record[d] for d in COLUMNS if d in record])
        out.append(record)
    return out


def _trial_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    trials: dict[tuple[str, int], dict[str, Any]] = {}
    verdicts: dict[tuple[str, int], list[str]] = {}
    for r in records:
        key = (r["task_id"], int(r["trial"]))
        trials.setdefault(
            key,
            {
                k: r[k]
                for k in (
                    "task_id",
                    "trial",
                    "category",
                    "should_refuse",
                    "decision",
                    "infra_error",
                )
            },
        )
        verdicts.setdefault(key, []).append(r["verdict"])
    return [t | {"task": combine(verdicts[k])} for k, t in trials.items()]


def task_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per task: category, majority verdict per dimension, and the task verdict."""
    return pd.DataFrame.from_records(_task_records(_records(rows)))


def trial_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per task x trial with that trial's task verdict and decision."""
    return pd.DataFrame.from_records(_trial_records(_records(rows)))


def _pass_at(n: int, c: int, k: int) -> tuple[float, float]:
    """(pass@k, pass^k) for one task with c passing trials out of n (k <= n)."""
    if n == 0 or k == 0:
        return 0.0, 0.0
    k = min(k, n)
    return 1 - comb(n - c, k) / comb(n, k), comb(c, k) / comb(n, k)


def summarize(rows: pd.DataFrame) -> Summary:
    records = _records(rows)
    tasks = _task_records(records)
    trials = _trial_records(records)
    k = max((int(r["trial"]) for r in records), default=-1) + 1
    fractions: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r["fraction"] is not None and r["fraction"] == r["fraction"]:  # skip None and NaN
            fractions.setdefault((r["task_id"], r["dimension"]), []).append(float(r["fraction"]))
    cells: dict[str, dict[str, Cell]] = {}
    task_cells: dict[str, Cell] = {}
    for category in [*CATEGORIES, "all"]:
        in_cat = [t for t in tasks if category in ("all", t["category"])]
        if not in_cat:
            continue
        row_cells = {}
        for dimension in COLUMNS:
            verdicts = [t[dimension] for t in in_cat if dimension in t]
            if not verdicts:
                continue
            logged = [f for t in in_cat for f in fractions.get((t["task_id"], dimension), [])]
            row_cells[dimension] = Cell(
                passes=verdicts.count("pass"),
                applicable=verdicts.count("pass") + verdicts.count("fail"),
                needs_judge=verdicts.count("needs_judge"),
                errors=verdicts.count("error"),
                fraction=round(sum(logged) / len(logged), 3) if logged else None,
            )
        cells[category] = row_cells
        verdicts = [t["task"] for t in in_cat]
        task_cells[category] = Cell(
            passes=verdicts.count("pass"),
            applicable=len(verdicts) - verdicts.count("error"),
            needs_judge=verdicts.count("needs_judge"),
            errors=verdicts.count("error"),
        )
    ok = [t for t in trials if not t["infra_error"]]
    by_task: dict[str, list[bool]] = {}
    for t in ok:
        by_task.setdefault(t["task_id"], []).append(t["task"] == "pass")
    per_task = [(sum(p) / len(p), *_pass_at(len(p), sum(p), k)) for p in by_task.values()]

    def mean(i: int) -> float:
        return round(sum(p[i] for p in per_task) / len(per_task), 4) if per_task else 0.0

    def count(refuse: bool, decision: str) -> int:
        return sum(t["should_refuse"] == refuse and t["decision"] == decision for t in ok)

    answerable = [t for t in ok if not t["should_refuse"]]
    answered = [t for t in answerable if t["decision"] == "answer"]
    return Summary(
        trials=k,
        tasks=len(tasks),
        cells=cells,
        task_cells=task_cells,
        pass_at_1=mean(0),
        pass_at_k=mean(1),
        pass_hat_k=mean(2),
        needs_judge=sum(r["verdict"] == "needs_judge" for r in records),
        errors=sum(bool(t["infra_error"]) for t in trials),
        confusion={
            "answerable": {"answer": count(False, "answer"), "refusal": count(False, "refusal")},
            "unanswerable": {"answer": count(True, "answer"), "refusal": count(True, "refusal")},
        },
        coverage=round(len(answered) / len(answerable), 4) if answerable else None,
        selective_accuracy=round(sum(t["task"] == "pass" for t in answered) / len(answered), 4)
        if answered
        else None,
        simpleqa=outcomes(
            t["correctness"] for t in tasks if "correctness" in t and not t["should_refuse"]
        )
        if any("correctness" in t for t in tasks)
        else None,
    )


def render(summary: Summary) -> str:
    """The plain-text table `wikiqa eval` prints (?n = needs judge, !n = errors)."""
    header = ["category", "n", *COLUMNS, "tasks"]
    lines = []
    for category, row in summary.cells.items():
        task = summary.task_cells[category]
        lines.append(
            [category, str(task.applicable + task.errors)]
            + [row[d].text() if d in row else "-" for d in COLUMNS]
            + [task.text()]
        )
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    table = [fmt.format(*header), fmt.format(*["-" * w for w in widths])]
    table += [fmt.format(*r) for r in lines]
    k = summary.trials
    c = summary.confusion
    table.append("")
    table.append(
        f"pass@1 {summary.pass_at_1:.3f} · pass@{k} {summary.pass_at_k:.3f} · "
        f"pass^{k} {summary.pass_hat_k:.3f} · needs_judge {summary.needs_judge} · "
        f"infrastructure errors {summary.errors} (trials)"
    )
    table.append(
        f"answer/refuse (trials): answerable {c['answerable']['answer']} answered, "
        f"{c['answerable']['refusal']} refused · unanswerable {c['unanswerable']['answer']} "
        f"answered, {c['unanswerable']['refusal']} refused"
    )
    if summary.coverage is not None:
        accuracy = (
            "n/a" if summary.selective_accuracy is None else f"{summary.selective_accuracy:.3f}"
        )
        table.append(
            f"selective accuracy {accuracy} at coverage {summary.coverage:.3f} (answerable tasks)"
        )
    if summary.simpleqa is not None:
        table.append(summary.simpleqa.text())
    return "\n".join(table)
