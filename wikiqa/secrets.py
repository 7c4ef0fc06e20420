"""The one place that knows what a secret looks like, and removes it from text before it is written.

Keys leak through text nobody wrote on purpose: a proxy that echoes request headers into a 400
body, an SDK error quoting a URL with a password in it. Fixing each message as it is found leaves
the next one open, so every writer (results, journals, the change log, notebooks, stdout/stderr,
HTTP responses) passes its text through `scrub`, which removes:

- the value of every secret the process holds: environment variables whose names say they are
  secrets (`*_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, ...) and every key a provider unwrapped
  through `config.reveal` (which also covers keys read from a `.env` file);
- the userinfo of any URL (`http://user:password@host` becomes `http://***@host`);
- the value after an `Authorization`, `Proxy-Authorization`, `x-api-key` or `api-key` header name,
  in the spellings an echo uses (`name: value`, `"name": "value"`, `name=value`).

Values under `MIN_SECRET` characters are not replaced by value (a token "1" would erase every
digit); they are still caught in header and URL form. This module imports nothing from wikiqa, so
every layer can call it.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MASK", "MIN_SECRET", "ScrubbedStream", "remember", "scrub", "scrub_data", "scrub_frame",
    "scrubbed_output", "secret_values",
]  # fmt: skip

MASK = "***"
MIN_SECRET = 8

# Environment names that hold secrets, by their last part (`OPENAI_API_KEY`, `HF_TOKEN`,
# `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`, `GITHUB_PAT`): matched case-insensitively.
_SECRET_NAME = re.compile(
    r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH|PAT|COOKIE|SESSION)$"
    r"|SECRET|PASSWORD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY",
    re.IGNORECASE,
)
# Names that end like a secret but hold a path or a setting, not a secret.
_NOT_SECRET = {"PWD", "OLDPWD", "XAUTHORITY", "SSH_AUTH_SOCK", "GPG_AGENT_INFO"}

_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]+@")
_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization|\bx-api-key|\bapi-key|\bx-goog-api-key|\bcookie)"
    r"(\\?[\"']?\s*[:=]\s*\\?[\"']?)"
    r"(?:((?:bearer|basic|token)\s+))?"
    r"[^\s\"'\\,;}\]]+"
)

# Every name `_HEADER` matches contains one of these (lower-cased): the cheap test before it.
_HEADER_NAMES = ("authorization", "api-key", "cookie")

_remembered: set[str] = set()
_lock = threading.Lock()
_cache: dict[int, re.Pattern[str] | None] = {}  # fingerprint of the known secrets -> their regex

T = TypeVar("T")


def remember(value: str | None) -> None:
    """Add a secret the process holds but not under a secret-looking environment name (a key
    from a `.env` file or passed in code): every later `scrub` removes it."""
    if value and len(value) >= MIN_SECRET:
        with _lock:
            _remembered.add(value)


def secret_values() -> list[str]:
    """Every secret value known now, longest first (so a key containing another goes whole)."""
    found = {
        value
        for name, value in os.environ.items()
        if name.upper() not in _NOT_SECRET
        and _SECRET_NAME.search(name)
        and len(value) >= MIN_SECRET
    }
    with _lock:
        found |= _remembered
    return sorted(found, key=len, reverse=True)


def _values_pattern() -> re.Pattern[str] | None:
    """One regex of every known secret, rebuilt only when the environment or the remembered set
    changes (a results frame is scrubbed cell by cell)."""
    # os.environ's own mapping (bytes on POSIX): the same items, without decoding every name
    # and value on each call, which would be a large share of the cost of scrubbing a short line.
    data = getattr(os.environ, "_data", None)
    items = data.items() if isinstance(data, dict) else os.environ.items()
    with _lock:
        key = hash((frozenset(items), frozenset(_remembered)))
    if key not in _cache:
        values = secret_values()
        _cache.clear()
        _cache[key] = re.compile("|".join(map(re.escape, values))) if values else None
    return _cache[key]


def scrub(text: str) -> str:
    """`text` with every secret, URL userinfo and credential header value replaced by `***`."""
    if not text:
        return text
    pattern = _values_pattern()
    if pattern is not None:
        text = pattern.sub(MASK, text)
    # The two shapes below cost a regex scan each; most text (article leads, answers) holds
    # neither a URL with an `@` nor a credential header's name, which a substring test rules out.
    if "@" in text and "://" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    lowered = text.lower()
    if any(name in lowered for name in _HEADER_NAMES):
        text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) or ''}{MASK}", text)
    return text


def scrub_data(data: T) -> T:
    """A JSON-like value (dicts, lists, strings, numbers) with every string scrubbed."""
    out: Any
    if isinstance(data, str):
        out = scrub(data)
    elif isinstance(data, dict):
        out = {scrub(k) if isinstance(k, str) else k: scrub_data(v) for k, v in data.items()}
    elif isinstance(data, list | tuple):
        out = type(data)(scrub_data(v) for v in data)
    else:
        out = data
    return out  # type: ignore[no-any-return]


def scrub_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A results frame with every text (and list or dict of texts) cell scrubbed; numeric
    columns untouched."""
    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if column.dtype == object or str(column.dtype) in {"str", "string"}:
            out[name] = column.map(scrub_data)
    return out


class ScrubbedStream:
    """A text stream that scrubs what is written through it (stdout, stderr, and so every log
    handler pointed at them); anything else is the wrapped stream's."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(scrub(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def scrubbed_output() -> Iterator[None]:
    """While inside, `sys.stdout` and `sys.stderr` scrub what is written to them."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, ScrubbedStream):
        sys.stdout = ScrubbedStream(sys.stdout)
    if not isinstance(sys.stderr, ScrubbedStream):
        sys.stderr = ScrubbedStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
