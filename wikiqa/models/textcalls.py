"""Tool calls read from what a model really writes, when it writes them as text.

Small open models are tuned on Hermes/Qwen-style `<tool_call>` blocks, but they
also put the same JSON in a fenced block, or in a sentence ("I will call {"name": ...}"). The
llama.cpp handler (`wikiqa.models.local.chat`) and the openai provider (for servers without a
tool parser) both read them here, so there is one reader, not one per server. Plain prose stays
prose: the agent loop answers it with its repair nudge.

Precedence: `<tool_call>` blocks (a block cut off by `max_tokens` still names its tool, with the
raw text as arguments, so the agent can say "arguments could not be parsed"); else JSON objects
shaped as a call, `{"name", "arguments"|"parameters"}` or OpenAI's `{"function": {...}}`, in
fences or prose, naming one of the offered tools (other JSON in prose is not a call).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["CLOSE", "OPEN", "read"]

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')
_DECODER = json.JSONDecoder(strict=False)  # small models put raw newlines inside strings

Calls = list[tuple[str, str]]  # (tool name, arguments as JSON text, maybe malformed)


def read(text: str, names: frozenset[str] = frozenset()) -> tuple[str, Calls] | None:
    """(the text that is not a call, the calls) or None when the text holds no call."""
    if OPEN in text:
        content, calls = _blocks(text)
        return (content, calls) if calls else None
    return _json_calls(text, names) if names else None


def _blocks(text: str) -> tuple[str, Calls]:
    start = text.find(OPEN)
    content = text[:start].strip()
    calls: Calls = []
    for chunk in text[start:].split(OPEN)[1:]:
        body = chunk.split(CLOSE, 1)[0].strip()
        decoded = _loads(body)
        call = _as_call(decoded) if decoded is not None else None
        if call is not None:
            calls.append(call)
        elif (found := _NAME.search(body)) is not None:
            rest = _ARGUMENTS.split(body, maxsplit=1)
            calls.append((found.group(1), rest[1] if len(rest) == 2 else ""))
        else:
            content = "\n".join(filter(None, [content, OPEN + chunk]))
    return content, calls


def _loads(body: str) -> Any:
    try:
        return json.loads(body, strict=False)
    except json.JSONDecodeError:
        return None


def _as_call(node: Any) -> tuple[str, str] | None:
    """A decoded object as (name, arguments JSON), when it is shaped as a tool call."""
    if not isinstance(node, dict):
        return None
    if isinstance(node.get("function"), dict):  # OpenAI's wire shape
        node = node["function"]
    name = node.get("name")
    if not isinstance(name, str):
        return None
    arguments = node.get("arguments", node.get("parameters", {}))
    if isinstance(arguments, str):  # OpenAI's wire shape again: arguments as a JSON string
        return name, arguments
    return name, json.dumps(arguments)


def _json_calls(text: str, names: frozenset[str]) -> tuple[str, Calls] | None:
    """Call-shaped JSON objects naming an offered tool, wherever they sit in the text; the
    rest of the text (fences and all) is the content."""
    calls: Calls = []
    spans: list[tuple[int, int]] = []
    position = text.find("{")
    while position >= 0:
        try:
            node, end = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        call = _as_call(node)
        if call is not None and call[0] in names:
            calls.append(call)
            spans.append((position, end))
            position = text.find("{", end)
        else:
            position = text.find("{", position + 1)
    if not calls:
        return None
    kept, last = [], 0
    for begin, end in spans:
        kept.append(text[last:begin])
        last = end
    kept.append(text[last:])
    content = re.sub(r"```(?:json)?\s*```", "", "".join(kept)).strip()
    return content, calls
