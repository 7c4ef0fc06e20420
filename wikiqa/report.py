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

from wikiqa.tasks import CATEGORIES, DIMENSIONS

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


def task_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per task: category, majority verdict per dimension, and the task verdict."""
    records = []
    for (task_id, category), group in rows.groupby(["task_id", "category"], sort=False):
        record: dict[str, Any] = {"task_id": task_id, "category": category}
        for dimension, dim_rows in group.groupby("dimension", sort=False):
            record[str(dimension)] = majority(list(dim_rows["verdict"]))
        record["task"] = combine([record[d] for d in COLUMNS if d in record])
        records.append(record)
    return pd.DataFrame.from_records(records)


def trial_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per task x trial with that trial's task verdict and decision."""
    out = []
    for (task_id, trial), group in rows.groupby(["task_id", "trial"], sort=False):
        first = group.iloc[0]
        out.append(
            {
                "task_id": task_id,
                "trial": trial,
                "category": first["category"],
                "should_refuse": bool(first["should_refuse"]),
                "decision": first["decision"],
                "infra_error": bool(first["infra_error"]),
                "task": combine(list(group["verdict"])),
            }
        )
    return pd.DataFrame.from_records(out)


def _pass_at(n: int, c: int, k: int) -> tuple[float, float]:
    """(pass@k, pass^k) for one task with c passing trials out of n (k <= n)."""
    if n == 0 or k == 0:
        return 0.0, 0.0
    k = min(k, n)
    return 1 - comb(n - c, k) / comb(n, k), comb(c, k) / comb(n, k)


def summarize(rows: pd.DataFrame) -> Summary:
    tasks = task_verdicts(rows)
    trials = trial_verdicts(rows)
    k = int(rows["trial"].max()) + 1 if len(rows) else 0
    cells: dict[str, dict[str, Cell]] = {}
    task_cells: dict[str, Cell] = {}
    for category in [*CATEGORIES, "all"]:
        in_cat = tasks if category == "all" else tasks[tasks["category"] == category]
        if in_cat.empty:
            continue
        row_cells = {}
        for dimension in COLUMNS:
            if dimension not in in_cat:
                continue
            verdicts = in_cat[dimension].dropna().tolist()
            if not verdicts:
                continue
            picked = rows[
                (rows["dimension"] == dimension) & rows["task_id"].isin(in_cat["task_id"])
            ]
            fractions = picked["fraction"].dropna()
            row_cells[dimension] = Cell(
                passes=verdicts.count("pass"),
                applicable=verdicts.count("pass") + verdicts.count("fail"),
                needs_judge=verdicts.count("needs_judge"),
                errors=verdicts.count("error"),
                fraction=round(float(fractions.mean()), 3) if len(fractions) else None,
            )
        cells[category] = row_cells
        verdicts = in_cat["task"].tolist()
        task_cells[category] = Cell(
            passes=verdicts.count("pass"),
            applicable=len(verdicts) - verdicts.count("error"),
            needs_judge=verdicts.count("needs_judge"),
            errors=verdicts.count("error"),
        )
    per_task = []
    for _, group in trials[~trials["infra_error"]].groupby("task_id", sort=False):
        n, c = len(group), int((group["task"] == "pass").sum())
        per_task.append((c / n, *_pass_at(n, c, k)))

    def mean(i: int) -> float:
        return round(sum(p[i] for p in per_task) / len(per_task), 4) if per_task else 0.0

    ok = trials[~trials["infra_error"]]
    confusion = {
        label: {
            "answer": int(((ok["should_refuse"] == refuse) & (ok["decision"] == "answer")).sum()),
            "refusal": int(((ok["should_refuse"] == refuse) & (ok["decision"] == "refusal")).sum()),
        }
        for label, refuse in (("answerable", False), ("unanswerable", True))
    }
    answerable = ok[~ok["should_refuse"]]
    answered = answerable[answerable["decision"] == "answer"]
    return Summary(
        trials=k,
        tasks=len(tasks),
        cells=cells,
        task_cells=task_cells,
        pass_at_1=mean(0),
        pass_at_k=mean(1),
        pass_hat_k=mean(2),
        needs_judge=int((rows["verdict"] == "needs_judge").sum()),
        errors=int(trials["infra_error"].sum()),
        confusion=confusion,
        coverage=round(len(answered) / len(answerable), 4) if len(answerable) else None,
        selective_accuracy=round(float((answered["task"] == "pass").mean()), 4)
        if len(answered)
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
    return "\n".join(table)
