"""Where the agent's Wikipedia text comes from: one protocol, several interchangeable sources.

- `protocol`: `WikiSource` (search, get_article) and the errors a source raises;
- `records`: what crosses the boundary (search hits, articles and their provenance);
- `snapshot` (+ `snapshot_files`): the offline default, a pinned snapshot indexed into SQLite FTS5;
- `live` (+ `infobox`): MediaWiki through mwclient;
- `recording`, `injection`: wrappers that freeze what a source returned, or plant text in it;
- `cassette` (+ `cassette_files`, `cassette_drift`, `cassette_merge`): what a run's source
  answered, recorded by every run and replayed exactly; drift between two runs; merging.

Build one from a spec string with `wikiqa.registry.open_source`.
"""

from typing import Any

from wikiqa.sources.cassette import CassetteMiss, CassetteRecorder, CassetteSource
from wikiqa.sources.cassette_files import CassetteError
from wikiqa.sources.injection import InjectionSource, Plant
from wikiqa.sources.protocol import (
    SourceError,
    SourceUnavailable,
    SourceWrapper,
    WikiSource,
    article_url,
    base_title,
    normalize_title,
)
from wikiqa.sources.recording import RecordingSource
from wikiqa.sources.records import Article, Depth, Provenance, SearchHit
from wikiqa.sources.snapshot import SnapshotInfo, SnapshotSource
from wikiqa.sources.snapshot_files import RECORDING_FORMAT, SnapshotError, default_snapshot_path

__all__ = [
    "RECORDING_FORMAT",
    "Article",
    "CassetteError",
    "CassetteMiss",
    "CassetteRecorder",
    "CassetteSource",
    "Depth",
    "InjectionSource",
    "LiveSource",
    "Plant",
    "Provenance",
    "RecordingSource",
    "SearchHit",
    "SnapshotError",
    "SnapshotInfo",
    "SnapshotSource",
    "SourceError",
    "SourceUnavailable",
    "SourceWrapper",
    "WikiSource",
    "article_url",
    "base_title",
    "default_snapshot_path",
    "normalize_title",
]


def __getattr__(name: str) -> Any:
    # LiveSource pulls in mwclient and requests; load them only when the live path is used.
    if name == "LiveSource":
        from wikiqa.sources.live import LiveSource

        return LiveSource
    raise AttributeError(f"module 'wikiqa.sources' has no attribute {name!r}")
