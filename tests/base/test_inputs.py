"""The bounded reader every file handed to the tool goes through: inflation, nesting and parquet
limits, each refusal one message naming the file."""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
import tracemalloc
import zlib
from pathlib import Path

import pandas as pd
import pytest

from wikiqa import inputs, parquets
from wikiqa.evals.running.runlog import RunLog, RunLogError
from wikiqa.inputs import (
    MAX_DEPTH,
    InputError,
    MiB,
    TooLarge,
    inflate,
    loads,
    parse_jsonl,
)
from wikiqa.parquets import read_parquet


def _bomb(megabytes: int) -> bytes:
    """`megabytes` MiB of spaces, gzip-compressed to about a thousandth of that."""
    packer = zlib.compressobj(9, wbits=31)
    block = b" " * MiB
    return b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()


def test_a_gzip_bomb_is_refused_at_the_cap_without_holding_what_it_inflates_to() -> None:
    bomb = _bomb(64)
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge, match=r"bomb.gz: cassette inflates to more than 4 MiB"):
            inflate(bomb, "bomb.gz", 4 * MiB, "cassette")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MiB  # the cap and a chunk, not 64 MiB


def test_inflate_reads_every_member_and_a_cut_tail_as_far_as_it_goes() -> None:
    two = gzip.compress(b"one\n") + gzip.compress(b"two\n")
    assert inflate(two, "f.gz", MiB) == b"one\ntwo\n"
    text = b"".join(b"line %d\n" % i for i in range(5000))
    whole = gzip.compress(text)
    cut = inflate(whole[: len(whole) // 2], "f.gz", MiB)
    assert 0 < len(cut) < len(text) and text.startswith(cut)
    with pytest.raises(InputError, match=r"f.gz: corrupt gzip data after line 0"):
        inflate(whole[:10] + b"\xff" * 40, "f.gz", MiB)


def test_inflate_passes_data_exactly_at_the_cap() -> None:
    data = b"a" * MiB
    assert inflate(gzip.compress(data), "f.gz", MiB) == data
    with pytest.raises(TooLarge):
        inflate(gzip.compress(data + b"a"), "f.gz", MiB)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_deeper_than_the_cap_is_refused_naming_the_place() -> None:
    assert loads(_nested(MAX_DEPTH), "f:1") == json.loads(_nested(MAX_DEPTH))
    with pytest.raises(InputError, match=rf"^f:1: JSON nested deeper than {MAX_DEPTH} levels$"):
        loads(_nested(MAX_DEPTH + 1), "f:1")
    deep_dict = '{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    with pytest.raises(InputError, match="nested deeper"):
        loads(deep_dict, "f:1")
    # past the interpreter's recursion limit json.loads itself gives up: the same message
    with pytest.raises(InputError, match=r"^f:2: JSON nested deeper than 64 levels$"):
        loads("[" * 100_000, "f:2")
    # many brackets side by side are not depth
    wide = "[" + ",".join(["[]"] * 1000) + "]"
    assert len(loads(wide, "f:3")) == 1000
    with pytest.raises(InputError, match=r"^f:4: invalid JSON: Exceeds the limit"):
        loads("1" * 5000, "f:4")
    with pytest.raises(json.JSONDecodeError):  # syntax is left to the caller's wording
        loads("[1,", "f:5")


def test_a_deep_line_in_a_jsonl_file_names_its_line() -> None:
    data = b'{"ok": 1}\n' + b"[" * 100_000 + b"\n"
    with pytest.raises(InputError, match=r"^tasks.jsonl:2: JSON nested deeper than 64 levels$"):
        parse_jsonl(data, "tasks.jsonl")


def _run_frame() -> pd.DataFrame:
    return pd.DataFrame({"task_id": ["a", "b"], "dimension": "correctness", "verdict": "pass"})


def test_read_parquet_reads_a_run_and_names_what_is_not_one(tmp_path: Path) -> None:
    good = tmp_path / "run.parquet"
    _run_frame().to_parquet(good)
    assert read_parquet(good, "run", ("dimension",))["task_id"].tolist() == ["a", "b"]
    text = tmp_path / "notes.parquet"
    text.write_text("hello, not a parquet\n")
    passwd = tmp_path / "passwd.parquet"
    passwd.symlink_to("/etc/passwd")
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[:-100])
    for path in (text, passwd, cut):
        with pytest.raises(InputError, match=rf"^{path}: not a parquet run file \("):
            read_parquet(path)
    with pytest.raises(InputError, match=rf"^{good}: not a run: no outcome, trial column$"):
        read_parquet(good, "run", ("outcome", "dimension", "trial"))


def test_read_parquet_refuses_devices_fifos_and_too_many_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo.parquet"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=rf"^{fifo}: run is a FIFO, not a regular file"):
        read_parquet(fifo)
    zero = tmp_path / "zero.parquet"
    zero.symlink_to("/dev/zero")
    with pytest.raises(InputError, match="run is a character device"):
        read_parquet(zero)
    good = tmp_path / "run.parquet"
    _run_frame().to_parquet(good)
    monkeypatch.setattr(parquets, "MAX_PARQUET_ROWS", 1)
    with pytest.raises(InputError, match=r"run holds 2 rows .* over the 1 rows"):
        read_parquet(good)


def test_a_run_log_that_is_a_fifo_or_a_device_is_refused_by_name(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo" / "runs" / "r1.log.jsonl"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    with pytest.raises(RunLogError, match=rf"^{fifo}: .*FIFO"):
        RunLog.load(tmp_path / "fifo", "r1")
    zero = tmp_path / "zero" / "runs" / "r1.log.jsonl"
    zero.parent.mkdir(parents=True)
    zero.symlink_to("/dev/zero")  # the run appends to its log: a link is refused as such
    with pytest.raises(RunLogError, match=rf"^{zero}: a symlink"):
        RunLog.load(tmp_path / "zero", "r1")
    with pytest.raises(RunLogError, match="no such run log"):
        RunLog.load(tmp_path / "none", "r1")


def test_a_file_over_the_limit_is_refused_from_its_size_without_reading_it(tmp_path: Path) -> None:
    sparse = tmp_path / "huge.jsonl"
    with sparse.open("wb") as fh:  # 10 GiB on paper, nothing on disk
        fh.truncate(10 * 1024 * MiB)
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge, match=r"huge.jsonl: task file is larger than 64 MiB"):
            inputs.read_bounded(sparse, 64 * MiB, "task file")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 1000)
    assert inputs.read_bounded(exact, 1000) == b"x" * 1000
    with pytest.raises(TooLarge):
        inputs.read_bounded(exact, 999)


