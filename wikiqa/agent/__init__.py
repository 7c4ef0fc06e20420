"""The agent: one question in, a grounded answer or an honest refusal out.

- `loop`: `Agent` and the loop itself (always retrieve, budget, closing phase);
- `state`: one run's bookkeeping (conversation, evidence, trace, counters);
- `actions`: running the model's search and fetch calls; `render`: how results are shown to it;
- `decide`: accepting or repairing a submission, the last guard check, confidence;
- `grounding`: verbatim-quote checks; `guard`: the deterministic injection guard;
- `quarantine`: retrieved spans never quotable; `support`: what an answer or refusal may carry;
- `config`: `AgentConfig`, every lever declared once;
- `prompts`: the system prompts and their hash; `result`: what the agent returns.
"""

from wikiqa.agent.config import DEFAULT_BUDGET, AgentConfig
from wikiqa.agent.grounding import (
    Fetched,
    citation_problems,
    coverage,
    quotable_text,
)
from wikiqa.agent.guard import Finding, scan, violations
from wikiqa.agent.loop import CLOSING, Agent
from wikiqa.agent.prompts import BASELINE_SYSTEM_PROMPT, SYSTEM_PROMPT, prompt_hash
from wikiqa.agent.result import (
    INFRASTRUCTURE_CODES,
    AgentResult,
    Answer,
    Citation,
    Output,
    Refusal,
    Retrieved,
    TraceEvent,
    Usage,
)
from wikiqa.text import normalize_quote

__all__ = [
    "BASELINE_SYSTEM_PROMPT",
    "CLOSING",
    "DEFAULT_BUDGET",
    "INFRASTRUCTURE_CODES",
    "SYSTEM_PROMPT",
    "Agent",
    "AgentConfig",
    "AgentResult",
    "Answer",
    "Citation",
    "Fetched",
    "Finding",
    "Output",
    "Refusal",
    "Retrieved",
    "TraceEvent",
    "Usage",
    "citation_problems",
    "coverage",
    "normalize_quote",
    "prompt_hash",
    "quotable_text",
    "scan",
    "violations",
]
