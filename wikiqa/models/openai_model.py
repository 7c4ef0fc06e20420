"""Any OpenAI-compatible chat server (OpenAI, Ollama, llama.cpp server, vLLM) with tool calling.

Spec: `openai:<model>@<base_url>[;key=value,...]`, e.g.
`openai:qwen2.5:7b@http://127.0.0.1:11434/v1` or
`openai:qwen@http://127.0.0.1:8080/v1;tool_choice=required`. The one option,
`tool_choice=auto|required`, overrides what the agent asks per turn (by default `auto`, and
`required` on turns that must decide); what the agent asks of the model is `AgentConfig`'s.
Local servers ignore the API key, so a placeholder is sent when none is configured. Failures
are retried like the Anthropic provider's, then reported as `ModelUnavailable`. A reply whose
tool call came back as text (a server without a tool parser) is read by `wikiqa.models.textcalls`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
import openai

from wikiqa.config import Settings, reveal
from wikiqa.models import textcalls
from wikiqa.models.hosts import check_base_url, redact_userinfo
from wikiqa.models.protocol import (
    AssistantMessage,
    CallOptions,
    Message,
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
from wikiqa.retry import MODEL_RETRY, GaveUp, RetryPolicy, Transient


def to_openai(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolResult):
            out.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
            )
        elif isinstance(message, AssistantMessage):
            # "" rather than null: llama.cpp's server rejects a null content beside tool calls.
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            # Valid JSON always: Ollama answers 400 and vLLM fails the request
                            # on the malformed text a model produced; the loop already told the
                            # model what was wrong with it.
                            "arguments": json.dumps(c.arguments) if not c.error else "{}",
                        },
                    }
                    for c in message.tool_calls
                ]
            out.append(entry)
    return out


def _parse_call(index: int, call: Any) -> ToolCall:
    # llama.cpp's documented reply puts name and arguments on the call itself, no `function`
    function = getattr(call, "function", None) or call
    extra = getattr(call, "model_extra", None) or {}
    name = getattr(function, "name", None) or extra.get("name")
    raw = getattr(function, "arguments", None) or extra.get("arguments") or "{}"
    if not name:
        return ToolCall(
            id=getattr(call, "id", None) or f"call_{index}", name="(unnamed)", arguments={},
            raw_arguments=str(raw), error="malformed tool call: no function name",
        )  # fmt: skip
    try:
        # strict=False: small local models put raw newlines inside JSON strings.
        arguments = json.loads(raw, strict=False)
        error = None if isinstance(arguments, dict) else "arguments are not a JSON object"
    except json.JSONDecodeError as err:
        arguments, error = None, f"invalid JSON ({err.msg} at char {err.pos})"
    return ToolCall(
        id=getattr(call, "id", None) or f"call_{index}",
        name=str(name),
        arguments=arguments if isinstance(arguments, dict) else {},
        raw_arguments=raw,
        error=error,
    )


def from_openai(response: Any, tool_names: frozenset[str] = frozenset()) -> ModelTurn:
    if not response.choices:
        raise Transient("malformed response (no choices)")
    choice = response.choices[0]

    message = choice.message
    calls = [_parse_call(i, c) for i, c in enumerate(message.tool_calls or [])]
    text = (message.content or "").strip()
    if not calls and tool_names and text:
        # a call written as text (no tool parser on the server): read it, as the model meant it
        found = textcalls.read(text, tool_names)
        if found is not None:
            text = found[0]
            calls = [_parse_call(i, c) for i, c in enumerate(_Raw.wrap(found[1]))]
    if choice.finish_reason == "length":  # cut off by the token limit: never a whole call
        calls = [
            c.model_copy(update={"error": "the reply hit the output-token limit and the call "
                                          "is cut short"})
            for c in calls
        ]  # fmt: skip
    usage = response.usage
    cached = 0
    if usage is not None and usage.prompt_tokens_details is not None:
        cached = usage.prompt_tokens_details.cached_tokens or 0
    return ModelTurn(
        message=AssistantMessage(text=text, tool_calls=calls),
        usage=TokenUsage(
            input_tokens=(usage.prompt_tokens - cached) if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            cache_read_tokens=cached,
        ),
        stop_reason=choice.finish_reason,
        model=response.model or "",
        logprobs=_logprobs(getattr(choice, "logprobs", None)),
    )


def _logprobs(given: Any) -> list[TokenLogprob] | None:
    """The reply's token log-probabilities (OpenAI's `choices[0].logprobs.content`), or None."""
    content = getattr(given, "content", None)
    if not content:
        return None
    return [
        TokenLogprob(
            token=t.token,
            logprob=t.logprob,
            top=[(a.token, a.logprob) for a in (t.top_logprobs or [])],
        )
        for t in content
    ]


class _Raw:
    """A call read from text, shaped like the SDK's tool-call objects for `_parse_call`."""

    def __init__(self, index: int, name: str, arguments: str) -> None:
        self.id = f"call_text_{index}"
        self.function = self
        self.name, self.arguments = name, arguments
        self.model_extra: dict[str, Any] = {}

    @classmethod
    def wrap(cls, calls: list[tuple[str, str]]) -> list[_Raw]:
        return [cls(i, name, arguments) for i, (name, arguments) in enumerate(calls)]