def test_appends_never_go_through_a_symbolic_link(tmp_path: Path) -> None:
    target = tmp_path / "bashrc"
    target.write_text("export PATH\n")
    link = tmp_path / "journal.jsonl"
    link.symlink_to(target)
    with pytest.raises(OSError, match="a symbolic link; refusing to write through it") as err:
        inputs.open_append(link)
    assert err.value.filename == str(link)
    dangling = tmp_path / "changelog.jsonl"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OSError, match="symbolic link"):
        inputs.open_append(dangling)
    assert target.read_text() == "export PATH\n" and not (tmp_path / "nowhere").exists()
    fd = inputs.open_append(tmp_path / "new.jsonl")
    os.write(fd, b"{}\n")
    os.close(fd)
    assert (tmp_path / "new.jsonl").read_text() == "{}\n"


def test_a_parquet_is_handed_to_pyarrow_as_bytes_it_owns(tmp_path: Path) -> None:
    """pyarrow reads (and releases) a Python file object or a buffer over Python bytes on its own
    threads, taking the GIL; one doing so while the interpreter exits aborts the process after
    its work is done (exit 134). `arrow_source` copies the bytes into pyarrow's memory: the read
    holds no reference to the Python object, and the frame is the same."""

    good = tmp_path / "run.parquet"
    _run_frame().to_parquet(good)
    data = good.read_bytes()
    held = sys.getrefcount(data)
    source = parquets.arrow_source(data)
    assert sys.getrefcount(data) == held
    assert source.read() == data
    python_file = io.BytesIO(data)  # what it was handed before: it holds the bytes
    assert sys.getrefcount(data) == held + 1
    python_file.close()
    pd.testing.assert_frame_equal(read_parquet(good), pd.read_parquet(good))
