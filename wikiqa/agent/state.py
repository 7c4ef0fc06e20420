"""The bookkeeping of one question: conversation, evidence, guard findings, trace and counters.

The loop, the tool handlers (`wikiqa.agent.actions`) and the decisions (`wikiqa.agent.decide`)
all read and update one `RunState`; every trace event goes through `event`, so a caller's
`on_event` sees each step as it happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wikiqa.agent.grounding import Fetched
from wikiqa.agent.guard import Finding
from wikiqa.agent.result import EventKind, TraceEvent
from wikiqa.models import Message, TokenUsage
from wikiqa.sources import Depth, WikiSource


@dataclass
class RunState:
    """What one run knows and has spent so far."""

    question: str
    source: WikiSource
    search_limit: int
    depth: Depth
    spotlight: bool = False
    # the answer's own words must be quoted (the strict_support lever, `decide.support_problems`)
    strict_support: bool = False
    # a quote's garbled tail is dropped before the checks (the trim_quotes lever, `decide`)
    trim_quotes: bool = False
    # articles are shown with numbered sentences, cited by number (the lever, `agent.citing`)
    cite_sentences: bool = False
    on_event: Callable[[TraceEvent], None] | None = None
    messages: list[Message] = field(default_factory=list)
    fetched: Fetched = field(default_factory=Fetched)
    findings: list[Finding] = field(default_factory=list)
    trace: list[TraceEvent] = field(default_factory=list)
    tokens: TokenUsage = field(default_factory=TokenUsage)
    model_calls: int = 0
    cached_calls: int = 0
    tool_calls: int = 0
    repairs: int = 0
    guard_blocked: int = 0
    # the model's own signals for the answer it proposed (`reading.belief`), kept beside the
    # evidence signals; the shipped confidence weights do not read them
    belief: dict[str, float] = field(default_factory=dict)
    # agreement signals for that answer (`wikiqa.agent.agreement`): across samples of the
    # reading call, and with the extractive answerer over the same articles
    agreement: dict[str, float] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)  # calls already run: name + canonical arguments
    # cite_sentences: each submission as `decide` resolved and checked it, by call id (the loop
    # puts it in the model event's trace, `quoted`)
    quoted: dict[str, dict[str, Any]] = field(default_factory=dict)

    def event(
        self,
        kind: EventKind,
        summary: str,
        latency_ms: float = 0.0,
        tokens: TokenUsage | None = None,
        **detail: Any,
    ) -> None:
        event = TraceEvent(
            step=len(self.trace) + 1,
            kind=kind,
            summary=summary,
            detail=detail,
            latency_ms=round(latency_ms, 3),
            tokens=tokens,
        )
        self.trace.append(event)
        if self.on_event is not None:
            self.on_event(event)
