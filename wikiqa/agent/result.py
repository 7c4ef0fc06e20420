"""What the agent returns: an answer or a refusal (a discriminated union), plus its trace.

Refusal is read off which branch is populated, never off a flag the model sets beside an
answer, so graders and callers can trust `output.kind`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from wikiqa.models import TokenUsage

RefusalCode = Literal[
    "not_supported",  # the model (or policy) found no support in the fetched text
    "no_results",  # the first search found nothing: refused without a model call
    "ungrounded",  # a submission failed grounding twice
    "contradicted",  # the answer's only support disagrees with the rest of its article
    "injection_blocked",  # the output kept repeating planted instructions
    "budget_exhausted",  # the tool-call budget ran out before a decision
    "no_decision",  # the model kept replying without calling a tool
    "model_refused",  # the model (or its provider's filter) declined: its decision, not an outage
    "low_confidence",  # an answer that passed every check scored under the abstain_below lever
    "invalid_question",
    "source_unavailable",  # infrastructure: Wikipedia failed after retries
    "model_unavailable",  # infrastructure: the model API failed after retries
]
INFRASTRUCTURE_CODES = frozenset({"source_unavailable", "model_unavailable"})


class Citation(BaseModel):
    title: str
    quote: str
    url: str | None = None


class Answer(BaseModel):
    kind: Literal["answer"] = "answer"
    text: str
    citations: list[Citation]


class Refusal(BaseModel):
    kind: Literal["refusal"] = "refusal"
    reason: str
    reason_code: RefusalCode


Output = Annotated[Answer | Refusal, Field(discriminator="kind")]

EventKind = Literal["search", "fetch", "model", "decision", "repair", "trim", "guard", "error"]


class TraceEvent(BaseModel):
    """One step of a run, as `-v` streams it: `[kind] summary`."""

    step: int
    kind: EventKind
    summary: str
    detail: dict[str, Any] = Field(default_factory=dict)
    latency_ms: float = 0.0
    tokens: TokenUsage | None = None

    def line(self) -> str:
        timing = f" ({self.latency_ms:.0f} ms" + (
            f", {self.tokens.total} tokens)" if self.tokens and self.tokens.total else ")"
        )
        return f"[{self.kind}] {self.summary}{timing}"


class Retrieved(BaseModel):
    """An article the run fetched, as the grounding check saw it (text plus infobox lines)."""

    title: str
    url: str
    revision_id: int | None = None
    text: str
    injected: bool = False


class Usage(BaseModel):
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    model_calls: int = 0
    cached_model_calls: int = Field(0, description="Model calls answered from the response cache.")
    tool_calls: int = 0
    estimated_cost_usd: float | None = None
    cost_note: str = ""


class AgentResult(BaseModel):
    """Everything one question produced. `output` is the answer or the refusal."""

    question: str
    output: Output
    infrastructure_error: bool = False
    needs_human_review: bool
    confidence: float = Field(ge=0.0, le=1.0)
    signals: dict[str, float] = Field(
        default_factory=dict, description="The evidence signals confidence was scored from."
    )
    guard_blocked: int = Field(0, description="Submissions the injection guard rejected.")
    repairs: int = 0
    trace: list[TraceEvent] = Field(default_factory=list)
    retrieved: list[Retrieved] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float = 0.0
    model: str
    source: str
    prompt_hash: str
