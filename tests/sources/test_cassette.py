"""Cassettes through the live source's own HTTP layer: real MediaWiki bodies (tests/data/live/,
copied from shared/fixtures/live/) replayed by `responses` under mwclient's requests session.

Recording, exact replay with no HTTP at all, misses that are reported, drift between two
revisions of one article, merging, and every malformed file named by file:line.

No real body carries an article's extract with its revision id (the recorded bodies are
searches and pageprops), so the article body here is the real `mw_pageprops_mercury_element_fv2`
page with two fields added: `extract`, the real first sentences of that article as the real
search body `mw_search_mercury_fv2` gives them, and `revisions` with a revision id. The *second
revision* is that body with the revision id changed and one sentence changed; the drifted search
is the real search body with its first two hits swapped. Nothing else is written here.
"""

from __future__ import annotations

import copy
import gzip
import html
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

from wikiqa.cli.main import main
from wikiqa.sources import Article, Depth, Provenance, SearchHit
from wikiqa.sources.cassette import CassetteMiss, CassetteRecorder, CassetteSource
from wikiqa.sources.cassette_drift import drift, render_drift
from wikiqa.sources.cassette_files import (
    CASSETTE_FORMAT,
    CassetteError,
    Header,
    read_cassette,
)
from wikiqa.sources.cassette_merge import MergeConflict, Prefer, merge, write_merged
from wikiqa.sources.live import LiveSource

API = "https://en.wikipedia.org/w/api.php"
REAL = Path(__file__).parents[1] / "data" / "live"
OLD_SENTENCE = "It is commonly known as quicksilver."
NEW_SENTENCE = "It is also known as quicksilver or hydrargyrum."  # the second revision's change


# a planted key, built at run time so no key-shaped literal sits in the tree
FAKE_KEY = "sk-" + "ant-cassette-0123456789"


def real(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REAL / f"{name}.json").read_text(encoding="utf-8"))
    return data


def element_lead() -> str:
    """The real first sentences of Mercury (element), from the real search body's snippet."""
    hit = next(
        h for h in real("mw_search_mercury_fv2")["query"]["search"] if "element" in h["title"]
    )
    text = html.unescape(re.sub(r"<[^>]+>", "", hit["snippet"]))
    return text[: text.rindex(".") + 1]  # the snippet ends mid-sentence: keep whole ones


def element_body(revid: int, text: str) -> dict[str, Any]:
    body = copy.deepcopy(real("mw_pageprops_mercury_element_fv2"))
    page = body["query"]["pages"][0]
    page["extract"] = text
    page["revisions"] = [{"revid": revid}]
    return body


REV_1 = 1300000001
REV_2 = 1300000002


def search_body(swapped: bool = False) -> dict[str, Any]:
    body = copy.deepcopy(real("mw_search_mercury_fv2"))
    if swapped:
        hits = body["query"]["search"]
        hits[0], hits[1] = hits[1], hits[0]
    return body


@pytest.fixture(autouse=True)
def contact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIKIQA_CONTACT", "mailto:tests@example.org")


@pytest.fixture
def http() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as rsps:
        yield rsps


def header(run_id: str = "run-a", suite: str = "h1", created: str = "2026-07-01") -> Header:
    return Header(
        format=CASSETTE_FORMAT, created_at=created, run_id=run_id, suite="dev",
        suite_hashes=[suite], source="live:en.wikipedia.org",
    )  # fmt: skip


def record_live(
    http: responses.RequestsMock,
    path: Path,
    revid: int,
    text: str,
    swapped: bool = False,
    **kw: Any,
) -> tuple[list[SearchHit], Article | None]:
    """One live 'run': a search and a fetch of Mercury (element), through the real HTTP layer."""
    http.get(API, json=search_body(swapped))
    http.get(API, json=element_body(revid, text))
    recorder = CassetteRecorder(LiveSource(sleep=lambda s: None), path, header(**kw))
    hits = recorder.search("mercury", 5)
    article = recorder.get_article("Mercury (element)")
    recorder.close()
    return hits, article


