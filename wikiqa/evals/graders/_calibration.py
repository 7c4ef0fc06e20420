"""Calibration: did the agent answer when it should, and refuse when it should?

Decided by code from the structured output, plus soft refusals: an "answer" that says it cannot
find or does not know is a refusal in all but name.
"""

from __future__ import annotations

import re

from wikiqa.agent import AgentResult, Answer
from wikiqa.evals.graders.verdict import Grade
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


def calibration(task: Task, result: AgentResult) -> Grade:
    output = result.output
    structured = output.kind
    soft = isinstance(output, Answer) and soft_refusal(output.text)
    detected = "refusal" if structured == "refusal" or soft else "answer"
    expected = "refusal" if task.should_refuse else "answer"
    return Grade(
        dimension="calibration",
        verdict="pass" if detected == expected else "fail",
        tier="code",
        detail={
            "detected": detected,
            "should_refuse": task.should_refuse,
            "structured": structured,
            "soft_refusal": soft,
        },
    )
