"""A response cache for model and judge calls, so an unchanged rerun makes zero model calls.

The key is everything that decides a reply: the model spec, a namespace (the trial index, so
repeated trials stay independent samples), the system prompt, the conversation as the model sees
it, and the tools. A changed prompt, lever, source text or trial gets a fresh call. Errors are
never cached.

The output-token cap is not in the key, and is checked on a hit instead (`fits`): a reply that
stopped on its own within the cap is the reply any cap that large would get, so runs that differ
only in their cap share it, while a reply the cap cut off is served only to a call with that same
cap. Each entry keeps the cap it was made with; one written before it kept any is served only
when it stopped on its own.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from wikiqa.models import CallOptions, Message, Model, ModelTurn, ToolSpec

# The stop reasons that say the output-token cap cut the reply off (OpenAI's, Anthropic's).
TRUNCATED = frozenset({"length", "max_tokens"})
# Beside a cached reply: the cap it was made with.
CAP_FIELD = "_max_tokens"


class Cache(Protocol):
    """What the caching wrapper needs: the SQLite store here, or a Ray actor holding one."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, value: str) -> None: ...


def cache_path() -> Path:
    """Where every run, validation and bench keeps its model replies (`WIKIQA_HOME`'s cache)."""
    from wikiqa.config import Settings

    return Settings().cache_dir() / "responses.sqlite"


def output_cap(model: Model) -> int | None:
    """A model's output-token cap (the API clients' `max_tokens`; None: a model without one)."""
    cap = getattr(model, "max_tokens", None)
    return cap if isinstance(cap, int) else None


def fits(turn: ModelTurn, made_with: int | None, cap: int | None) -> bool:
    """Whether a cached reply, made under the cap `made_with`, is the reply a call under `cap`
    would get (see the module docstring); None is a model without a cap, or an entry written
    before entries kept theirs."""
    if turn.stop_reason in TRUNCATED:
        return made_with is not None and made_with == cap
    return cap is None or turn.usage.output_tokens <= cap


class ResponseCache:
    """A small SQLite key-value store, safe to share between the runner's threads. The database
    is opened on first use: a run refused before its first model call (a bad task file, a bad
    journal) leaves the cache and its folder as they were."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        """The connection (made on the first call; the lock held)."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS responses(key TEXT PRIMARY KEY, value TEXT)")
            self._db = db
        return self._db

    def get(self, key: str) -> str | None:
        with self._lock:
            query = "SELECT value FROM responses WHERE key = ?"
            row = self._open().execute(query, (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._open().execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, value))

    def items(self) -> list[tuple[str, str]]:
        """Every (key, value), for `wikiqa replies export`."""
        with self._lock:
            return list(self._open().execute("SELECT key, value FROM responses"))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class CachingModel:
    """Wraps a model; serves repeated calls from the cache and counts real calls."""

    def __init__(self, model: Model, cache: Cache, namespace: str) -> None:
        self.model = model
        self.cache = cache
        self.namespace = namespace
        self.calls = 0
        self.hits = 0

    @property
    def spec(self) -> str:
        return self.model.spec

    def key(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> str:
        payload: dict[str, Any] = {
            "spec": self.model.spec,
            "namespace": self.namespace,
            "system": system,
            "messages": [m.model_dump(mode="json") for m in messages],
            "tools": [t.model_dump() for t in tools],
        }
        if options is not None:  # absent for the agent's calls, so their keys are unchanged
            payload["options"] = options.model_dump()
        identity = getattr(self.model, "cache_identity", "")
        if identity:  # what else decides its replies (the extractive answerer's code and weights)
            payload["identity"] = identity
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        key = self.key(system, messages, tools, options)
        cap = output_cap(self.model)
        hit = self.cache.get(key)
        if hit is not None:
            entry = json.loads(hit)
            made_with = entry.pop(CAP_FIELD, None)
            cached = ModelTurn.model_validate(entry)
            if fits(cached, made_with, cap):
                self.hits += 1
                return cached.model_copy(update={"cached": True})
        turn = self.model(system, messages, tools, options)
        self.calls += 1
        self.cache.put(
            key, json.dumps(turn.model_dump(mode="json") | {CAP_FIELD: cap}, ensure_ascii=False)
        )
        return turn
