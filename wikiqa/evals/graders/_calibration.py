"""Calibration: did the agent answer when it should, and refuse when it should?

Decided by code from the structured output, plus soft refusals: an "answer" that says it cannot
find or does not know is a refusal in all but name.
"""

from __future__ import annotations

import re
from typing import Literal

from wikiqa.agent.result import AgentResult, Answer
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.graders.verdict import Grade, maker
from wikiqa.evals.tasks.task import Task
from wikiqa.text import words

SOFT_REFUSAL = re.compile(
    r"\b(?:i|we) (?:do not|don't|cannot|can't|could not|couldn't|am unable to|was unable to) "
    r"(?:know|find|answer|determine|say|tell)\b"
    r"|\b(?:no|not enough|insufficient) (?:relevant )?(?:information|mention|evidence|data)\b"
    r"|\b(?:does|do|did)(?:n't| not) (?:say|mention|specify|state|contain|provide|include)\b"
    r"|\bunable to (?:find|answer|determine)\b"
    r"|\bcannot be (?:answered|determined)\b"
    r"|^\W*(?:unknown|n/?a|none|no answer|sorry)\W*$",
    re.IGNORECASE,
)


def soft_refusal(text: str) -> bool:
    """An answer that is empty or degenerate, or reads as a refusal."""
    return not words(text) or SOFT_REFUSAL.search(text) is not None


Decision = Literal["answer", "refusal"]


def decision(result: AgentResult) -> Decision:
    """What the agent did, read as calibration reads it: a soft refusal is a refusal."""
    output = result.output
    soft = isinstance(output, Answer) and soft_refusal(output.text)
    return "refusal" if output.kind == "refusal" or soft else "answer"


def calibration(task: Task, result: AgentResult, judge: Judge | None = None) -> list[Grade]:
    """The calibration grade, when the task declares the dimension (code: no judge)."""
    if "calibration" not in task.dimensions:
        return []
    output = result.output
    detected = decision(result)
    expected = "refusal" if task.should_refuse else "answer"
    return [
        maker("calibration", "code")(
            "pass" if detected == expected else "fail",
            detected=detected,
            should_refuse=task.should_refuse,
            structured=output.kind,
            soft_refusal=isinstance(output, Answer) and soft_refusal(output.text),
        )
    ]
