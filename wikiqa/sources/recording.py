"""Freeze what a source returns into a snapshot file, so a live run can be replayed exactly.

The file is JSON lines: a header, then one `Article` per line, plus a `redirect` line whenever a
requested title resolved to a differently named article. Lines are appended and flushed as they
arrive, so an interrupted recording keeps everything fetched so far, and reopening a file appends
only articles it does not hold yet.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wikiqa.sources.protocol import SourceWrapper, WikiSource, normalize_title
from wikiqa.sources.records import Article, Depth
from wikiqa.sources.snapshot_files import RECORDING_FORMAT, read_recording


class RecordingSource(SourceWrapper):
    """A `WikiSource` that passes calls through and writes every returned article to `path`."""

    def __init__(self, inner: WikiSource, path: Path | str) -> None:
        super().__init__(inner)
        self.path = Path(path)
        self._lock = threading.Lock()
        self._seen: set[tuple[str, str]] = set()
        self._redirects: set[str] = set()
        if self.path.exists() and self.path.stat().st_size > 0:
            self._load_existing()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            header = {
                "format": RECORDING_FORMAT,
                "created_at": datetime.now(UTC).isoformat(),
                "recorded_from": inner.name,
            }
            self._append(header)

    def _load_existing(self) -> None:
        parsed = read_recording(self.path)
        self._seen = {(normalize_title(e.title), e.depth) for e in parsed.entries}
        self._redirects = set(parsed.redirects)

    def _append(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")

    @property
    def recorded(self) -> int:
        """How many distinct (title, depth) articles the file holds."""
        return len(self._seen)

    def has(self, title: str, depth: Depth = "lead") -> bool:
        """Whether `title` (or a redirect to it) is already recorded, so resuming skips it."""
        folded = normalize_title(title)
        return (folded, depth) in self._seen or folded in self._redirects

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        article = self.inner.get_article(title, depth)
        if article is None:
            return None
        key = (normalize_title(article.title), article.depth)
        asked = normalize_title(title)
        with self._lock:
            if key not in self._seen:
                self._append(article.model_dump(mode="json"))
                self._seen.add(key)
            if asked != key[0] and asked not in self._redirects and not article.is_disambiguation:
                self._append({"redirect": {"from": title, "to": article.title}})
                self._redirects.add(asked)
        return article
