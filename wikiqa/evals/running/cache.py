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

A reply that came from a file (`wikiqa replies import`) rather than from this machine's own
call keeps the sha256 of that file beside it (`IMPORTED_FIELD`). `CachingModel` counts the calls
such replies answered, per file (`imported`, `imported_files`, `imported_note`), so a run can say
how much of it someone else's replies decided: a replies file answers any call whose request it
predicted, with no model call made.

The cache file holds replies, and a reply can echo what the request carried (a local server that
reflects its headers): the file is created readable by its owner only (0600; an older one is
narrowed when its owner opens it), and every value is scrubbed of secrets before it is stored,
as every other writer scrubs its output (`wikiqa.secrets`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from wikiqa.models import CallOptions, Message, Model, ModelTurn, ToolSpec
from wikiqa.secrets import scrub

# The stop reasons that say the output-token cap cut the reply off (OpenAI's, Anthropic's).
TRUNCATED = frozenset({"length", "max_tokens"})
# Beside a cached reply: the cap it was made with.
CAP_FIELD = "_max_tokens"
# Beside an imported reply: the sha256 of the replies file it came from.
IMPORTED_FIELD = "_imported_from"
# The cache file and SQLite's files beside it (write-ahead log, shared memory, rollback journal).
_SIDE_FILES = ("", "-wal", "-shm", "-journal")


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
        path.parent.mkdir(parents=True, exist_ok=True)
        _owner_only(path)
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
        """Store `value` under `key`, scrubbed of secrets (a reply may echo a key)."""
        value = scrub(value)
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


def _owner_only(path: Path) -> None:
    """Create the cache file readable by its owner only (0600), or narrow an existing one (and
    SQLite's files beside it) to that when the process owns it. An empty file is a valid new
    SQLite database; the files SQLite creates beside it take its mode."""
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        os.close(os.open(path, flags, 0o600))
    except FileExistsError:
        pass
    for suffix in _SIDE_FILES:
        name = f"{path}{suffix}"
        try:
            info = os.lstat(name)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077:
            os.chmod(name, 0o600)


def imported_note(imported: int, calls: int, files: Mapping[str, int]) -> str | None:
    """How much of a run imported replies answered, for its record: `imported` of `calls`
    model calls (made and served), with each file's sha256 and count; None when none were."""
    if not imported:
        return None
    shown = ", ".join(f"{sha} ({count})" for sha, count in sorted(files.items()))
    return f"{imported} of {calls} calls answered from imported replies, file sha256 {shown}"


class CachingModel:
    """Wraps a model; serves repeated calls from the cache and counts real calls.

    `calls`: calls the model made; `hits`: calls served from the cache; `imported`: those of the
    hits an imported reply answered, and `imported_files` the count per replies file (by its
    sha256), for the run's record (`imported_note`).
    """

    def __init__(self, model: Model, cache: Cache, namespace: str) -> None:
        self.model = model
        self.cache = cache
        self.namespace = namespace
        self.calls = 0
        self.hits = 0
        self.imported = 0
        self.imported_files: Counter[str] = Counter()

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
            origin = entry.pop(IMPORTED_FIELD, None)
            cached = ModelTurn.model_validate(entry)
            if fits(cached, made_with, cap):
                self.hits += 1
                if origin is not None:
                    self.imported += 1
                    self.imported_files[str(origin)] += 1
                return cached.model_copy(update={"cached": True})
        turn = self.model(system, messages, tools, options)
        self.calls += 1
        # scrubbed here too: a cache behind an actor runs in a process that may not know the
        # secrets this one holds
        value = json.dumps(turn.model_dump(mode="json") | {CAP_FIELD: cap}, ensure_ascii=False)
        self.cache.put(key, scrub(value))
        return turn
