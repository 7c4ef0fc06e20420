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
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from wikiqa.inputs import MiB, loads, read_bounded
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

MAX_SCRIPT_BYTES = 8 * MiB


class _Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = {}
    raw_arguments: str | None = None


class _Text(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str


class _Down(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unavailable: str


_TURN: TypeAdapter[list[_Call] | _Text | _Down] = TypeAdapter(list[_Call] | _Text | _Down)


class ScriptedModel:
    def __init__(self, turns: list[Any], spec: str = "scripted") -> None:
        if not isinstance(turns, list):
            raise ValueError("a script is a JSON list of turns")
        self.turns = turns
        self.spec = spec

    @classmethod
    def from_file(cls, path: str) -> ScriptedModel:
        """Load and check a script: a bad file fails here, naming file and line or turn, not
        with a raw TypeError in the middle of a run."""
        try:
            raw = read_bounded(path, MAX_SCRIPT_BYTES, "script")
        except OSError as err:
            raise ValueError(f"cannot read script {path}: {err.strerror}") from err
        try:
            turns = loads(raw.decode("utf-8"), path, ValueError)
        except UnicodeDecodeError as err:
            raise ValueError(f"{path}: script is not UTF-8 (byte {err.start})") from err
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from err
        if not isinstance(turns, list):
            raise ValueError(f"{path}: a script is a JSON list of turns")
        for number, turn in enumerate(turns, start=1):
            try:
                _TURN.validate_python(turn)
            except ValidationError as err:
                raise ValueError(
                    f"{path}: turn {number}: expected a list of tool calls "
                    '([{"name": ..., "arguments": {...}}]), {"text": ...} or '
                    f'{{"unavailable": ...}}; got {json.dumps(turn)[:80]}'
                ) from err
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
