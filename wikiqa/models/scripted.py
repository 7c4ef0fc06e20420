"""A model that replays a fixed script of turns: for tests and fault drills.

A script is a list of turns. Each turn is one of
    [{"name": ..., "arguments": {...}}, ...]    tool calls ({"raw_arguments": "..."} for malformed)
    {"text": "..."}                              a reply with no tool call
    {"unavailable": "..."}                       the API failing (raises ModelUnavailable)
The turn played is the number of model turns already in the conversation, so one script serves
any number of questions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wikiqa.models.protocol import (
    AssistantMessage,
    CallOptions,
    Message,
    ModelTurn,
    ModelUnavailable,
    ToolCall,
    ToolSpec,
)
from wikiqa.models.tools import FORCED_ID


class ScriptedModel:
    def __init__(self, turns: list[Any], spec: str = "scripted") -> None:
        if not isinstance(turns, list):
            raise ValueError("a script is a JSON list of turns")
        self.turns = turns
        self.spec = spec

    @classmethod
    def from_file(cls, path: str) -> ScriptedModel:
        try:
            turns = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"cannot read script {path}: {err}") from err
        # The whole path: two scripts that share a file name must not share cached replies.
        return cls(turns, spec=f"scripted:{path}")

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        # The loop's own calls (always-retrieve) are assistant messages too; skip them.
        index = sum(
            isinstance(m, AssistantMessage)
            and not (m.tool_calls and all(c.id.startswith(FORCED_ID) for c in m.tool_calls))
            for m in messages
        )
        turn = self.turns[index] if 0 <= index < len(self.turns) else {"text": ""}
        if isinstance(turn, dict) and "unavailable" in turn:
            raise ModelUnavailable(str(turn["unavailable"]))
        if isinstance(turn, dict):
            return ModelTurn(
                message=AssistantMessage(text=str(turn.get("text", ""))), model=self.spec
            )
        calls = []
        for i, call in enumerate(turn):
            raw = call.get("raw_arguments")
            error = None
            arguments = call.get("arguments", {})
            if raw is not None:
                try:
                    arguments = json.loads(raw)
                except json.JSONDecodeError as err:
                    arguments, error = {}, f"invalid JSON ({err.msg})"
            calls.append(
                ToolCall(
                    id=f"scr_{index}_{i}",
                    name=call["name"],
                    arguments=arguments,
                    raw_arguments=raw,
                    error=error,
                )
            )
        return ModelTurn(
            message=AssistantMessage(tool_calls=calls), model=self.spec, stop_reason="tool_use"
        )
