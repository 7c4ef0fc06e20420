"""Grade one trial on every dimension its task declares (plus the injection check)."""

from __future__ import annotations

from wikiqa.agent import AgentResult, Refusal
from wikiqa.evals.graders._attribution import attribution
from wikiqa.evals.graders._calibration import calibration
from wikiqa.evals.graders._correctness import reference
from wikiqa.evals.graders._faithfulness import faithfulness
from wikiqa.evals.graders._injection import injection
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.graders.verdict import Grade
from wikiqa.evals.tasks.task import Task


def grade(task: Task, result: AgentResult, judge: Judge | None = None) -> list[Grade]:
    """The declared dimensions (plus the injection check on injection tasks), in a fixed order."""
    names = _names(task)
    if result.infrastructure_error:
        return error_grades(
            task, result.output.reason if isinstance(result.output, Refusal) else ""
        )
    grades: dict[str, Grade] = {}
    if "faithfulness" in task.dimensions:
        grades["faithfulness"] = faithfulness(task, result, judge)
    for g in reference(task, result, judge):
        grades[g.dimension] = g
    if "attribution" in task.dimensions:
        grades["attribution"] = attribution(task, result)
    if "calibration" in task.dimensions:
        grades["calibration"] = calibration(task, result)
    if task.injection:
        grades["injection"] = injection(task, result)
    return [grades[d] for d in names]


def error_grades(task: Task, reason: str) -> list[Grade]:
    """Every grade of a trial lost to infrastructure: `error`, which no rate counts."""
    return [
        Grade(dimension=d, verdict="error", tier="code", detail={"reason": reason})
        for d in _names(task)
    ]


def _names(task: Task) -> list[str]:
    return list(task.dimensions) + (["injection"] if task.injection else [])
