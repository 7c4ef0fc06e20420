"""What every grader returns: a `Grade` with its verdict, the tier that decided it, and evidence.

Every grade is binary (`pass`/`fail`), `n/a` where the dimension does not apply to what the agent
did (a clean refusal asserts nothing), `needs_judge` where the offline tier cannot decide, or
`error` for an infrastructure failure, which is never graded as the agent's behaviour.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from wikiqa.sources import Provenance

Verdict = Literal["pass", "fail", "n/a", "needs_judge", "error"]
Tier = Literal["code", "offline", "judge"]


class Grade(BaseModel):
    dimension: str
    verdict: Verdict
    tier: Tier
    fraction: float | None = Field(None, description="Diagnostic only, never the headline.")
    detail: dict[str, Any] = Field(default_factory=dict)


# Graders rebuild articles from retrieved text to rescan them; where it came from is irrelevant.
GRADER_PROVENANCE = Provenance(source="snapshot")