def test_a_live_run_replays_exactly_without_any_http(
    http: responses.RequestsMock, tmp_path: Path
) -> None:
    path = tmp_path / "a.cassette.jsonl.gz"
    hits, article = record_live(http, path, REV_1, element_lead())
    assert article is not None and article.revision_id == REV_1
    assert article.text.startswith("Mercury is a chemical element; it has symbol Hg")
    calls = len(http.calls)
    replay = CassetteSource(path)
    assert replay.search("mercury", 5) == hits
    assert replay.get_article("mercury (ELEMENT)") == article  # provenance and fetch time too
    assert len(http.calls) == calls  # replay made no request
    cassette = read_cassette(path)
    (only,) = cassette.fetches
    assert only.title == "Mercury (element)" and cassette.articles[str(only.article)] == article
    # named by its file, not by the run its (editable) header claims
    assert cassette.header.run_id == "run-a"
    assert replay.name == "cassette:a" and replay.sha256 == cassette.sha256


def test_a_call_the_cassette_lacks_is_reported_naming_it(
    http: responses.RequestsMock, tmp_path: Path
) -> None:
    path = tmp_path / "a.cassette.jsonl.gz"
    record_live(http, path, REV_1, element_lead())
    replay = CassetteSource(path)
    with pytest.raises(CassetteMiss, match=r"no search for 'mercury planet' \(limit 5\)"):
        replay.search("mercury planet")
    with pytest.raises(CassetteMiss, match=r"no search for 'mercury' \(limit 3\)"):
        replay.search("mercury", 3)  # another limit is another call
    with pytest.raises(CassetteMiss, match=r"no fetch of 'Freddie Mercury' \(lead\)"):
        replay.get_article("Freddie Mercury")
    with pytest.raises(CassetteMiss, match="no fetch of 'Mercury \\(element\\)' \\(full\\)"):
        replay.get_article("Mercury (element)", "full")


def test_a_missing_page_replays_as_missing_not_as_a_miss(
    http: responses.RequestsMock, tmp_path: Path
) -> None:
    http.get(API, json=real("mw_exists_false_fv1"))
    http.get(API, json=real("mw_search_python_fv1"))  # the live source's case-folded retry
    path = tmp_path / "c.cassette.jsonl.gz"
    recorder = CassetteRecorder(LiveSource(sleep=lambda s: None), path, header())
    assert recorder.get_article("NonExistentPage_WikiAPI_Test_12345") is None
    recorder.flush()
    assert CassetteSource(path).get_article("NonExistentPage_WikiAPI_Test_12345") is None


def test_two_revisions_of_one_article_show_as_drift_with_the_changed_sentence(
    http: responses.RequestsMock, tmp_path: Path
) -> None:
    lead = element_lead()
    assert OLD_SENTENCE in lead
    a, b = tmp_path / "a.cassette.jsonl.gz", tmp_path / "b.cassette.jsonl.gz"
    record_live(http, a, REV_1, lead, run_id="run-a")
    record_live(http, b, REV_2, lead.replace(OLD_SENTENCE, NEW_SENTENCE), True, run_id="run-b")
    found = drift(read_cassette(a), read_cassette(b))
    assert (found.shared_articles, found.drifted_articles) == (1, 1)
    assert (found.shared_searches, found.drifted_searches) == (1, 1)
    assert found.confounded  # 100% of both drifted, over the 5% threshold
    (article,) = found.articles
    assert (article.a_revisions, article.b_revisions) == ([REV_1], [REV_2])
    assert (article.removed, article.added) == ([OLD_SENTENCE], [NEW_SENTENCE])
    (search,) = found.searches
    assert search.a_hits[0][:2] == ["Mercury", "Mercury (element)"]
    assert search.b_hits[0][:2] == ["Mercury (element)", "Mercury"]
    text = render_drift(found)
    assert f"revision {REV_1} -> {REV_2}" in text
    assert f"  - {OLD_SENTENCE}" in text and f"  + {NEW_SENTENCE}" in text
    assert "CONFOUNDED" in found.line()
    same = drift(read_cassette(a), read_cassette(a))
    assert (same.drifted_articles, same.drifted_searches, same.confounded) == (0, 0, False)


