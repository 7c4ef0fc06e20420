from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikiqa.sources import (
    Article,
    Depth,
    Provenance,
    RecordingSource,
    SearchHit,
    SnapshotError,
    SnapshotSource,
)


class FakeLive:
    """A stand-in for LiveSource: redirects one title, returns revision ids and infoboxes."""

    name = "live:en.wikipedia.org"

    def __init__(self) -> None:
        self.fetches: list[str] = []

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        return [SearchHit(title="Mount Everest", snippet="highest", score=1.0)]

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        self.fetches.append(title)
        if title.lower() not in {"everest", "mount everest"}:
            return None
        return Article(
            title="Mount Everest",
            text="Mount Everest is Earth's highest mountain above sea level.",
            url="https://en.wikipedia.org/wiki/Mount_Everest",
            revision_id=1254471234,
            infobox={"elevation_m": "8848.86"},
            depth=depth,
            provenance=Provenance(source="live", host="en.wikipedia.org"),
        )


def test_recorded_articles_replay_as_identical_text(tmp_path: Path) -> None:
    path = tmp_path / "suite.jsonl"
    recorder = RecordingSource(FakeLive(), path)
    original = recorder.get_article("Everest")
    assert recorder.get_article("nope") is None
    assert recorder.search("everest")[0].title == "Mount Everest"
    replay = SnapshotSource(path, home=tmp_path / "home")
    info = replay.info()
    assert info.articles == 1 and info.recorded_from == "live:en.wikipedia.org"
    replayed = replay.get_article("Everest")  # through the recorded redirect
    assert original is not None and replayed is not None
    assert replayed.text == original.text
    assert replayed.revision_id == original.revision_id
    assert replayed.infobox == original.infobox
    assert replayed.provenance.snapshot_sha256 == replay.sha256


def test_reopening_appends_only_new_articles_and_keeps_old_ones(tmp_path: Path) -> None:
    path = tmp_path / "suite.jsonl"
    RecordingSource(FakeLive(), path).get_article("Mount Everest")
    before = path.read_text()
    again = RecordingSource(FakeLive(), path)
    assert again.has("mount everest") and not again.has("mount everest", "full")
    again.get_article("Mount Everest")
    assert path.read_text() == before
    again.get_article("Mount Everest", "full")
    lines = path.read_text().splitlines()
    assert path.read_text().startswith(before)
    assert [json.loads(line).get("depth") for line in lines[1:]] == ["lead", "full"]


def test_refuses_to_append_to_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text('{"something": "else"}\n')
    with pytest.raises(SnapshotError, match=r"other\.jsonl:1: not a snapshot"):
        RecordingSource(FakeLive(), path)
    assert path.read_text() == '{"something": "else"}\n'
