"""llama.cpp's OpenAI-compatible server with our tool-call chat handler registered.

Run as `python -m wikiqa.models.local.server <llama_cpp.server flags>`; `wikiqa local-model serve`
builds the command. Needs the optional `local` extra (llama-cpp-python), which is why nothing
else in wikiqa imports this module.

The handler (`--chat_format wikiqa-tools`) renders the prompt with `wikiqa.models.local.chat`, decodes
under a grammar (a tool call matching one of the request's tool schemas, or, for
`tool_choice="auto"`, plain text that does not start a tag), honours `max_tokens`, and decodes
greedily whatever temperature the request names: sampled at the server's default 0.8 a 135M
model mostly produces noise, and greedy decoding makes a run repeatable.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from llama_cpp import llama_chat_format, llama_grammar
from llama_cpp.server import __main__ as llama_server

from wikiqa.models.local.chat import CLOSE, END, OPEN, call_schema, parse_reply, render_prompt

CHAT_FORMAT = "wikiqa-tools"
DEFAULT_MAX_TOKENS = 512


def _gbnf(literal: str) -> str:
    return json.dumps(literal)  # a JSON string literal is a valid GBNF literal


def grammar(tools: list[dict[str, Any]], tool_choice: Any) -> str | None:
    """GBNF for the reply, or None for unconstrained text."""
    if not tools or tool_choice == "none":
        return None
    if isinstance(tool_choice, dict):  # one named function
        name = tool_choice["function"]["name"]
        tools = [t for t in tools if t["function"]["name"] == name]
    schema = llama_grammar.json_schema_to_gbnf(json.dumps(call_schema(tools)))
    rules = [
        "wikiqa-call ::= " + line.removeprefix("root ::= ")
        if line.startswith("root ::= ")
        else line
        for line in schema.splitlines()
    ]
    call = f"{_gbnf(OPEN + chr(10))} wikiqa-call {_gbnf(chr(10) + CLOSE)}"
    if tool_choice in (None, "auto"):
        rules += [f"root ::= {call} | wikiqa-text", "wikiqa-text ::= [^<] [^<]*"]
    else:  # "required" or a named function
        rules.append(f"root ::= {call}")
    return "\n".join(rules)


def handler(
    *,
    llama: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    model: str | None = None,
    stream: bool = False,
    **_: Any,
) -> dict[str, Any]:
    if stream:
        raise ValueError(f"{CHAT_FORMAT} does not stream")
    gbnf = grammar(tools or [], tool_choice)
    completion = llama.create_completion(
        prompt=render_prompt(messages, tools or []),
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        temperature=0.0,
        stop=[END],
        seed=seed,
        model=model,
        grammar=llama_grammar.LlamaGrammar.from_string(gbnf, verbose=False) if gbnf else None,
    )
    choice = completion["choices"][0]
    content, calls = parse_reply(choice["text"], id_prefix=f"call_{completion['id'][-12:]}")
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    finish = choice["finish_reason"]
    if calls:
        message["tool_calls"] = calls
        finish = "tool_calls" if finish == "stop" else finish
    return {
        "id": "chat" + completion["id"],
        "object": "chat.completion",
        "created": completion["created"],
        "model": completion["model"],
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": completion["usage"],
    }


llama_chat_format.register_chat_completion_handler(CHAT_FORMAT)(handler)

if __name__ == "__main__":
    serve: Callable[[], None] = llama_server.main  # parses llama_cpp.server's own flags
    serve()
