"""The model protocol: one call takes the conversation plus tool schemas, returns one turn.

The conversation is provider-neutral (user text, assistant turns with tool calls, tool results);
each provider translates it to its own wire format. Specs are plain strings so the CLI, the
environment and notebooks select models the same way (`wikiqa.registry.open_model` builds them):

    extractive[:key=value,...]      offline deterministic policy (the default)
    anthropic:<model>               Claude through the anthropic SDK
    openai:<model>@<base_url>       any OpenAI-compatible server (Ollama, llama.cpp, vLLM)
    scripted:<file.json>            replays tool calls from a file (tests, fault drills)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from wikiqa.retry import Transient, parse_retry_after


class TokenUsage(BaseModel):
    """Tokens one or more model calls used; cache fields are zero where a provider has none."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


class ToolSpec(BaseModel):
    """A tool as models see it: name, description and JSON-schema parameters."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ToolCall(BaseModel):
    """A tool call a model made. `error` is set when its arguments could not be parsed."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    error: str | None = None


class UserMessage(BaseModel):
    role: Literal["user"] = "user"
    text: str


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)


class ToolResult(BaseModel):
    """A tool's answer. `content` is what a language model reads; `artifact` is the structured
    payload (hits, article) for in-process policies such as the extractive model."""

    role: Literal["tool"] = "tool"
    call_id: str
    name: str
    content: str
    is_error: bool = False
    artifact: Any = Field(default=None, exclude=True)


Message = UserMessage | AssistantMessage | ToolResult


class TokenLogprob(BaseModel):
    """One generated token's log-probability, and the likeliest tokens at its step."""

    token: str
    logprob: float
    top: list[tuple[str, float]] = Field(default_factory=list)


class ModelTurn(BaseModel):
    """One model call's reply."""

    message: AssistantMessage
    usage: TokenUsage = Field(default_factory=TokenUsage)
    stop_reason: str | None = None
    model: str = Field(description="The model id the provider reports having used.")
    cached: bool = Field(False, description="Served from the response cache, not the model.")
    logprobs: list[TokenLogprob] | None = Field(
        None, description="Per generated token, when the call asked and the provider gives them."
    )


class CallOptions(BaseModel):
    """What a caller may ask of one call beyond the conversation; None keeps the provider's
    default. Judges ask for temperature 0 and a reply that matches their verdict schema; a
    provider sends what its API accepts of these and ignores the rest."""

    model_config = ConfigDict(frozen=True)

    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(
        None, ge=1, description="A tighter output cap for this call (never above the model's)."
    )
    response_schema: dict[str, Any] | None = Field(
        None, description="JSON schema of the reply, enforced where the provider supports it."
    )
    schema_name: str = Field("verdict", pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    tool_choice: Literal["auto", "required"] | None = Field(
        None,
        description=(
            "`required`: the reply must be a tool call. The agent asks for it on turns that "
            "must decide (after a plain-text reply, after a rejected submission); "
            "grammar-constrained servers (our llama.cpp handler) enforce it while decoding."
        ),
    )

    logprobs: int | None = Field(
        None,
        ge=0,
        le=20,
        description=(
            "Ask for each generated token's log-probability and this many likeliest "
            "alternatives per step, where the provider gives them (OpenAI-compatible servers, "
            "our llama.cpp handler); others ignore it."
        ),
    )

    seed: int | None = Field(
        None,
        ge=0,
        description=(
            "Sample this reply with this seed, at `temperature`: one of several independent "
            "samples of one prompt (the reading mode's `samples` lever), each repeatable. "
            "Providers with a seed (OpenAI-compatible servers) send it; our llama.cpp handler "
            "samples only a request that names one, and decodes every other greedily."
        ),
    )

    @model_serializer(mode="wrap")
    def _without_unset_choice(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Dumped as before these fields existed when they are unset: judge transcripts and the
        response cache's keys (which hold this dump) stay the same for every earlier call."""
        dumped: dict[str, Any] = handler(self)
        for later in ("tool_choice", "logprobs", "seed"):
            if dumped.get(later) is None:
                dumped.pop(later, None)
        return dumped


class ModelUnavailable(Exception):
    """The model API failed after retries (or refused to serve): an infrastructure error."""


RETRYABLE_STATUS = frozenset({500, 502, 503, 504, 529})


def api_status_error(
    provider: str, status: int, retry_after: str | None, message: str
) -> Exception:
    """Classify an API's HTTP error: 429, 5xx and 529 (overloaded) are worth retrying (with the
    server's Retry-After); anything else is a request the model API will not serve."""
    wait = parse_retry_after(retry_after)
    if status == 429:
        return Transient("rate limited (HTTP 429)", wait)
    if status in RETRYABLE_STATUS:
        return Transient(
            f"{'overloaded' if status == 529 else 'server error'} (HTTP {status})", wait
        )
    return ModelUnavailable(f"{provider}: HTTP {status}: {message}")


class Model(Protocol):
    """Anything that can take one turn of the conversation."""

    @property
    def spec(self) -> str:
        """The spec string that rebuilds this model (recorded with every result)."""
        ...

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn: ...
