"""Claude through the anthropic SDK, with tool use and prompt caching.

Judges' structured output goes through `output_config` (JSON schema); sampling parameters are
never sent, because the current API version rejects them on every model.

One retry layer: the SDK's own retries are off (`sdk_max_retries=0`), so rate-limited (429) and
overloaded (529) answers, 5xx, timeouts and connection failures go through `wikiqa.retry` alone,
which honours Retry-After up to its `max_wait`, before the call is reported as
`ModelUnavailable`. (With both layers a persistent 529 would cost 9 requests a turn, and a 429
with `retry-after: 3600` would sleep an hour inside the SDK.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import anthropic
import httpx2

from wikiqa.config import Settings, reveal
from wikiqa.models.hosts import check_base_url
from wikiqa.models.protocol import (
    AssistantMessage,
    CallOptions,
    Message,
    ModelTurn,
    ModelUnavailable,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
    api_status_error,
)
from wikiqa.retry import MODEL_RETRY, GaveUp, RetryPolicy, Transient

_EPHEMERAL = {"type": "ephemeral"}


def to_anthropic(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Provider-neutral messages to the Messages API: tool results ride in user turns."""
    out: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].append(block)
        else:
            out.append({"role": role, "content": [block]})

    for message in messages:
        if isinstance(message, UserMessage):
            add("user", {"type": "text", "text": message.text})
        elif isinstance(message, ToolResult):
            add(
                "user",
                {
                    "type": "tool_result",
                    "tool_use_id": message.call_id,
                    "content": message.content,
                    "is_error": message.is_error,
                },
            )
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            if message.text or not message.tool_calls:
                blocks.append({"type": "text", "text": message.text or "(no reply)"})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in message.tool_calls
            ]
            out.append({"role": "assistant", "content": blocks})
    return out


# Prompt caching, under the documented rules: the cached prefix is tools, then system, then
# messages, up to a breakpoint; a prefix under the model's minimum is not cached (1,024 tokens
# for Sonnet and Opus, 2,048 for Haiku); a write costs 1.25x input and a read 0.1x, so a
# breakpoint pays only if the prefix is long enough and is read again. Token counts are
# estimated at 4 characters a token, which undercounts English text, so a prefix estimated over
# the minimum is over it.
CHARS_PER_TOKEN = 4


def min_cacheable_tokens(model: str) -> int:
    return 2048 if "haiku" in model else 1024


def estimate_tokens(*parts: Any) -> int:
    return sum(len(json.dumps(p, ensure_ascii=False)) for p in parts) // CHARS_PER_TOKEN


def place_breakpoints(request: dict[str, Any]) -> dict[str, Any]:
    """Add cache breakpoints where they can pay, in place; return the request.

    - A call without tools (a judge's verdict, the closed-book baseline) is one-shot: nothing
      re-reads its prefix, so a write would cost 1.25x for nothing. No breakpoint.
    - The system breakpoint (caching tools + system) only when that prefix reaches the minimum.
    - The last message's breakpoint (the conversation so far, which the next turn re-reads)
      only when the whole prefix reaches the minimum.
    """
    if not request.get("tools"):
        return request
    floor = min_cacheable_tokens(request["model"])
    head = estimate_tokens(request["tools"], request["system"])
    if head >= floor:
        request["system"][-1] = {**request["system"][-1], "cache_control": _EPHEMERAL}
    messages = request["messages"]
    if messages and head + estimate_tokens(messages) >= floor:
        last = messages[-1]["content"]
        last[-1] = {**last[-1], "cache_control": _EPHEMERAL}
    return request


def cacheable_prefixes(request: dict[str, Any]) -> list[tuple[str, int]]:
    """Each breakpoint in a request with the estimated tokens of the prefix it caches: what a
    test checks against the documented rules (at most 4, each over the minimum)."""
    found: list[tuple[str, int]] = []
    prefix = estimate_tokens(request.get("tools", []))
    for block in request["system"]:
        prefix += estimate_tokens(block)
        if "cache_control" in block:
            found.append(("system", prefix))
    for i, message in enumerate(request["messages"]):
        for block in message["content"]:
            prefix += estimate_tokens(block)
            if "cache_control" in block:
                found.append((f"messages[{i}]", prefix))
    return found


def from_anthropic(response: Any) -> ModelTurn:
    """One turn. A model refusal (`stop_reason: refusal`) is the model's decision, not an outage:
    the turn carries it and the loop refuses. A tool call cut off by `max_tokens` is incomplete
    whatever it parsed to, so it reaches the loop as an error to repair, never as a submission."""
    texts, calls = [], []
    truncated = response.stop_reason == "max_tokens"
    for block in response.content or []:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            error = None if isinstance(block.input, dict) else "tool input is not a JSON object"
            if truncated:
                error = "the reply hit the output-token limit and the call is cut short"
            calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments, error=error))
    usage = response.usage
    return ModelTurn(
        message=AssistantMessage(text="\n".join(texts).strip(), tool_calls=calls),
        usage=TokenUsage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
            cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
        ),
        stop_reason=response.stop_reason,
        model=response.model,
    )


class AnthropicModel:
    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        sdk_max_retries: int = 0,
        retry: RetryPolicy | None = None,
        http_client: httpx2.Client | None = None,
    ) -> None:
        settings = Settings()
        key = api_key or reveal(settings.anthropic_api_key)
        if not key:
            raise ValueError(
                f"anthropic:{model} needs an API key: set WIKIQA_ANTHROPIC_API_KEY "
                "(or ANTHROPIC_API_KEY)"
            )
        base_url = os.environ.get("ANTHROPIC_BASE_URL")  # the SDK reads it; check it as ours
        if base_url:
            check_base_url(base_url, settings.allow_any_host, "ANTHROPIC_BASE_URL")
        self.model = model
        self.max_tokens = max_tokens or settings.model_max_tokens
        self.retry = retry or MODEL_RETRY
        self._client = anthropic.Anthropic(
            api_key=key,
            timeout=timeout or settings.model_timeout,
            max_retries=sdk_max_retries,
            http_client=http_client,
        )

    @property
    def spec(self) -> str:
        return f"anthropic:{self.model}"

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        tool_params: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": min(
                self.max_tokens, (options.max_tokens if options else None) or self.max_tokens
            ),
            "system": [{"type": "text", "text": system}],
            "messages": to_anthropic(messages),
        }
        if tool_params:
            request["tools"] = tool_params
        place_breakpoints(request)
        # No sampling parameters: API version 2026-10-21 (the SDK 2.x default) answers 400 to
        # temperature, top_p or top_k on every model, so `options.temperature` is not sent.
        if options is not None and options.response_schema is not None:
            request["output_config"] = {
                "format": {
                    "type": "json_schema",
                    "schema": anthropic.transform_schema(options.response_schema),
                }
            }
        try:
            response = self.retry.call(lambda: self._create(request))
        except GaveUp as err:
            raise ModelUnavailable(f"anthropic: {err}") from err
        return from_anthropic(response)

    def _create(self, request: dict[str, Any]) -> Any:
        try:
            return self._client.messages.create(**request)
        except anthropic.APIStatusError as err:
            retry_after = err.response.headers.get("retry-after")
            raise api_status_error("anthropic", err.status_code, retry_after, err.message) from err
        except anthropic.APITimeoutError as err:
            raise Transient("request timed out") from err
        except anthropic.APIConnectionError as err:
            raise Transient(f"connection failed: {err}") from err
