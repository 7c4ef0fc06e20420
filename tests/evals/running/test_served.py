"""A local-model spec as a model (`ServedModel`), without llama.cpp: its server and the client
that reaches it are stand-ins, so what is tested is how calls reach the one server."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from wikiqa.evals.running import served
from wikiqa.models import AssistantMessage, CallOptions, Message, ModelTurn, ToolSpec
from wikiqa.models import local as local_model


class _Process:
    """A server process that stays up."""

    def poll(self) -> None:
        return None


class _OneAtATime:
    """A client whose server answers one call at a time: it counts the calls in flight."""

    def __init__(self) -> None:
        self.busy = 0
        self.most = 0
        self.calls = 0
        self.guard = threading.Lock()

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        with self.guard:
            self.busy += 1
            self.most = max(self.most, self.busy)
        time.sleep(0.05)
        with self.guard:
            self.busy -= 1
            self.calls += 1
        return ModelTurn(message=AssistantMessage(text="ok"), model="stand-in")


def test_the_threads_of_one_process_take_turns_at_its_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    client = _OneAtATime()
    started: list[Path | None] = []

    def start(model: Any, threads: int | None = None) -> local_model.Served:
        started.append(model)
        return local_model.Served(_Process(), "openai:tiny@http://127.0.0.1:9/v1", "server-key")  # type: ignore[arg-type]

    monkeypatch.setattr(local_model, "start", start)
    keys: list[str | None] = []

    def open_model(spec: str, api_key: str | None = None, **calls: Any) -> _OneAtATime:
        keys.append(api_key)
        return client

    monkeypatch.setattr(served, "open_model", open_model)
    monkeypatch.setattr(served, "_servers", {})
    monkeypatch.setattr(served, "_turns", {})
    # two models on the same file (an answerer and a regrade's judge, say) share its server
    models = [served.ServedModel(f"local:{gguf}"), served.ServedModel(f"local:{gguf}")]
    threads = [threading.Thread(target=models[i % 2], args=("system", [], [])) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert client.calls == 8 and client.most == 1
    assert started == [gguf.resolve()]  # one server for the file, started once
    assert set(keys[-2:]) == {"server-key"}  # its calls carry the server's key, not the user's
