"""What every grader returns: a `Grade` with its verdict, the tier that decided it, and evidence.

Every grade is binary (`pass`/`fail`), `n/a` where the dimension does not apply to what the agent
did (a clean refusal asserts nothing), `needs_judge` where the offline tier cannot decide, or
`error` for an infrastructure failure, which is never graded as the agent's behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

Verdict = Literal["pass", "fail", "n/a", "needs_judge", "error"]
Tier = Literal["code", "offline", "judge"]


class Grade(BaseModel):
    dimension: str
    verdict: Verdict
    tier: Tier
    fraction: float | None = Field(None, description="Diagnostic only, never the headline.")
    detail: dict[str, Any] = Field(default_factory=dict)


def maker(dimension: str, tier: Tier) -> Callable[..., Grade]:
    """A constructor of one dimension's grades from one tier: `offline("fail", outcome=...)`.
    Keyword arguments become the grade's evidence (`detail`), in the order given."""

    def make(verdict: Verdict, fraction: float | None = None, **detail: Any) -> Grade:
        return Grade(
            dimension=dimension, verdict=verdict, tier=tier, fraction=fraction, detail=detail
        )

    return make