# OpenAI's reasoning models (o-series, gpt-5 onwards) accept only the default temperature.
_REASONING = re.compile(r"^(?:o\d|gpt-(?:[5-9]|\d{2}))", re.IGNORECASE)


def _reasoning(model: str) -> bool:
    return _REASONING.match(model) is not None


class OpenAIModel:
    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        sdk_max_retries: int = 0,
        retry: RetryPolicy | None = None,
        http_client: httpx2.Client | None = None,
        options: Mapping[str, str] | None = None,
    ) -> None:
        settings = Settings()
        self.model = model
        self.options = dict(options or {})
        self.tool_choice = self.options.pop("tool_choice", None)
        if self.tool_choice not in (None, "auto", "required"):
            raise ValueError(f"tool_choice={self.tool_choice!r}: expected auto or required")
        unknown = sorted(self.options)
        if unknown:
            raise ValueError(
                f"unknown option(s) {', '.join(unknown)} of an openai: model; the one option is "
                "tool_choice (prompt levers such as brief are the agent's: --brief, BRIEF = True)"
            )
        self._json_object = False  # the server takes schemas as json_object (`_create`)
        self.options = dict(options or {})  # as given, for the spec
        self.base_url = base_url or settings.openai_base_url
        if self.base_url is not None:
            check_base_url(self.base_url, settings.allow_any_host)
        key = api_key or reveal(settings.openai_api_key)
        if not key and self.base_url is None:
            raise ValueError(
                f"openai:{model} without @<base_url> means api.openai.com and needs "
                "WIKIQA_OPENAI_API_KEY (or OPENAI_API_KEY)"
            )
        self.max_tokens = max_tokens or settings.model_max_tokens
        self.retry = retry or MODEL_RETRY
        self._completion_tokens = _reasoning(model)
        self._client = openai.OpenAI(
            api_key=key or "not-needed",
            base_url=self.base_url,
            timeout=timeout or settings.model_timeout,
            max_retries=sdk_max_retries,
            http_client=http_client,
        )

    @property
    def spec(self) -> str:
        # Recorded with every result and shown by /healthz: never a password from the URL.
        base = redact_userinfo(self.base_url) if self.base_url else ""
        extra = ",".join(f"{k}={v}" for k, v in self.options.items())
        return (
            f"openai:{self.model}" + (f"@{base}" if base else "") + (f";{extra}" if extra else "")
        )

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        # Reasoning models (o-series, gpt-5 onwards) reject `max_tokens` and take
        # `max_completion_tokens`; a server that says so for another model is believed once.
        limit = "max_completion_tokens" if self._completion_tokens else "max_tokens"
        request: dict[str, Any] = {
            "model": self.model,
            limit: min(
                self.max_tokens, (options.max_tokens if options else None) or self.max_tokens
            ),
            "messages": to_openai(system, messages),
        }
        if tools:  # judges call without tools
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
            asked = options.tool_choice if options is not None else None
            request["tool_choice"] = self.tool_choice or asked or "auto"
        if options is not None and options.logprobs is not None:
            request["logprobs"] = True
            request["top_logprobs"] = options.logprobs
        if options is not None and options.temperature is not None and not _reasoning(self.model):
            request["temperature"] = options.temperature
        if options is not None and options.seed is not None:
            request["seed"] = options.seed
        if options is not None and options.response_schema is not None:
            format_ = {
                "type": "json_schema",
                "json_schema": {"name": options.schema_name, "schema": options.response_schema},
            }
            request["response_format"] = _json_object(format_) if self._json_object else format_
        try:
            names = frozenset(t.name for t in tools)
            return self.retry.call(lambda: from_openai(self._create(request), names))
        except GaveUp as err:
            raise ModelUnavailable(f"openai-compatible server: {err}") from err

    def _create(self, request: dict[str, Any]) -> Any:
        try:
            return self._client.chat.completions.create(**request)
        except openai.BadRequestError as err:
            if "max_tokens" in request and "max_completion_tokens" in str(err.message):
                self._completion_tokens = True
                request["max_completion_tokens"] = request.pop("max_tokens")
                return self._create(request)
            raise api_status_error("openai-compatible", err.status_code, None, err.message) from err
        except openai.APIStatusError as err:
            if _json_object_only(request, str(err.message)):
                # llama-cpp-python's server takes a schema only as {"type": "json_object",
                # "schema": ...} (and says so with a 500): believed once, as max_tokens above
                self._json_object = True
                request["response_format"] = _json_object(request["response_format"])
                return self._create(request)
            retry_after = err.response.headers.get("retry-after")
            raise api_status_error(
                "openai-compatible", err.status_code, retry_after, err.message
            ) from err
        except openai.APITimeoutError as err:
            raise Transient("request timed out") from err
        except openai.APIConnectionError as err:
            raise Transient(f"connection failed: {err}") from err


def _json_object_only(request: dict[str, Any], message: str) -> bool:
    """The server refused a `json_schema` response format and named `json_object` instead."""
    format_ = request.get("response_format") or {}
    return format_.get("type") == "json_schema" and "json_object" in message


def _json_object(format_: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's `json_schema` response format as llama-cpp-python's server spells it."""
    return {"type": "json_object", "schema": format_["json_schema"]["schema"]}
