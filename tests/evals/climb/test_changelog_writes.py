"""The change log is written whole or not at all, and never through a symbolic link.

Every test works on a copy of the committed `results/changelog.jsonl` (and `CHANGELOG.md`) in
tmp_path: a full disk part-way through the append leaves both files byte for byte as they were,
a link at either name is refused with its target untouched, a log whose last line was cut by an
interrupted write is named by file and line, and a recording run checks all that before its
first trial.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from pathlib import Path

import pytest

from wikiqa.evals import RunConfig
from wikiqa.evals.climb import changelog, evaluate
from wikiqa.evals.climb.changelog import ChangelogError, ChangelogRow

RESULTS = Path(__file__).resolve().parents[3] / "results"
# The committed log's rows, counted from the file: every recorded step adds one.
COMMITTED_ROWS = sum(
    1 for line in (RESULTS / "changelog.jsonl").read_text(encoding="utf-8").splitlines() if line
)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for name in ("changelog.jsonl", "CHANGELOG.md"):
        shutil.copyfile(RESULTS / name, folder / name)
    return folder


def _new_row(out: Path) -> ChangelogRow:
    return changelog.read(out)[-1].model_copy(update={"run_id": "20270101T000000Z-new-row"})


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.is_symlink()}


def test_an_append_adds_one_whole_line_and_regenerates_the_markdown(out: Path) -> None:
    before = (out / "changelog.jsonl").read_bytes()
    assert len(changelog.read(out)) == COMMITTED_ROWS
    changelog.append(out, _new_row(out))
    after = (out / "changelog.jsonl").read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    rows = changelog.read(out)
    assert len(rows) == COMMITTED_ROWS + 1 and rows[-1].run_id == "20270101T000000Z-new-row"
    markdown = (out / "CHANGELOG.md").read_text()
    assert markdown.count("\n| ") == 1 + COMMITTED_ROWS + 1  # the head, then one per row
    assert (out / "CHANGELOG.md").stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in out.iterdir()) == ["CHANGELOG.md", "changelog.jsonl"]


def test_a_full_disk_mid_append_leaves_both_files_byte_identical(
    out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _snapshot(out)
    row = _new_row(out)
    real_write = os.write
    calls: list[int] = []

    def disk_fills(fd: int, data: bytes | memoryview) -> int:
        if b"20270101T000000Z-new-row" not in bytes(data) and not calls:
            return real_write(fd, data)
        calls.append(len(data))
        if len(calls) == 1:  # the first half fits, then the disk is full
            return real_write(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", disk_fills)
    with pytest.raises(ChangelogError) as caught:
        changelog.append(out, row)
    monkeypatch.undo()
    assert len(calls) == 2  # half a line was on disk before the failure
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{out / 'changelog.jsonl'}: ")
    assert "No space left on device" in message
    assert _snapshot(out) == before  # no partial line, no temporary left, markdown untouched
    assert len(changelog.read(out)) == COMMITTED_ROWS
    changelog.append(out, row)  # the disk has room again: the next append is whole
    assert len(changelog.read(out)) == COMMITTED_ROWS + 1


def test_a_markdown_link_is_refused_and_its_target_untouched(out: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    (out / "CHANGELOG.md").unlink()
    (out / "CHANGELOG.md").symlink_to(victim)
    jsonl = (out / "changelog.jsonl").read_bytes()
    for write in (lambda: changelog.append(out, _new_row(out)),
                  lambda: changelog.render_markdown(out)):  # fmt: skip
        with pytest.raises(ChangelogError, match=r"CHANGELOG.md: is a symbolic link; refusing"):
            write()
    assert victim.read_text() == "not yours\n" and (out / "changelog.jsonl").read_bytes() == jsonl
    assert (out / "CHANGELOG.md").is_symlink()


def test_a_jsonl_link_is_refused_and_its_target_untouched(out: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.jsonl"
    shutil.copyfile(out / "changelog.jsonl", victim)
    target = victim.read_bytes()
    (out / "changelog.jsonl").unlink()
    (out / "changelog.jsonl").symlink_to(victim)
    with pytest.raises(ChangelogError, match=r"changelog.jsonl: is a symbolic link; refusing"):
        changelog.append(out, _new_row_from(target))
    with pytest.raises(ChangelogError, match=r"changelog.jsonl: is a symbolic link"):
        changelog.read(out)
    assert victim.read_bytes() == target
    # a dangling link is no better: nothing is created at its target
    (out / "changelog.jsonl").unlink()
    (out / "changelog.jsonl").symlink_to(tmp_path / "planted.jsonl")
    with pytest.raises(ChangelogError, match="symbolic link"):
        changelog.append(out, _new_row_from(target))
    assert not (tmp_path / "planted.jsonl").exists()


def test_a_cut_last_line_is_named_and_checked_before_any_trial(
    out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = out / "changelog.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines()[-1][:100])  # an older writer killed mid-line
    cut = path.read_bytes()
    message = (
        f"{path}:{COMMITTED_ROWS + 1}: the last line is cut short (the file ends mid-line: a "
        "write was interrupted)"
    )
    with pytest.raises(ChangelogError) as caught:
        changelog.read(out)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    with pytest.raises(ChangelogError, match="the last line is cut short"):
        changelog.append(out, _new_row_from(whole))
    assert path.read_bytes() == cut

    def no_trials(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trial ran before the change log was checked")

    # (the package exports a function named `record`: the module is reached by its full name)
    monkeypatch.setattr(sys.modules["wikiqa.evals.climb.record"], "run_eval", no_trials)
    with pytest.raises(ChangelogError, match="the last line is cut short"):
        evaluate(RunConfig(suite="public", out=out), "record")


def _new_row_from(jsonl: bytes) -> ChangelogRow:
    return ChangelogRow.model_validate_json(jsonl.splitlines()[-1])


def test_a_whole_last_row_without_its_newline_gets_one_before_the_next(out: Path) -> None:
    path = out / "changelog.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert len(changelog.read(out)) == COMMITTED_ROWS
    changelog.append(out, _new_row(out))
    assert len(changelog.read(out)) == COMMITTED_ROWS + 1
    assert path.read_bytes().endswith(b"}\n") and b"}{" not in path.read_bytes()
