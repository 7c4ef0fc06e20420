"""The response cache file is its owner's alone and holds no secret.

A reply can echo what its request carried (a local server reflecting the key it was sent): the
file is created 0600, an older file is narrowed to 0600 when its owner opens it, and every value
is scrubbed before it is stored, whichever way it arrives (a call, an import, a put).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import pytest

from wikiqa import secrets
from wikiqa.evals.running.cache import CachingModel, ResponseCache
from wikiqa.models import (
    AssistantMessage,
    CallOptions,
    Message,
    ModelTurn,
    ToolSpec,
    UserMessage,
)

# a key as a `.env` or a provider would hand it over, built at run time (no key-shaped literal)
KEY = "sk-" + "local-reflected-0123456789abcdef"


class Reflecting:
    """A local server that answers successfully, quoting the key its request carried."""

    spec = "openai:local@http://127.0.0.1:8080/v1"

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        text = f"You sent Authorization: Bearer {KEY}; the answer is Bram Stoker. key={KEY}"
        return ModelTurn(message=AssistantMessage(text=text), stop_reason="stop", model="local")


@pytest.fixture
def remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key remembered as a provider's `reveal` remembers it (a fresh set, undone after)."""
    monkeypatch.setattr(secrets, "_remembered", set())
    secrets.remember(KEY)


def _on_disk(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def test_a_reply_echoing_a_remembered_key_is_stored_without_it(
    tmp_path: Path, remembered: None
) -> None:
    folder = tmp_path / "home"
    cache = ResponseCache(folder / "responses.sqlite")
    asker = CachingModel(Reflecting(), cache, "trial=0")
    first = asker("system", [UserMessage(text="who wrote dracula")], [])
    assert "Bram Stoker" in first.message.text
    again = asker("system", [UserMessage(text="who wrote dracula")], [])
    assert again.cached and KEY not in again.message.text and "Bram Stoker" in again.message.text
    cache.put("direct", f'{{"echo": "{KEY}"}}')  # an import, a Ray actor's put: scrubbed too
    assert KEY not in (cache.get("direct") or "") and "***" in (cache.get("direct") or "")
    assert KEY.encode() not in _on_disk(folder)  # the database and its write-ahead log
    cache.close()
    with closing(sqlite3.connect(folder / "responses.sqlite")) as db:
        values = [row[0] for row in db.execute("SELECT value FROM responses")]
    assert len(values) == 2 and not any(KEY in v for v in values)
    assert KEY.encode() not in _on_disk(folder)


def test_the_cache_file_is_created_for_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "home" / "responses.sqlite"
    old = os.umask(0o022)  # the usual umask, which would give 0644
    try:
        cache = ResponseCache(path)
        cache.put("k", '{"v": 1}')
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in path.parent.iterdir()}
    assert modes["responses.sqlite"] == 0o600
    assert set(modes.values()) == {0o600}  # the -wal and -shm files SQLite made beside it too
    assert cache.get("k") == '{"v": 1}'
    cache.close()


def test_an_older_readable_cache_is_narrowed_when_its_owner_opens_it(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    with closing(sqlite3.connect(path)) as db:  # a cache made before it was kept private
        db.execute("CREATE TABLE responses(key TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO responses VALUES ('k', '{\"v\": 1}')")
        db.commit()
    os.chmod(path, 0o644)
    cache = ResponseCache(path)
    assert path.stat().st_mode & 0o777 == 0o600 and cache.get("k") == '{"v": 1}'
    cache.close()
