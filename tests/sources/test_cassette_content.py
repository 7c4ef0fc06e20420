"""Cassette articles are content-addressed, and merging never leaves a broken file.

An article line's id is the hash of its content, checked when the cassette is read: a copy of a
committed cassette with one article's text changed under its old id is refused (file and line),
and a cassette honestly rewritten (each changed article under its new id) has another
`cassette_hash`. `cassette merge` names a title answered with two texts and both cassettes
before it writes anything, and writes its file whole or not at all, never through a link.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from wikiqa.cli.main import main
from wikiqa.sources import Article
from wikiqa.sources.cassette import CassetteSource
from wikiqa.sources.cassette_files import (
    CassetteError,
    article_id,
    article_line,
    read_cassette,
    read_lines,
)
from wikiqa.sources.cassette_merge import MergeConflict, merge, write_merged

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "results" / "runs" / "20261201T103646Z-09-qwen-baseline-c84497.cassette.jsonl.gz"
GENUINE_HASH = "92c5f63c6b4d9989"  # `wikiqa cassette info` of the committed file


def _copy(tmp_path: Path, name: str = "genuine.cassette.jsonl.gz") -> Path:
    target = tmp_path / name
    shutil.copyfile(COMMITTED, target)
    return target


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in read_lines(path) if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    path.write_bytes(gzip.compress(text.encode()))
    return path


def _first_article(records: list[dict[str, Any]]) -> int:
    return next(i for i, r in enumerate(records) if "article" in r)


def _rewritten(source: Path, target: Path, *, keep_id: bool) -> tuple[Path, int, str]:
    """`source` with its first article's text changed: under its old id (a forgery) or under
    the id of the new content, the fetches that name it renamed too (an honest rewrite). The
    target, the changed line's number and the article's title."""
    records = _records(source)
    at = _first_article(records)
    old = records[at]["id"]
    records[at]["article"]["text"] = "Apollo 11 never left the ground."
    if not keep_id:
        new = article_line(Article.model_validate(records[at]["article"]))["id"]
        records[at]["id"] = new
        for r in records:
            if "fetch" in r and r["fetch"]["article"] == old:
                r["fetch"]["article"] = new
    return _write(target, records), at + 1, records[at]["article"]["title"]


def test_the_committed_cassette_loads_with_every_id_its_contents_hash(tmp_path: Path) -> None:
    cassette = read_cassette(_copy(tmp_path))
    assert len(cassette.articles) == 68 and cassette.sha256 == GENUINE_HASH
    assert all(article_id(a) == ident for ident, a in cassette.articles.items())


def test_an_article_rewritten_under_its_old_id_is_refused_by_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged, line, title = _rewritten(_copy(tmp_path), tmp_path / "forged.cassette.jsonl.gz",
                                     keep_id=True)  # fmt: skip
    message = f"{forged}:{line}: article {title!r} does not hash to its id"
    with pytest.raises(CassetteError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_cassette(forged)
    with pytest.raises(CassetteError, match="does not hash to its id"):
        CassetteSource(forged)  # replay refuses it too: it cannot claim to be the genuine run
    assert main(["cassette", "info", str(forged)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{forged}:{line}:" in err and "Traceback" not in err


def test_two_cassettes_differing_in_one_articles_text_have_different_hashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    genuine = _copy(tmp_path)
    rewritten, _, _ = _rewritten(genuine, tmp_path / "other.cassette.jsonl.gz", keep_id=False)
    a, b = read_cassette(genuine), read_cassette(rewritten)
    assert len(a.articles) == len(b.articles) == 68
    assert a.sha256 == GENUINE_HASH and b.sha256 != GENUINE_HASH
    assert main(["cassette", "info", str(rewritten), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cassette_hash"] == b.sha256


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_merge_names_a_title_with_two_texts_and_both_files_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    genuine = _copy(tmp_path)
    other, _, title = _rewritten(genuine, tmp_path / "other.cassette.jsonl.gz", keep_id=False)
    with pytest.raises(MergeConflict) as caught:
        merge([read_cassette(genuine), read_cassette(other)])
    assert f"article {title.lower()!r} (lead) differs between {genuine} and {other}" in str(
        caught.value
    )
    before = _listing(tmp_path)
    out = tmp_path / "merged.cassette.jsonl.gz"
    assert main(["cassette", "merge", str(genuine), str(other), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(genuine) in err and str(other) in err
    assert _listing(tmp_path) == before  # nothing written, no temporary left


def test_merge_of_a_forged_copy_is_refused_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    genuine = _copy(tmp_path)
    forged, line, _ = _rewritten(genuine, tmp_path / "forged.cassette.jsonl.gz", keep_id=True)
    before = _listing(tmp_path)
    out = tmp_path / "merged.cassette.jsonl.gz"
    for order in ([genuine, forged], [forged, genuine]):
        args = ["cassette", "merge", *map(str, order), "--out", str(out), "--prefer", "latest"]
        assert main(args) == 1
        err = capsys.readouterr().err
        assert f"{forged}:{line}: article" in err and "Traceback" not in err
        assert _listing(tmp_path) == before
    # a cassette built in memory with the same flaw is refused by the merge itself
    cassette = read_cassette(genuine)
    ident = next(iter(cassette.articles))
    cassette.articles[ident] = cassette.articles[ident].model_copy(update={"text": "forged"})
    with pytest.raises(CassetteError, match="does not hash to its id"):
        merge([cassette])


def test_the_merged_file_is_never_written_through_a_link_nor_left_half(tmp_path: Path) -> None:
    genuine = _copy(tmp_path)
    lines = merge([read_cassette(genuine)])
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "merged.cassette.jsonl.gz"
    link.symlink_to(victim)
    with pytest.raises(CassetteError, match="is a symbolic link"):
        write_merged(lines, link)
    dangling = tmp_path / "dangling.cassette.jsonl.gz"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(CassetteError, match="is a symbolic link"):
        write_merged(lines, dangling)
    assert victim.read_text() == "keep me\n" and not (tmp_path / "nowhere").exists()
    # lines that would not read back (a fetch naming an article not written): nothing is left
    before = _listing(tmp_path)
    broken = [lines[0], {"fetch": {"title": "X", "depth": "lead", "article": "0" * 16}}]
    out = tmp_path / "broken.cassette.jsonl.gz"
    with pytest.raises(CassetteError, match=f"{out}: the merged cassette does not read back"):
        write_merged(broken, out)
    assert _listing(tmp_path) == before
    good = write_merged(lines, tmp_path / "good.cassette.jsonl.gz")
    assert read_cassette(good).sha256 == GENUINE_HASH and good.stat().st_mode & 0o777 == 0o644
