"""Tool calls read from what models really write: Qwen2.5-Coder-1.5B's raw completions recorded
from the llama.cpp server (tests/data/qwen/raw_completions.jsonl, written by the server's
WIKIQA_LOCAL_LOG), real OpenAI-compatible bodies (tests/data/live/), and the shapes small models
write by hand (fenced JSON, JSON in prose)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from wikiqa.agent.prompts import NUDGE
from wikiqa.models import TOOLS
from wikiqa.models.local.chat import parse_reply
from wikiqa.models.openai_model import from_openai
from wikiqa.models.textcalls import read

NAMES = frozenset(t.name for t in TOOLS)
DATA = Path(__file__).parents[1] / "data"


def recorded() -> list[dict[str, Any]]:
    path = DATA / "qwen" / "raw_completions.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def by_kind(kind: str) -> list[dict[str, Any]]:
    found = [r for r in recorded() if r["kind"] == kind]
    assert found, f"no recorded {kind} completion"
    return found


# -- recorded Qwen2.5-Coder-1.5B completions ------------------------------------------------------


def test_qwens_tool_call_blocks_become_calls_naming_real_tools() -> None:
    for record in by_kind("tool_call"):
        content, calls = parse_reply(record["text"], names=NAMES)
        assert calls, record["text"][:80]
        for call in calls:
            assert call["function"]["name"] in NAMES
            if record["finish_reason"] == "stop":  # a whole block: its arguments parse
                assert isinstance(json.loads(call["function"]["arguments"]), dict)
        assert "<tool_call>" not in content


def test_qwens_submissions_carry_an_answer_and_quoted_citations() -> None:
    submitted = 0
    for record in by_kind("tool_call"):
        for call in parse_reply(record["text"], names=NAMES)[1]:
            if call["function"]["name"] == "submit_answer" and record["finish_reason"] == "stop":
                arguments = json.loads(call["function"]["arguments"])
                assert arguments["answer"] and arguments["citations"]
                assert all(c["title"] and c["quote"] for c in arguments["citations"])
                submitted += 1
    assert submitted >= 1


def test_qwens_plain_text_answers_stay_text_for_the_repair_nudge() -> None:
    for record in by_kind("plain_text"):
        content, calls = parse_reply(record["text"], names=NAMES)
        assert calls == [] and content == record["text"].strip()


# -- the shapes a small model writes by hand ------------------------------------------------------

SUBMIT = {"name": "submit_answer", "arguments": {"answer": "Au", "citations": [{"title": "Gold", "quote": "its chemical symbol is Au"}]}}  # fmt: skip


def test_fenced_json_becomes_a_call_and_the_prose_stays_content() -> None:
    text = f"Here is my answer.\n```json\n{json.dumps(SUBMIT)}\n```\nHope it helps."
    content, calls = read(text, NAMES) or ("", [])
    assert [(n, json.loads(a)) for n, a in calls] == [("submit_answer", SUBMIT["arguments"])]
    assert content == "Here is my answer.\n\nHope it helps."


def test_json_in_prose_and_the_openai_and_parameters_shapes_are_calls() -> None:
    prose = 'I will call {"name": "get_article", "parameters": {"title": "Gold"}} now.'
    assert read(prose, NAMES) == ("I will call  now.", [("get_article", '{"title": "Gold"}')])
    wire = json.dumps(
        {"type": "function", "function": {"name": "refuse", "arguments": '{"reason": "no"}'}}
    )
    assert read(wire, NAMES) == ("", [("refuse", '{"reason": "no"}')])


def test_json_that_names_no_offered_tool_is_not_a_call() -> None:
    assert read('The record is {"name": "Gold", "arguments": {}} in the table.', NAMES) is None
    assert read('{"answer": "Au"}', NAMES) is None
    assert read("Gold's symbol is Au.", NAMES) is None
    assert read(NUDGE, NAMES) is None
    assert read(json.dumps(SUBMIT)) is None  # no tools offered: nothing to call


def test_a_truncated_block_keeps_its_name_and_raw_arguments() -> None:
    text = '<tool_call>\n{"name": "submit_answer", "arguments": {"answer": "Iron is'
    assert read(text, NAMES) == ("", [("submit_answer", '{"answer": "Iron is')])


# -- through the openai provider: a server that left the call in the text ------------------------


def _body(content: str | None, calls: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((DATA / "live" / "llamacpp_docs_tool_call.json").read_text())
    body["choices"][0]["message"].update({"content": content, "tool_calls": calls})
    body["choices"][0]["finish_reason"] = "stop"
    return body


@pytest.mark.parametrize("kind", ["tool_call", "plain_text"])
def test_the_provider_reads_a_recorded_reply_left_as_text(kind: str) -> None:
    record = by_kind(kind)[0]
    body = _body(record["text"])  # a real llama.cpp body, with Qwen's real text as content
    turn = from_openai(openai.types.chat.ChatCompletion.construct(**body), NAMES)
    if kind == "tool_call":
        assert turn.message.tool_calls and turn.message.tool_calls[0].name in NAMES
        assert "<tool_call>" not in turn.message.text
    else:
        assert turn.message.tool_calls == [] and turn.message.text == record["text"].strip()


def test_the_provider_never_reads_text_when_the_server_sent_calls() -> None:
    body = json.loads((DATA / "live" / "llamacpp_docs_tool_call.json").read_text())
    body["choices"][0]["message"]["content"] = json.dumps(SUBMIT)
    turn = from_openai(openai.types.chat.ChatCompletion.construct(**body), NAMES)
    assert [c.name for c in turn.message.tool_calls] == ["python"]  # the server's, as sent
