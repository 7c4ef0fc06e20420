"""Grade one trial on every dimension its task declares (plus the injection check), and say what
the agent decided, so the runner never grades twice to learn it."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from wikiqa.agent.result import AgentResult, Refusal
from wikiqa.evals.graders._attribution import attribution
from wikiqa.evals.graders._calibration import Decision, calibration, decision
from wikiqa.evals.graders._correctness import correctness
from wikiqa.evals.graders._faithfulness import faithfulness
from wikiqa.evals.graders._injection import injection
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.graders.verdict import Grade, maker
from wikiqa.evals.tasks.task import Task

# Every grader has one shape: the grades of the dimensions it owns that the task declares.
Grader = Callable[[Task, AgentResult, Judge | None], list[Grade]]
GRADERS: tuple[Grader, ...] = (faithfulness, correctness, attribution, calibration, injection)


class Graded(BaseModel):
    """A trial's grades, in the task's order, and the decision calibration reads."""

    grades: list[Grade]
    decision: Decision


def grade(task: Task, result: AgentResult, judge: Judge | None = None) -> Graded:
    """The declared dimensions (plus the injection check on injection tasks), in a fixed order."""
    if result.infrastructure_error:
        reason = result.output.reason if isinstance(result.output, Refusal) else ""
        return Graded(grades=error_grades(task, reason), decision=decision(result))
    grades = {g.dimension: g for grader in GRADERS for g in grader(task, result, judge)}
    return Graded(grades=[grades[d] for d in _names(task)], decision=decision(result))


def error_grades(task: Task, reason: str) -> list[Grade]:
    """Every grade of a trial lost to infrastructure: `error`, which no rate counts."""
    return [maker(d, "code")("error", reason=reason) for d in _names(task)]


def _names(task: Task) -> list[str]:
    return list(task.dimensions) + (["injection"] if task.injection else [])