def test_cassette_diff_command_lists_articles_and_searches(
    http: responses.RequestsMock, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lead = element_lead()
    a, b = tmp_path / "a.cassette.jsonl.gz", tmp_path / "b.cassette.jsonl.gz"
    record_live(http, a, REV_1, lead, run_id="run-a")
    record_live(http, b, REV_2, lead.replace(OLD_SENTENCE, NEW_SENTENCE), True, run_id="run-b")
    assert main(["cassette", "diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "drift: 1 of 1 (100.0%) shared articles at different revisions" in out
    assert f"+ {NEW_SENTENCE}" in out and "search 'mercury' (limit 5)" in out
    assert main(["cassette", "diff", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["drifted_articles"] == 1 and data["confounded"] is True


def test_merge_refuses_conflicting_revisions_unless_told_which_wins(
    http: responses.RequestsMock, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lead = element_lead()
    a, b = tmp_path / "a.cassette.jsonl.gz", tmp_path / "b.cassette.jsonl.gz"
    record_live(http, a, REV_1, lead, run_id="run-a", created="2026-07-01")
    record_live(http, b, REV_2, lead.replace(OLD_SENTENCE, NEW_SENTENCE), True, run_id="run-b",
                created="2026-07-08")  # fmt: skip
    both = [read_cassette(b), read_cassette(a)]  # ordered by when they were recorded, not here
    with pytest.raises(MergeConflict, match=r"article 'mercury \(element\)' \(lead\)"):
        merge(both)
    out = tmp_path / "climb.cassette.jsonl.gz"
    assert main(["cassette", "merge", str(a), str(b), "--out", str(out)]) == 1
    assert "pass --prefer latest" in capsys.readouterr().err and not out.exists()
    choices: list[tuple[Prefer, int, str]] = [
        ("latest", REV_2, "Mercury (element)"),
        ("earliest", REV_1, "Mercury"),
    ]
    for prefer, revid, first in choices:
        target = tmp_path / f"{prefer}.cassette.jsonl.gz"
        write_merged(merge(both, prefer), target)
        replay = CassetteSource(target)
        article = replay.get_article("Mercury (element)")
        assert article is not None and article.revision_id == revid
        assert replay.search("mercury")[0].title == first
        merged = read_cassette(target)
        assert len(merged.articles) == 1 and merged.header.merged_from == ["run-a", "run-b"]
    assert main(["cassette", "merge", str(a), str(b), "--out", str(out), "--prefer", "latest"]) == 0
    before = out.read_bytes()
    assert main(["cassette", "merge", str(a), "--out", str(out)]) == 1  # never overwrites
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == before


class Counting:
    """A source answering every title with one fixed revision, with a new fetch time each call."""

    name = "live:en.wikipedia.org"

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        return [SearchHit(title=f"{query} {i}", snippet="s", score=1.0) for i in range(limit)]

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        from datetime import UTC, datetime

        name = title.title()
        return Article(
            title=name, text=f"{name} is a thing. It has a revision.", depth=depth,
            url=f"https://en.wikipedia.org/wiki/{name}", revision_id=7,
            provenance=Provenance(source="live", host="en.wikipedia.org",
                                  fetched_at=datetime.now(UTC)),
        )  # fmt: skip


def test_one_copy_per_revision_and_threads_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.cassette.jsonl.gz"
    recorder = CassetteRecorder(Counting(), path, header())
    titles = [f"t{i}" for i in range(40)]

    def work() -> None:
        for title in titles:
            recorder.get_article(title)
            recorder.get_article(title.upper())  # the same article asked another way
            recorder.search(title, 3)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorder.flush()
    cassette = read_cassette(path)  # parses: no line was torn by another thread
    assert len(cassette.articles) == 40  # 8 threads x 2 spellings x 40 fetches: 40 revisions
    assert len(cassette.fetches) == 40  # "t1" and "T1" fold to one call
    assert len(cassette.searches) == 40
    assert recorder.sha256 == cassette.sha256


def test_lines_are_held_until_flush_then_written_whole(tmp_path: Path) -> None:
    # The runner flushes before it journals each trial: one write a trial, and what a trial
    # the journal holds fetched is on disk. What is held and not flushed is not on disk yet.
    path = tmp_path / "h.cassette.jsonl.gz"
    recorder = CassetteRecorder(Counting(), path, header())
    assert len(read_lines_plain(path)) == 1  # the header is written at once
    recorder.get_article("one")
    recorder.search("one")
    assert len(read_lines_plain(path)) == 1
    size = path.stat().st_size
    recorder.flush()
    assert [next(iter(json.loads(line))) for line in read_lines_plain(path)] == [
        "format", "article", "fetch", "search"
    ]  # fmt: skip
    recorder.flush()  # nothing held: nothing written
    recorder.get_article("one")  # already recorded: nothing new to hold
    recorder.flush()
    assert path.stat().st_size > size and len(read_lines_plain(path)) == 4
    recorder.get_article("two")
    recorder.close()  # close writes what is held
    assert [f.title for f in read_cassette(path).fetches] == ["one", "two"]


def test_a_collecting_recorder_hands_its_trial_to_the_runs_recorder(tmp_path: Path) -> None:
    # Under Ray each trial's worker collects (no file) and the driver's recorder adds what is new:
    # the file is the one a single process would have written.
    alone = tmp_path / "alone.cassette.jsonl.gz"
    single = CassetteRecorder(Counting(), alone, header())
    at = tmp_path / "ray.cassette.jsonl.gz"
    driver = CassetteRecorder(Counting(), at, header())
    trials = [["one", "two"], ["two", "three"], ["one"]]  # trials that refetch what others did
    for titles in trials:
        worker = CassetteRecorder(Counting())  # a fresh collector per trial
        for title in titles:
            worker.get_article(title)
            worker.search(title, 2)
            single.get_article(title)
            single.search(title, 2)
        sent = worker.take()
        assert worker.take() == []  # handed over once
        assert len(sent) == 3 * len(titles)  # article, fetch, search: each trial sends all
        driver.add(sent)
        driver.flush()
    single.close()
    driver.close()
    ray, local = read_cassette(at), read_cassette(alone)
    assert ray.sha256 == local.sha256 == driver.sha256
    assert len(ray.articles) == len(ray.fetches) == len(ray.searches) == 3  # one copy each
    assert worker.path is None and not list(tmp_path.glob("*.tmp"))


def test_a_resumed_recording_drops_a_cut_line_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "r.cassette.jsonl.gz"
    recorder = CassetteRecorder(Counting(), path, header())
    recorder.get_article("one")
    recorder.search("one")
    recorder.flush()
    # A kill mid-write: the file ends in half a line.
    lines = read_lines_plain(path)
    cut = "".join(lines) + '{"search": {"query": "tw'
    path.write_bytes(gzip.compress(cut.encode()))
    with pytest.raises(CassetteError, match=r"r\.cassette\.jsonl\.gz:5: truncated line"):
        CassetteSource(path)
    resumed = CassetteRecorder(Counting(), path, header())
    resumed.get_article("two")
    resumed.flush()
    cassette = read_cassette(path)
    assert [f.title for f in cassette.fetches] == ["one", "two"]
    assert [s.query for s in cassette.searches] == ["one"]


def read_lines_plain(path: Path) -> list[str]:
    from wikiqa.sources.cassette_files import read_lines

    return [line + "\n" for line in read_lines(path)[:-1]]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: [*lines[:2], "not json at all\n", *lines[2:]], r":3: invalid JSON"),
        (lambda lines: [*lines[:-1], lines[-1][:25]], r":4: truncated line"),
        (lambda lines: ['{"format": "wikiqa-snapshot/1"}\n', *lines[1:]], r":1: not a cassette"),
        (lambda lines: [lines[0], lines[2]], r":2: fetch names article \w+, not above it"),
        (lambda lines: [*lines, '{"what": 1}\n'], r":5: not a cassette record"),
        (lambda lines: [*lines, '{"search": {"query": "q"}}\n'], r":5: limit: Field required"),
        (lambda lines: [], r":1: empty cassette"),
    ],
)  # fmt: skip
def test_a_malformed_cassette_is_named_by_file_and_line(
    tmp_path: Path, damage: Any, message: str
) -> None:
    path = tmp_path / "good.cassette.jsonl.gz"
    recorder = CassetteRecorder(Counting(), path, header())
    recorder.get_article("one")  # header, article, fetch
    recorder.search("one")  # search
    recorder.flush()
    lines = read_lines_plain(path)
    assert len(lines) == 4
    for name, data in (
        ("bad.cassette.jsonl", "".join(damage(lines)).encode()),
        ("bad.cassette.jsonl.gz", gzip.compress("".join(damage(lines)).encode())),
    ):
        bad = tmp_path / name
        bad.write_bytes(data)
        with pytest.raises(CassetteError, match=re.escape(str(bad)) + message):
            CassetteSource(bad)


class Leaky(Counting):
    """A source whose text quotes a key (an echoing proxy, say) and a URL with a password."""

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        article = super().get_article(title, depth)
        assert article is not None
        text = f"{article.text} key {FAKE_KEY} at https://user:hunter22@example.org/"
        return article.model_copy(update={"text": text})


def test_no_secret_is_written_to_a_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIKIQA_ANTHROPIC_API_KEY", FAKE_KEY)
    path = tmp_path / "s.cassette.jsonl.gz"
    recorder = CassetteRecorder(Leaky(), path, header())
    recorder.get_article("one")
    recorder.close()
    text = gzip.decompress(path.read_bytes()).decode()
    assert FAKE_KEY not in text and "hunter22" not in text
    assert "key *** at https://***@example.org/" in text
