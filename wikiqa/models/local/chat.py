"""The tool-call format a small local model is served with: ChatML plus Hermes-style blocks.

Why not llama-cpp-python's own `chatml-function-calling`: it ignores `max_tokens` (each of its
three internal completions runs to the end of the context) and constrains a plain-text reply to
a tool-name grammar, so a small model can spend minutes on a single turn. This module is the
pure half of our replacement (prompt rendering, the grammar's JSON schema, reading the reply);
`wikiqa.models.local.server` wires it into llama.cpp. The agent still sees an ordinary
OpenAI-compatible server with tool calls: there is no second code path for local models.

A tool call is written as
    <tool_call>
    {"name": "search_wikipedia", "arguments": {"query": "..."}}
    </tool_call>
which is the format most open chat models are tuned on (Hermes, Qwen), so a stronger GGUF
dropped in with `wikiqa local-model serve --model` meets a format it knows.
"""

from __future__ import annotations

import json
import re
from typing import Any

from wikiqa.models import textcalls
from wikiqa.models.textcalls import CLOSE, OPEN

END = "<|im_end|>"

# Qwen2.5's own tool preamble, word for word (its chat template in the GGUF, with the official
# template's single braces): a model meets the format it was tuned on. SmolLM2 has no tool
# template of its own; the grammar carries it.
TOOLS_HEADER = """

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>"""
TOOLS_FOOTER = """
</tools>

For each function call, return a json object with function name and arguments within \
<tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>"""


def _turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}{END}\n"


def _call_block(call: dict[str, Any]) -> str:
    function = call.get("function", {})
    raw = function.get("arguments") or "{}"
    try:
        arguments: Any = json.loads(raw, strict=False)
    except json.JSONDecodeError:
        arguments = raw  # shown as the model wrote it, so it sees its own mistake
    body = json.dumps({"name": function.get("name", ""), "arguments": arguments})
    return f"{OPEN}\n{body}\n{CLOSE}"


def render_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """OpenAI-style chat messages as one ChatML prompt ending at the assistant's turn, as Qwen2.5's
    chat template renders them.

    Tool results go back as user turns inside <tool_response>, consecutive results in one turn:
    ChatML has no tool role, and that is how the Hermes/Qwen templates render them. The system
    turn (prompt and tool specs) depends on nothing but the request's system text and tools, so
    llama.cpp reuses its cached prefix across tasks."""
    out: list[str] = []
    system = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    if tools:
        specs = [
            json.dumps(
                {
                    "type": "function",
                    "function": {
                        **t["function"],
                        "parameters": inline_refs(t["function"]["parameters"]),
                    },
                }
            )
            for t in tools
            if t.get("type") == "function"
        ]
        system += TOOLS_HEADER + "".join("\n" + spec for spec in specs) + TOOLS_FOOTER
    if system:
        out.append(_turn("system", system))
    responses: list[str] = []
    for message in messages:
        role, content = message.get("role"), _inert(str(message.get("content") or ""))
        if role == "tool":
            responses.append(f"<tool_response>\n{content}\n</tool_response>")
            continue
        if responses:
            out.append(_turn("user", "\n".join(responses)))
            responses = []
        if role == "user":
            out.append(_turn("user", content))
        elif role == "assistant":
            blocks = [_call_block(c) for c in message.get("tool_calls") or []]
            out.append(_turn("assistant", "\n".join(filter(None, [content, *blocks]))))
    if responses:
        out.append(_turn("user", "\n".join(responses)))
    out.append("<|im_start|>assistant\n")
    return "".join(out)


_CONTROL = re.compile(r"<(?=\||/?tool_(?:call|response)>)")


def _inert(text: str) -> str:
    """Conversation text with ChatML control markers and the template's tool tags broken
    (`<|im_start|>` -> `‹|im_start|>`, `</tool_response>` -> `‹/tool_response>`).

    llama.cpp tokenizes the prompt with special tokens on, so `<|im_start|>system` inside an
    article would become a real turn boundary: a planted system prompt; and a planted
    `</tool_response>` would end the tool turn early.
    """
    return _CONTROL.sub("‹", text)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with local `#/$defs/...` references replaced by their definitions, so it can be
    nested inside another schema (and reads more plainly to a small model). Recursive
    definitions are not supported; the agent's tools have none."""
    defs = schema.get("$defs", {})

    def expand(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                if name in seen or name not in defs:
                    raise ValueError(f"cannot inline schema reference {ref}")
                return expand(defs[name], (*seen, name))
            return {k: expand(v, seen) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [expand(v, seen) for v in node]
        return node

    expanded: dict[str, Any] = expand(schema, ())
    return expanded


MAX_STRING = 200  # characters in one string argument
MAX_ITEMS = 2  # items in one array argument


def capped(node: Any, max_string: int = MAX_STRING, max_items: int = MAX_ITEMS) -> Any:
    """The schema with every string and array bounded. Greedy decoding of a small model loops
    ("It is the second most abundant element... It is the second..."); a bound closes the
    string, so the call still parses and the agent can judge what it says. The agent's own
    schemas carry no bounds for models (see `wikiqa.tools._bare`), so these are the server's."""
    if isinstance(node, list):
        return [capped(v, max_string, max_items) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: capped(v, max_string, max_items) for k, v in node.items()}
    if out.get("type") == "string":
        out["maxLength"] = min(out.get("maxLength", max_string), max_string)
    if out.get("type") == "array":
        out["maxItems"] = min(out.get("maxItems", max_items), max_items)
    return out


def call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One JSON schema any valid call matches: `{"name": <const>, "arguments": <its schema>}`
    for each tool, bounded by `capped`. Constrained decoding with it makes every call parse and
    name a real tool; whether the arguments are any good is still the agent's to check."""
    variants = [
        {
            "type": "object",
            "properties": {
                "name": {"const": t["function"]["name"]},
                "arguments": capped(
                    inline_refs(t["function"].get("parameters") or {"type": "object"})
                ),
            },
            "required": ["name", "arguments"],
        }
        for t in tools
        if t.get("type") == "function"
    ]
    if not variants:
        raise ValueError("no function tools to call")
    return {"oneOf": variants} if len(variants) > 1 else variants[0]


def parse_reply(
    text: str, id_prefix: str = "call", names: frozenset[str] = frozenset()
) -> tuple[str, list[dict[str, Any]]]:
    """The generated text as (content, tool calls in OpenAI shape), read by
    `wikiqa.models.textcalls`: `<tool_call>` blocks (one cut off by `max_tokens` still becomes
    a call when its tool name is readable, with the raw text as arguments: the agent then
    reports "arguments could not be parsed" to the model, which says more than a fragment of
    JSON shown as an answer would), else call-shaped JSON naming one of `names` in a fence or
    in prose. Anything else is content."""
    found = textcalls.read(text, names)
    if found is None:
        return text.strip(), []
    content, calls = found
    return content, [
        {
            "id": f"{id_prefix}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        for index, (name, arguments) in enumerate(calls)
    ]
