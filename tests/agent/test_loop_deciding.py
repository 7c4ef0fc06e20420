"""Turns that must decide ask for a tool call (`tool_choice="required"`, a grammar on our
llama.cpp server); the openai spec's option reaches the request, and the prompt levers are the
agent's."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2
import pytest

from wikiqa.agent import Agent, AgentConfig, Answer, Refusal
from wikiqa.agent.prompts import NUDGE, SYSTEM_PROMPT
from wikiqa.models import CallOptions, Message, ModelTurn, ScriptedModel, ToolSpec
from wikiqa.registry import open_model
from wikiqa.sources import SnapshotSource

QUOTE = "She developed the FLOW-MATIC programming language."
GOOD = {"name": "submit_answer", "arguments": {"answer": "Grace Hopper", "citations": [{"title": "Grace Hopper", "quote": QUOTE}]}}  # fmt: skip
BAD = {"name": "submit_answer", "arguments": {"answer": "Grace Hopper", "citations": [{"title": "Grace Hopper", "quote": "She invented COBOL alone."}]}}  # fmt: skip


class OptionsLog:
    """A model wrapper that records the options of each call."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.asked: list[str | None] = []

    @property
    def spec(self) -> str:
        return self.model.spec

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        self.asked.append(options.tool_choice if options is not None else None)
        return self.model(system, messages, tools, options)


class RecordingSystem:
    """A model that records the system prompt of each call and submits Hopper's sentence."""

    spec = "recording-system"

    def __init__(self) -> None:
        self.systems: list[str] = []
        self.model = ScriptedModel([[GOOD]])

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        self.systems.append(system)
        return self.model(system, messages, tools, options)


def test_plain_text_gets_the_repair_nudge_and_a_required_call(tiny: SnapshotSource) -> None:
    model = OptionsLog(ScriptedModel([{"text": "Grace Hopper developed it."}, [GOOD]]))
    result = Agent(model, tiny, AgentConfig(read_first=1)).ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Answer) and result.output.text == "Grace Hopper"
    assert model.asked == [None, "required"]  # free first, a call demanded after prose
    models = [e for e in result.trace if e.kind == "model"]
    assert [e.detail["tool_choice"] for e in models] == [None, "required"]


def test_a_rejected_submission_makes_the_repair_turn_a_deciding_one(tiny: SnapshotSource) -> None:
    model = OptionsLog(ScriptedModel([[BAD], [GOOD]]))
    result = Agent(model, tiny, AgentConfig(read_first=1)).ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Answer) and result.repairs == 1
    assert model.asked == [None, "required"]


def test_prose_twice_is_still_no_decision(tiny: SnapshotSource) -> None:
    model = OptionsLog(ScriptedModel([{"text": "Hmm."}, {"text": "Well."}]))
    result = Agent(model, tiny).ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Refusal) and result.output.reason_code == "no_decision"
    assert model.asked == [None, "required"]
    assert "submit_answer" in NUDGE and "word for word" in NUDGE


def test_the_closing_phase_asks_for_a_call(tiny: SnapshotSource) -> None:
    searching = [[{"name": "search_wikipedia", "arguments": {"query": f"q{i}"}}] for i in range(9)]
    model = OptionsLog(ScriptedModel(searching))
    Agent(model, tiny, AgentConfig(budget=5)).ask("Who developed FLOW-MATIC?")
    assert model.asked == [None, None, "required", "required", "required"]  # the closing phase


# -- the openai spec: options, levers, tool_choice on the wire -----------------------------------


def _served(requests: list[dict[str, Any]]) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        message = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "refuse", "arguments": '{"reason": "no"}'}}]}  # fmt: skip
        body = {"id": "x", "object": "chat.completion", "created": 0, "model": "qwen", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}  # fmt: skip
        return httpx2.Response(200, json=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


@pytest.mark.parametrize(
    ("suffix", "asked", "sent"),
    [("", None, "auto"), ("", "required", "required"), (";tool_choice=auto", "required", "auto"),
     (";tool_choice=required", None, "required")],
)  # fmt: skip
def test_tool_choice_is_the_agents_unless_the_spec_fixes_it(
    suffix: str, asked: str | None, sent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikiqa.models import TOOLS, UserMessage
    from wikiqa.models.openai_model import OpenAIModel

    requests: list[dict[str, Any]] = []
    spec = f"openai:qwen@http://127.0.0.1:8091/v1{suffix}"
    model = open_model(spec)
    assert isinstance(model, OpenAIModel) and model.spec == spec
    model._client = model._client.with_options(http_client=_served(requests))
    options = CallOptions.model_validate({"tool_choice": asked}) if asked else None
    model("S", [UserMessage(text="q")], TOOLS, options)
    assert requests[0]["tool_choice"] == sent


def test_prompt_levers_are_the_agents_and_change_the_system_prompt_only_when_on(
    tiny: SnapshotSource,
) -> None:
    from wikiqa.agent import AgentConfig, prompt_hash
    from wikiqa.agent.config import PROMPT_NOTES
    from wikiqa.agent.prompts import system_prompt

    plain, brief = system_prompt(AgentConfig()), system_prompt(AgentConfig(brief=True))
    both = system_prompt(AgentConfig(brief=True, short_quote=True))
    assert plain == SYSTEM_PROMPT and PROMPT_NOTES["brief"] not in plain
    assert brief == plain + PROMPT_NOTES["brief"] + "\n"
    assert both == plain + PROMPT_NOTES["brief"] + "\n" + PROMPT_NOTES["short_quote"] + "\n"
    hashes = {prompt_hash(AgentConfig(**c)) for c in ({}, {"brief": True}, {"short_quote": True})}
    assert len(hashes) == 3  # a prompt lever is a new prompt hash
    # the note reaches the model through the agent, whatever the model
    model = RecordingSystem()
    Agent(model, tiny, AgentConfig(brief=True, read_first=1)).ask("Who developed FLOW-MATIC?")
    assert model.systems and all(s.endswith(PROMPT_NOTES["brief"] + "\n") for s in model.systems)


@pytest.mark.parametrize(
    ("suffix", "error"),
    [(";brief=1", "prompt levers such as brief are the agent's"), (";shout=1", "unknown option"),
     (";tool_choice=none", "expected auto or required"), (";brief", "expected key=value")],
)  # fmt: skip
def test_a_bad_option_is_a_clear_error(suffix: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        open_model(f"openai:qwen@http://127.0.0.1:8091/v1{suffix}")


def test_unset_tool_choice_leaves_the_options_dump_as_it_was() -> None:
    """Judge transcripts and response-cache keys hold this dump: earlier calls keep their keys."""
    assert "tool_choice" not in CallOptions(temperature=0.0).model_dump()
    assert CallOptions.model_validate({"tool_choice": "required"}).model_dump()["tool_choice"] == (
        "required"
    )
