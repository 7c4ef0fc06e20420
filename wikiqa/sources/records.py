"""Typed records that cross module boundaries: search hits, articles and their provenance.

Every article carries where its text came from (which snapshot, by content hash, or which live
fetch, by time and revision), so a result row can always be traced back to the exact text the
agent read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Depth = Literal["lead", "full"]


class SearchHit(BaseModel):
    """One search result: enough for an agent to decide which article to fetch."""

    model_config = ConfigDict(frozen=True)

    title: str
    snippet: str
    score: float = Field(description="Higher is better; comparable only within one result list.")


class Provenance(BaseModel):
    """Where an article's text came from.

    A snapshot article is pinned by the sha256 of the snapshot file; a live article by host,
    fetch time and revision id. `injected` marks text altered by an InjectionSource, so a trace
    never mistakes planted text for Wikipedia's.
    """

    model_config = ConfigDict(frozen=True)

    source: Literal["snapshot", "live"]
    snapshot_sha256: str | None = None
    snapshot_name: str | None = None
    host: str | None = None
    fetched_at: datetime | None = None
    injected: bool = False


class Article(BaseModel):
    """The text of one Wikipedia article as a source returned it.

    `depth` says what the text is, not what was asked for: the snapshot only has leads and says
    so by returning `depth="lead"` even when `full` was requested.
    """

    model_config = ConfigDict(frozen=True)

    title: str
    text: str
    url: str
    revision_id: int | None = None
    is_disambiguation: bool = False
    description: str | None = None
    depth: Depth = "lead"
    infobox: dict[str, str] = Field(default_factory=dict)
    provenance: Provenance
