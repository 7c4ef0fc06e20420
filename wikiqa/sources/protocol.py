"""The one interface every Wikipedia backend meets, and the errors it may raise.

Agents, graders and the harness only ever see a `WikiSource`, so the offline snapshot, live
MediaWiki and the recording/injection wrappers are interchangeable.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Protocol, runtime_checkable
from urllib.parse import quote

from wikiqa.sources.records import Article, Depth, SearchHit


class SourceError(Exception):
    """Base class for errors a source raises instead of returning data."""


class SourceUnavailable(SourceError):
    """The backend could not be reached or kept failing after retries.

    This is an infrastructure failure: callers must report it as such, never grade it as the
    agent's behaviour and never turn it into an answer.
    """


@runtime_checkable
class WikiSource(Protocol):
    """Search and read Wikipedia.

    `get_article` is case-insensitive, follows redirects, flags disambiguation pages and
    returns None when there is no such article. Both methods raise `SourceUnavailable` on
    infrastructure failure.
    """

    name: str

    def search(self, query: str, limit: int = 5) -> list[SearchHit]: ...

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None: ...


class SourceWrapper:
    """Base for sources that wrap another (recording, injection): passes calls through."""

    def __init__(self, inner: WikiSource) -> None:
        self.inner = inner
        self.name = inner.name

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        return self.inner.search(query, limit)

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        return self.inner.get_article(title, depth)


_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)\s*$")


def normalize_title(title: str) -> str:
    """Fold a title for matching: Unicode NFKC, underscores as spaces, whitespace, case."""
    text = unicodedata.normalize("NFKC", title).replace("_", " ")
    return " ".join(text.split()).casefold()


def base_title(title: str) -> str:
    """Drop a trailing parenthesised disambiguator: 'Mercury (planet)' -> 'Mercury'."""
    return _DISAMBIGUATOR.sub("", title).strip()


def article_url(title: str, host: str = "en.wikipedia.org") -> str:
    """The canonical /wiki/ URL of a title, as MediaWiki spells it."""
    return f"https://{host}/wiki/" + quote(title.replace(" ", "_"), safe="()',:!*-._~/")
