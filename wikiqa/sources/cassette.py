"""Record what a source answered during a run, and replay it exactly.

- `CassetteRecorder(inner, path, header)` passes every call through and holds each distinct
  answer; `flush` appends what it holds in one write of whole lines (under a lock: the runner
  calls from a thread pool), and the runner flushes before it journals each trial, so an
  interrupted run keeps what its journaled trials fetched and a resumed run appends to the same
  file. Every line is scrubbed of secrets before it is written.
- `CassetteRecorder(inner)`, with no path, only collects: `take` hands over what it holds. A Ray
  worker records each trial so, and the driver's recorder `add`s the records to the run's file.
- `CassetteSource(path)` answers searches and fetches exactly as recorded. A call the cassette
  does not hold raises `CassetteMiss`, a `SourceUnavailable` naming the query or title: the
  agent reports it as an infrastructure error, so a miss is never graded as the agent's answer.

The file format is `cassette_files`'.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from pathlib import Path
from typing import Any

from wikiqa.inputs import open_append
from wikiqa.secrets import scrub
from wikiqa.sources.cassette_files import (
    CASSETTE_SUFFIX,
    Cassette,
    CassetteError,
    Fetch,
    Header,
    Search,
    article_record,
    content_hash,
    fetch_key,
    header_line,
    read_cassette,
    read_lines,
    record_key,
    search_key,
)
from wikiqa.sources.protocol import SourceUnavailable, SourceWrapper, WikiSource, normalize_title
from wikiqa.sources.records import Article, Depth, SearchHit


class CassetteMiss(SourceUnavailable):
    """Replay asked for a call its cassette does not hold: reported, never a silent miss.
    `deterministic`: retrying cannot help (the runner does not back off and retry it)."""

    deterministic = True


class CassetteRecorder(SourceWrapper):
    """A `WikiSource` that passes calls through to `inner` and records every distinct answer.

    One gzip member is open while the run records; `close` ends it. Lines are held in memory
    and written, sync-flushed, by `flush`, which the runner calls before it journals each
    trial: every trial the journal holds has its calls on disk (an interrupted run's cassette
    reads up to its last whole line, and what an unjournaled trial fetched records again when it
    reruns). A line is serialized once, when its call is first seen (by pydantic-core's
    serializer), and a call seen before costs a set lookup; an article is scrubbed of secrets
    when its line is made (its id is of the scrubbed content), the other lines together when
    they are written. With one write a trial, that keeps recording within 5% of an offline
    trial's CPU time (`python -m wikiqa.bench cassette`).
    """

    def __init__(
        self, inner: WikiSource, path: Path | str | None = None, header: Header | None = None
    ) -> None:
        super().__init__(inner)
        self.path = Path(path) if path is not None else None  # None: collect only (`take`)
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._seen: set[tuple[Any, ...]] = set()
        self._zip = _compressor()
        self._fd: int | None = None  # kept open while recording; `close` closes it
        # Records not yet written (`flush`) or handed over (`take`), each with its line's text
        # and whether that text is scrubbed already (an article's line, made by `article_record`).
        self._pending: list[tuple[dict[str, Any], str, bool]] = []
        if self.path is None:
            return
        if self.path.exists() and self.path.stat().st_size > 0:
            self._resume()
        else:
            if header is None:
                raise ValueError(f"{self.path}: a new cassette needs its header")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._hold(header_line(header))
            self.flush()

    def _resume(self) -> None:
        """Reopen a resumed run's cassette: know what it holds, and rewrite its whole lines as
        one open gzip member to append to (a last line a kill cut short is dropped: its call
        simply records again)."""
        assert self.path is not None
        cassette = read_cassette(self.path, allow_cut_tail=True)
        self._keys = set(cassette.keys())
        whole = read_lines(self.path)[:-1]
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_bytes(self._pack("".join(line + "\n" for line in whole).encode()))
            os.replace(tmp, self.path)
        except OSError as err:  # a full disk: the old cassette stays, without a temporary beside it
            tmp.unlink(missing_ok=True)
            raise OSError(err.errno, err.strerror, str(self.path)) from err

    def _pack(self, data: bytes) -> bytes:
        return self._zip.compress(data) + self._zip.flush(zlib.Z_SYNC_FLUSH)

    def _hold(self, record: dict[str, Any], text: str | None = None, clean: bool = False) -> None:
        """Hold a record until `flush`, with its line's text (made here if not given) and
        whether that text is scrubbed already."""
        line = json.dumps(record, ensure_ascii=False) if text is None else text
        self._pending.append((record, line, clean))

    def take(self) -> list[dict[str, Any]]:
        """The records held, handed over and forgotten (a collecting recorder's trial)."""
        with self._lock:
            taken, self._pending = self._pending, []
            return [record for record, _, _ in taken]

    def add(self, records: list[dict[str, Any]]) -> None:
        """Hold the records another recorder collected (a Ray worker's trial) that this
        cassette lacks, to be written by the next `flush`: one copy per revision still."""
        with self._lock:
            for record in records:
                key = record_key(record)
                if key not in self._keys:
                    self._keys.add(key)
                    self._hold(record)

    def flush(self) -> None:
        """Write the held lines in one write, sync-flushed so that what is on disk reads as
        whole lines: the article lines made here first (scrubbed when made), then the others,
        in the order they came, scrubbed together (each scrub has a cost of its own). A fetch
        line still follows the article it names: in this write's first part, or an earlier
        write."""
        with self._lock:
            self._flush_held()

    def _flush_held(self) -> None:
        if not self._pending or self.path is None:
            return
        clean = "".join(line + "\n" for _, line, scrubbed in self._pending if scrubbed)
        rest = "".join(line + "\n" for _, line, scrubbed in self._pending if not scrubbed)
        text = clean + scrub(rest)
        self._pending = []
        if self._fd is None:
            self._fd = open_append(self.path)  # never through a planted symbolic link
        self._write(self._pack(text.encode()))

    def _write(self, data: bytes) -> None:
        """All of `data`, however many writes it takes (a short write would lose the end of
        the compressed stream its gzip trailer counts)."""
        assert self._fd is not None
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as err:  # a full disk: say which file
            raise OSError(err.errno, err.strerror, str(self.path)) from err

    def close(self) -> None:
        """Write what is held and end the gzip member (a later call starts a new one: gzip
        allows several)."""
        with self._lock:
            if self.path is None:
                return
            self._flush_held()
            tail = self._zip.flush()
            self._zip = _compressor()
            if self._fd is None:
                self._fd = open_append(self.path)  # never through a planted symbolic link
            try:
                self._write(tail)
            finally:
                os.close(self._fd)
                self._fd = None

    @property
    def sha256(self) -> str:
        """The cassette's content hash so far (`cassette_files.content_hash`)."""
        with self._lock:
            return content_hash(self._keys)

    # Every call is checked against what is recorded by a cheap in-memory key (the values
    # themselves); the hashed keys of `cassette_files` and the lines are made only for what is
    # new, outside the lock (two threads making the same line is harmless: the keys dedupe).

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        hits = self.inner.search(query, limit)
        seen = ("s", query, limit, tuple((h.title, h.snippet, h.score) for h in hits))
        if seen in self._seen:
            return hits
        search = Search(query=query, limit=limit, hits=hits)
        key = search_key(search)
        with self._lock:
            if key not in self._keys:
                self._keys.add(key)
                self._hold({"search": search.model_dump(mode="json")},
                           f'{{"search":{search.model_dump_json()}}}')  # fmt: skip
            self._seen.add(seen)
        return hits

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        article = self.inner.get_article(title, depth)
        content = None if article is None else _content(article)
        seen = ("f", normalize_title(title), depth, content)
        if seen in self._seen:
            return article
        record, line = article_record(article) if article is not None else (None, None)
        ident = record["id"] if record is not None else None
        fetch = Fetch(title=title, depth=depth, article=ident)
        key = fetch_key(fetch)
        with self._lock:
            if record is not None and ident not in self._keys:
                self._keys.add(str(ident))
                self._hold(record, line, clean=True)
            if key not in self._keys:
                self._keys.add(key)
                self._hold({"fetch": fetch.model_dump(mode="json")},
                           f'{{"fetch":{fetch.model_dump_json()}}}')  # fmt: skip
            self._seen.add(seen)
        return article


def _content(article: Article) -> tuple[Any, ...]:
    """What makes an article this article (as `article_id`, without hashing): not fetch time."""
    p = article.provenance
    return (
        article.title, article.text, article.url, article.revision_id, article.is_disambiguation,
        article.description, article.depth, tuple(sorted(article.infobox.items())), p.source,
        p.snapshot_sha256, p.snapshot_name, p.host, p.injected,
    )  # fmt: skip


def _compressor() -> zlib._Compress:
    return zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: a gzip header, so `zcat` reads it


def check_suite(cassette: Cassette, suite_hash: str, *, any_suite: bool = False) -> None:
    """Refuse to replay a cassette on a suite it did not record (a different instrument: its
    calls would miss, or answer another question's search) unless asked (`?suite=any`)."""
    recorded = cassette.header.suite_hashes
    if any_suite or not recorded or suite_hash in recorded:
        return
    raise CassetteError(
        f"{cassette.path}:1: cassette of suite {', '.join(recorded)}, not of this suite "
        f"({suite_hash}); replay it on its own suite, or pass the source as "
        f"cassette:{cassette.path}?suite=any to replay it anyway"
    )


class CassetteSource:
    """A `WikiSource` that answers exactly as a cassette recorded, and nothing else.

    When one call was answered differently within the recording (a live article edited mid-run,
    or a merged cassette with --prefer), the first answer in the file wins.
    """

    def __init__(self, path: Path | str, *, any_suite: bool = False) -> None:
        self.cassette = read_cassette(path)
        self.path = self.cassette.path
        self.any_suite = any_suite
        # named by its file (what the user chose), never by the run its header claims
        self.name = f"cassette:{self.path.name.removesuffix(CASSETTE_SUFFIX)}"
        self.sha256 = self.cassette.sha256
        self._searches: dict[tuple[str, int], list[SearchHit]] = {}
        for s in self.cassette.searches:
            self._searches.setdefault((s.query, s.limit), s.hits)
        self._fetches: dict[tuple[str, str], Article | None] = {}
        for f in self.cassette.fetches:
            answer = self.cassette.articles[f.article] if f.article is not None else None
            self._fetches.setdefault((normalize_title(f.title), f.depth), answer)

    def check_suite(self, suite_hash: str) -> None:
        check_suite(self.cassette, suite_hash, any_suite=self.any_suite)

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        try:
            return list(self._searches[(query, limit)])
        except KeyError:
            raise CassetteMiss(
                f"cassette {self.path.name} holds no search for {query!r} (limit {limit})"
            ) from None

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        try:
            return self._fetches[(normalize_title(title), depth)]
        except KeyError:
            raise CassetteMiss(
                f"cassette {self.path.name} holds no fetch of {title!r} ({depth})"
            ) from None


def parse_spec(rest: str) -> tuple[str, bool]:
    """`cassette:REF[?suite=any]` -> (REF, any_suite)."""
    ref, sep, option = rest.rpartition("?")
    if sep and option == "suite=any":
        return ref, True
    return rest, False
