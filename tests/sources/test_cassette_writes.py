"""What the recorder writes: every byte of every write (a short write is continued, never lost
from the gzip stream its trailer counts), every line scrubbed of secrets whichever way it was
made (an article's own line, a search, a fetch, a record a Ray worker collected), and article
ids that are the canonical JSON's hash, as every cassette already written has them."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import pytest

from wikiqa.sources import Article, Depth, Provenance, SearchHit
from wikiqa.sources.cassette import CassetteRecorder
from wikiqa.sources.cassette_files import (
    CASSETTE_FORMAT,
    Header,
    article_id,
    article_line,
    canonical,
    read_cassette,
)

FAKE_KEY = "sk-" + "ant-writes-0123456789abcdef"  # built at run time: no key-shaped literal


def header() -> Header:
    return Header(format=CASSETTE_FORMAT, created_at="2026-12-01", run_id="run-w")


class Source:
    """Articles and searches whose text (and, when asked, a secret) the test chooses."""

    name = "fake"

    def __init__(self, leak: str = "") -> None:
        self.leak = leak

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        return [SearchHit(title=query.title(), snippet=f"{query} snippet {self.leak}", score=0.1)]

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        return Article(
            title=title.title(), text=f"{title} text é 漢字 \x01 \u2028 {self.leak}".strip(),
            url=f"https://en.wikipedia.org/wiki/{title}", revision_id=2**70, depth=depth,
            infobox={"zeta": "1", "alpha": "two"},
            provenance=Provenance(source="live", host="en.wikipedia.org"),
        )  # fmt: skip


def test_short_writes_are_continued_and_the_gzip_stream_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.write
    calls: list[int] = []

    def short(fd: int, data: bytes | memoryview) -> int:  # at most 7 bytes a call
        calls.append(len(data))
        return real(fd, bytes(data[:7]))

    monkeypatch.setattr("wikiqa.sources.cassette.os.write", short)
    path = tmp_path / "short.cassette.jsonl.gz"
    recorder = CassetteRecorder(Source(), path, header())
    for title in ("one", "two", "three"):
        recorder.search(title)
        recorder.get_article(title)
        recorder.flush()
    recorder.close()
    assert max(calls) > 7  # writes did come up short, and were continued
    gzip.decompress(path.read_bytes())  # the trailer's length and CRC match the stream
    cassette = read_cassette(path)
    assert (len(cassette.articles), len(cassette.fetches), len(cassette.searches)) == (3, 3, 3)
    assert cassette.sha256 == recorder.sha256


def test_every_kind_of_line_is_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIKIQA_ANTHROPIC_API_KEY", FAKE_KEY)
    path = tmp_path / "leak.cassette.jsonl.gz"
    recorder = CassetteRecorder(Source(leak=FAKE_KEY), path, header())
    recorder.search(f"asked with {FAKE_KEY}")  # a query and a snippet holding the key
    recorder.get_article(f"title {FAKE_KEY}")  # a fetch asked, and an article, holding it
    worker = CassetteRecorder(Source(leak=FAKE_KEY))  # a Ray worker's collector
    worker.search("elsewhere")
    worker.get_article("elsewhere")
    sent = worker.take()
    assert any(FAKE_KEY in str(record) for record in sent)  # collected as the source answered
    recorder.add(sent)
    recorder.close()
    text = gzip.decompress(path.read_bytes()).decode()
    assert FAKE_KEY not in text
    assert text.count("***") >= 6  # query, snippet, fetch title, article title and text, worker's
    cassette = read_cassette(path)  # the scrubbed articles still hash to their ids
    assert len(cassette.articles) == 2 and len(cassette.searches) == 2


def test_article_ids_are_the_hash_of_the_canonical_json() -> None:
    article = Source().get_article("grace hopper")
    assert article is not None
    data = article.model_dump(mode="json")
    data["provenance"].pop("fetched_at")
    expected = hashlib.sha256(canonical(data).encode()).hexdigest()[:16]
    assert article_id(article) == article_line(article)["id"] == expected
