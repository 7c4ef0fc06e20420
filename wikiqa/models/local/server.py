"""llama.cpp's OpenAI-compatible server with our tool-call chat handler registered.

Run as `python -m wikiqa.models.local.server <llama_cpp.server flags>`; `wikiqa local-model serve`
builds the command. Needs the optional `local` extra (llama-cpp-python), which is why nothing
else in wikiqa imports this module.

The handler (`--chat_format wikiqa-tools`) renders the prompt with `wikiqa.models.local.chat`, decodes
under a grammar (a tool call matching one of the request's tool schemas, or, for
`tool_choice="auto"`, plain text that does not start a tag; for a judge's call, with no tools and
a `json_object` response format, JSON of its schema), honours `max_tokens`, and decodes
greedily whatever temperature the request names: sampled at the server's default 0.8 a small
model mostly produces noise, and greedy decoding makes a run repeatable. A request that names a
`seed` as well as a temperature above 0 is the one exception: it asks for one of several
samples of the same prompt (the reading mode's `samples` lever), so it is sampled at that
temperature with that seed (repeatable too). Its prompt is the one just evaluated, so the KV
cache holds all of it but the last token: a sample costs its decoding only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import llama_chat_format, llama_grammar
from llama_cpp.server import __main__ as llama_server

from wikiqa.models.local.chat import END, call_schema, parse_reply, render_prompt
from wikiqa.models.local.serving import KEY_ENV, PARENT_ENV, exit_with_parent
from wikiqa.models.textcalls import CLOSE, OPEN

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


def reply_grammar(
    tools: list[dict[str, Any]], tool_choice: Any, response_format: dict[str, Any] | None
) -> str | None:
    """GBNF for the reply: a tool call (`grammar`), or for a call without tools that asks for
    JSON (`{"type": "json_object", "schema": ...}`, what this server accepts), JSON matching
    the schema (any JSON object without one); None for unconstrained text."""
    if tools or not response_format or response_format.get("type") != "json_object":
        return grammar(tools, tool_choice)
    # Typed locals: without the `local` extra (a clean clone in CI) llama_cpp is Any to mypy.
    schema = response_format.get("schema")
    gbnf: str = (
        llama_grammar.json_schema_to_gbnf(json.dumps(schema)) if schema else llama_grammar.JSON_GBNF
    )
    return gbnf


def sampling_temperature(seed: int | None, temperature: float | None) -> float:
    """The temperature a request is decoded at: 0 (greedy) unless it names a seed and a
    temperature above 0, a sample asked for on purpose (see the module docstring)."""
    if seed is None or not temperature or temperature <= 0:
        return 0.0
    return float(temperature)


def handler(
    *,
    llama: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    response_format: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    temperature: float | None = None,
    model: str | None = None,
    stream: bool = False,
    logprobs: bool | None = None,
    top_logprobs: int | None = None,
    **_: Any,
) -> dict[str, Any]:
    if stream:
        raise ValueError(f"{CHAT_FORMAT} does not stream")
    gbnf = reply_grammar(tools or [], tool_choice, response_format)
    prompt = render_prompt(messages, tools or [])
    clock = _Clock(llama, top_logprobs or 0) if logprobs else _Clock()
    tokens = llama.tokenize(prompt.encode("utf-8"), special=True)  # as create_completion does
    cached = _shared_prefix(list(llama._input_ids[: llama.n_tokens]), tokens)
    completion = llama.create_completion(
        prompt=prompt,
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        temperature=sampling_temperature(seed, temperature),
        stop=[END],
        seed=seed,
        model=model,
        grammar=llama_grammar.LlamaGrammar.from_string(gbnf, verbose=False) if gbnf else None,
        logits_processor=llama_cpp.LogitsProcessorList([clock]),
    )
    choice = completion["choices"][0]
    usage = dict(completion["usage"])
    # llama-cpp-python reuses the KV cache of the longest prefix this prompt shares with the
    # last one evaluated: those tokens are read from the cache, not prefilled again.
    usage["prompt_tokens_details"] = {"cached_tokens": cached}
    timings = clock.timings(len(tokens) - cached)
    if os.environ.get(LOG_ENV):
        with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
            record = {"tool_choice": tool_choice, "grammar": bool(gbnf), "text": choice["text"]}
            record |= {"finish_reason": choice["finish_reason"], "usage": usage}
            log.write(json.dumps(record | {"timings": timings}) + "\n")
    names = frozenset(t["function"]["name"] for t in tools or [] if t.get("type") == "function")
    content, calls = parse_reply(
        choice["text"], id_prefix=f"call_{completion['id'][-12:]}", names=names
    )
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    finish = choice["finish_reason"]
    if calls:
        message["tool_calls"] = calls
        finish = "tool_calls" if finish == "stop" else finish
    scored = clock.logprobs(finish == "length" and gbnf is None) if logprobs else None
    return {
        "id": "chat" + completion["id"],
        "object": "chat.completion",
        "created": completion["created"],
        "model": completion["model"],
        "choices": [{"index": 0, "message": message, "logprobs": scored, "finish_reason": finish}],
        "usage": usage,
        "timings": timings,  # named as llama.cpp's own server names them (dropped, see LOG_ENV)
    }


# A JSONL file that gets every raw completion with its timings: the test fixtures of real model
# output, and the speed bench's per-call figures. llama-cpp-python's server drops fields it does
# not know from the response (a `timings` object, cached prompt tokens), so they are logged
# here. (llama.cpp's own perf counters will not do: they reset between calls here, and give
# negative deltas.)
LOG_ENV = "WIKIQA_LOCAL_LOG"


def _shared_prefix(evaluated: list[int], tokens: list[int]) -> int:
    """How many of `tokens` llama-cpp-python takes from its KV cache: the longest common prefix
    with what it evaluated last, less one when the whole prompt matches (it re-evaluates the
    last token for fresh logits)."""
    shared = 0
    for a, b in zip(evaluated, tokens, strict=False):
        if a != b:
            break
        shared += 1
    return shared - 1 if shared == len(tokens) and shared else shared


class _Clock:
    """A logits processor that only reads: llama.cpp calls it once per sampled token, the first
    time right after the prompt is evaluated, so prefill and decode are timed apart.

    Given the model (`llama`), it also keeps each step's log-probabilities, the scores before
    any grammar: what the model believed, in the OpenAI chat format. llama-cpp-python's own
    `logprobs` needs the model loaded with `logits_all`, which keeps a vocabulary-wide row per
    context position; here only the steps of this reply are kept. The token sampled at a step is
    read at the next one (the last of `input_ids`); the last step's, never evaluated, is its
    most likely token when decoding was greedy and unconstrained (`last_is_argmax`), else left
    out."""

    def __init__(self, llama: Any = None, top: int = 0) -> None:
        self.start = time.perf_counter()
        self.steps: list[float] = []
        self.llama, self.top = llama, max(0, min(top, 20))
        self.rows: list[Any] = []  # each step's log-softmax over the vocabulary
        self.chosen: list[int] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self.steps.append(time.perf_counter())
        if self.llama is not None:
            if self.rows:
                self.chosen.append(int(input_ids[-1]))
            shifted = scores - scores.max()
            self.rows.append(shifted - np.log(np.exp(shifted).sum()))
        return scores

    def logprobs(self, last_is_argmax: bool) -> dict[str, Any]:
        chosen = self.chosen + (
            [int(self.rows[-1].argmax())] if last_is_argmax and self.rows else []
        )
        content = []
        for token, row in zip(chosen, self.rows, strict=False):
            best: list[int] = [int(t) for t in np.argsort(row)[::-1][: self.top]]
            content.append(
                {
                    **self._token(token, row),
                    "top_logprobs": [self._token(t, row) for t in best],
                }
            )
        return {"content": content, "refusal": None}

    def _token(self, token: int, row: Any) -> dict[str, Any]:
        text = self.llama.detokenize([token]).decode("utf-8", errors="replace")
        return {"token": text, "logprob": float(row[token]), "bytes": None}

    def timings(self, prefilled: int) -> dict[str, float]:
        end = time.perf_counter()
        first = self.steps[0] if self.steps else end
        prompt_ms, predicted_ms = (first - self.start) * 1000, (end - first) * 1000
        decoded = max(len(self.steps) - 1, 0)  # the step after the last sample is not timed
        return {
            "prompt_n": prefilled,
            "prompt_ms": round(prompt_ms, 1),
            "prompt_per_second": round(prefilled / prompt_ms * 1000, 1) if prompt_ms else 0.0,
            "predicted_n": decoded,
            "predicted_ms": round(predicted_ms, 1),
            "predicted_per_second": round(decoded / predicted_ms * 1000, 1)
            if predicted_ms
            else 0.0,
            "wall_ms": round((end - self.start) * 1000, 1),
        }


llama_chat_format.register_chat_completion_handler(CHAT_FORMAT)(handler)

if __name__ == "__main__":
    if os.environ.get(PARENT_ENV):
        exit_with_parent(int(os.environ[PARENT_ENV]))
    if os.environ.get(KEY_ENV):  # llama.cpp's server refuses a call without it (401)
        sys.argv += ["--api_key", os.environ.pop(KEY_ENV)]
    serve: Callable[[], None] = llama_server.main  # parses llama_cpp.server's own flags
    serve()
