"""The models that take the agent's turns: one protocol, several providers.

- `protocol`: `Model` (one call: conversation + tool schemas in, one turn out), the
  provider-neutral messages, token usage and `ModelUnavailable`;
- `tools`: the agent's four tools, the contract between the loop and any model;
- `extractive`: the offline deterministic answerer (the default); `scripted`: replays a file;
- `anthropic_model`, `openai_model`: Claude, and any OpenAI-compatible server;
- `local/`: a real local model (SmolLM2 through llama.cpp's server);
- `prices`: the one price table for cost estimates;
- `reading`: answer types and answer spans; `evidence`: the signals confidence is scored from.

Build one from a spec string with `wikiqa.registry.open_model`.
"""

from typing import Any

from wikiqa.models import evidence, reading
from wikiqa.models.extractive import ExtractiveModel
from wikiqa.models.prices import PRICE_NOTE, estimate_cost
from wikiqa.models.protocol import (
    AssistantMessage,
    CallOptions,
    Message,
    Model,
    ModelTurn,
    ModelUnavailable,
    TokenLogprob,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
    api_status_error,
)
from wikiqa.models.scripted import ScriptedModel
from wikiqa.models.tools import (
    CITING_TOOLS,
    FETCH,
    FORCED_ID,
    MAX_ANSWER,
    REFUSE,
    SEARCH,
    SUBMIT,
    TERMINAL,
    TOOLS,
    CitationArg,
    FetchArgs,
    RefuseArgs,
    SearchArgs,
    SubmitArgs,
)

__all__ = [
    "CITING_TOOLS",
    "FETCH",
    "FORCED_ID",
    "MAX_ANSWER",
    "PRICE_NOTE",
    "REFUSE",
    "SEARCH",
    "SUBMIT",
    "TERMINAL",
    "TOOLS",
    "AnthropicModel",
    "AssistantMessage",
    "CallOptions",
    "CitationArg",
    "ExtractiveModel",
    "FetchArgs",
    "Message",
    "Model",
    "ModelTurn",
    "ModelUnavailable",
    "OpenAIModel",
    "RefuseArgs",
    "ScriptedModel",
    "SearchArgs",
    "SubmitArgs",
    "TokenLogprob",
    "TokenUsage",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "UserMessage",
    "api_status_error",
    "estimate_cost",
    "evidence",
    "reading",
]


def __getattr__(name: str) -> Any:
    # The SDKs are heavy and only the live paths need them: load a provider when it is asked for.
    if name == "AnthropicModel":
        from wikiqa.models.anthropic_model import AnthropicModel

        return AnthropicModel
    if name == "OpenAIModel":
        from wikiqa.models.openai_model import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module 'wikiqa.models' has no attribute {name!r}")
