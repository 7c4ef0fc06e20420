"""The summary of one run: the category x dimension cells with their intervals, pass@k, the
answer/refuse confusion, SimpleQA outcomes and confidence.

It reads the long results table (one row per task x trial x dimension) through the reducers
(`reduce`), so a notebook can rebuild it from any past run. Cells are passes/applicable
(applicable = pass + fail), per category and dimension, never blended across dimensions.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from wikiqa.evals.analysis.confidence import ConfidenceReport
from wikiqa.evals.analysis.confidence import report as confidence_report
from wikiqa.evals.analysis.reduce import COLUMNS, pass_at, records_of, task_records, trial_records
from wikiqa.evals.analysis.retrieval import RetrievalFigures, retrieval_figures
from wikiqa.evals.analysis.simpleqa import Outcomes, outcomes, reason_of
from wikiqa.evals.analysis.stats import clustered, wilson
from wikiqa.evals.tasks.task import CATEGORIES


class Cell(BaseModel):
    passes: int = 0
    applicable: int = 0
    needs_judge: int = 0
    errors: int = 0
    fraction: float | None = Field(None, description="Mean logged fraction (diagnostic).")
    low: float | None = Field(None, description="95% interval of the rate (see `interval`).")
    high: float | None = None

    @property
    def rate(self) -> float | None:
        return self.passes / self.applicable if self.applicable else None

    def text(self, interval: bool = False) -> str:
        extra = f" ?{self.needs_judge}" if self.needs_judge else ""
        extra += f" !{self.errors}" if self.errors else ""
        if not self.applicable and not extra:
            return "-"
        bounds = ""
        if interval and self.low is not None and self.high is not None:
            bounds = f" [{self.low:.2f},{self.high:.2f}]"
        return f"{self.passes}/{self.applicable}{bounds}{extra}"


def interval(passes: int, applicable: int, task_means: list[float], trials: int) -> Cell:
    """A cell's 95% interval: Wilson on passes/applicable with one trial per task; with more,
    clustered by task on each task's share of passing trials (its trials are not independent)."""
    if trials <= 1 or not task_means:
        bounds = wilson(passes, applicable)
    else:
        result = clustered(task_means)
        bounds = None if result is None else (result[1], result[2])
    low, high = (round(bounds[0], 4), round(bounds[1], 4)) if bounds else (None, None)
    return Cell(passes=passes, applicable=applicable, low=low, high=high)


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
    pass_at_1_interval: tuple[float, float] | None = None
    confidence: ConfidenceReport | None = None
    retrieval: RetrievalFigures | None = None


def _pass_at_1_interval(task_means: list[float], trials: int) -> tuple[float, float] | None:
    if not task_means:
        return None
    if trials <= 1:
        return wilson(round(sum(task_means)), len(task_means))
    result = clustered(task_means)
    return None if result is None else (round(result[1], 4), round(result[2], 4))


def _cell(
    verdicts: list[str],
    dimension: str,
    tasks: list[dict[str, Any]],
    shares: dict[tuple[str, str], list[float]],
    trials: int,
) -> Cell:
    passes = verdicts.count("pass")
    applicable = passes + verdicts.count("fail")
    if dimension == "task":  # a task that is not an error counts, pass or not
        applicable = len(verdicts) - verdicts.count("error")
    means = [sum(s) / len(s) for t in tasks if (s := shares.get((t["task_id"], dimension)))]
    return interval(passes, applicable, means, trials).model_copy(
        update={"needs_judge": verdicts.count("needs_judge"), "errors": verdicts.count("error")}
    )


def _confidence(records: list[dict[str, Any]]) -> ConfidenceReport | None:
    """(confidence, correct) for every answered trial whose correctness was decided."""
    points = [
        (float(r["confidence"]), r["verdict"] == "pass", str(r.get("task_id", i)))
        for i, r in enumerate(records)
        if r["dimension"] == "correctness" and r["outcome"] == "answer"
        and r["verdict"] in ("pass", "fail") and r["confidence"] == r["confidence"]
    ]  # fmt: skip
    if not points:
        return None
    return confidence_report([p[0] for p in points], [p[1] for p in points], [p[2] for p in points])


def summarize(rows: pd.DataFrame) -> Summary:
    records = records_of(rows)
    tasks = task_records(records)
    trials = trial_records(records)
    k = max((int(r["trial"]) for r in records), default=-1) + 1
    fractions: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r["fraction"] is not None and r["fraction"] == r["fraction"]:  # skip None and NaN
            fractions.setdefault((r["task_id"], r["dimension"]), []).append(float(r["fraction"]))
    # each task's share of passing trials per dimension (and for the task), for the intervals
    shares: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r["verdict"] in ("pass", "fail"):
            shares.setdefault((r["task_id"], r["dimension"]), []).append(r["verdict"] == "pass")
    for t in trials:
        if t["task"] != "error":
            shares.setdefault((t["task_id"], "task"), []).append(t["task"] == "pass")
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
            row_cells[dimension] = _cell(verdicts, dimension, in_cat, shares, k).model_copy(
                update={"fraction": round(sum(logged) / len(logged), 3) if logged else None}
            )
        cells[category] = row_cells
        task_cells[category] = _cell([t["task"] for t in in_cat], "task", in_cat, shares, k)
    ok = [t for t in trials if not t["infra_error"]]
    by_task: dict[str, list[bool]] = {}
    for t in ok:
        by_task.setdefault(t["task_id"], []).append(t["task"] == "pass")
    per_task = [(sum(p) / len(p), *pass_at(len(p), sum(p), k)) for p in by_task.values()]

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
        pass_at_1_interval=_pass_at_1_interval([p[0] for p in per_task], k),
        confidence=_confidence(records),
        simpleqa=outcomes(
            (t["correctness"] for t in tasks if "correctness" in t and not t["should_refuse"]),
            _undecided_reasons(rows, tasks),
        )
        if any("correctness" in t for t in tasks)
        else None,
        retrieval=_retrieval(rows),
    )


def _retrieval(rows: pd.DataFrame) -> RetrievalFigures | None:
    """The retrieval figures, from each answerable trial's correctness row (a results table
    written before the retrieval columns existed has none)."""
    if "gold_read" not in rows.columns or rows.empty:
        return None
    picked = rows[rows["dimension"] == "correctness"].rename(columns={"verdict": "correctness"})
    wanted = ["expected_rank", "expected_found", "gold_read", "outcome", "correctness"]
    records = picked.reindex(columns=[*wanted, "infra_error"]).to_dict("records")
    return retrieval_figures([{str(k): v for k, v in r.items()} for r in records])


def _undecided_reasons(rows: pd.DataFrame, tasks: list[dict[str, Any]]) -> Counter[str]:
    """The answerable tasks whose majority correctness is undecided, by the grader's reason."""
    undecided = {
        t["task_id"]
        for t in tasks
        if t.get("correctness") == "needs_judge" and not t["should_refuse"]
    }
    if not undecided or "detail" not in rows.columns:
        return Counter()
    picked = rows[
        (rows["dimension"] == "correctness")
        & (rows["verdict"] == "needs_judge")
        & rows["task_id"].isin(undecided)
    ].drop_duplicates("task_id")
    return Counter(reason_of(d) for d in picked["detail"])
