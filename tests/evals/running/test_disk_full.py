"""A disk that fills during a run: one line naming the file, no traceback, no temporary file left."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wikiqa.cli import main
from wikiqa.sources import SnapshotSource


def test_a_parquet_that_cannot_be_written_leaves_no_temporary_and_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = pd.DataFrame.to_parquet

    def half_then_full(self: pd.DataFrame, path: Any, *args: Any, **kwargs: Any) -> None:
        Path(path).write_bytes(b"PAR1 half a file")  # what a write cut short leaves
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28]")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", half_then_full)
    code = main(["eval", "--trials", "1", "--limit", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1
    (line,) = err.splitlines()[-1:]
    assert line.startswith("wikiqa: error: ") and line.endswith(
        ".parquet: cannot write the run's results: No space left on device"
    )
    assert "Traceback" not in err
    assert list((tmp_path / "runs").glob("*.parquet*")) == []  # neither the run nor its temporary
    monkeypatch.setattr(pd.DataFrame, "to_parquet", real)
    (log,) = (tmp_path / "runs").glob("*.log.jsonl")  # the trials are kept: resume writes it
    run_id = log.name.removesuffix(".log.jsonl")
    # a resume takes nothing from the log: run with other parameters, it is refused, named
    assert main(["eval", "--resume", run_id, "--out", str(tmp_path)]) == 1
    refused = capsys.readouterr().err
    assert "was made with trials=1, limit=1; this run sets trials=3, limit=None" in refused
    resumed = ["eval", "--resume", run_id, "--trials", "1", "--limit", "1", "--out", str(tmp_path)]
    assert main(resumed) == 0
    assert [p.name for p in (tmp_path / "runs").glob("*.parquet")] == [f"{run_id}.parquet"]


@pytest.mark.slow
@pytest.mark.parametrize(("limit", "where"), [(4_000, "out"), (60_000, "index")])
def test_a_run_on_a_full_disk_ends_in_one_line(
    tmp_path: Path, snapshot: SnapshotSource, session_home: Path, limit: int, where: str
) -> None:
    """A real failed write, from the kernel: RLIMIT_FSIZE makes every write past `limit` bytes
    of one file fail (EFBIG), as a full disk fails it (ENOSPC). The run's journal and cassette
    pass 4 kB within a few trials; building a snapshot index in an empty home passes 60 kB at
    once."""

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", "eval", "--trials", "1", "--limit", "8",
         "--no-cache", "--out", str(out)],
        preexec_fn=small_files, capture_output=True, text=True, timeout=120, check=False,
        env=os.environ | {"WIKIQA_HOME": str(tmp_path if where == "index" else session_home)},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("wikiqa: error: ")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    named = str(out) if where == "out" else "index"  # the journal or the cassette, or the index
    assert named in errors[0] and ("File too large" in errors[0] or "disk I/O error" in errors[0])
    assert list(out.rglob("*.tmp")) == []
