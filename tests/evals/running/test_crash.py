"""Kill an eval with SIGKILL partway, resume it: nothing finished is lost or redone, and the
final parquet equals an uninterrupted run's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.runlogs import trial_keys as _keys
from wikiqa.evals import RunConfig, run_eval

TRIALS, TASKS = 2, 12
ARGS = ["--trials", str(TRIALS), "--limit", str(TASKS), "--model", "extractive:delay=0.05",
        "--concurrency", "2", "--no-cache", "--experiment", "crash"]  # fmt: skip
RUN_SPECIFIC = ["run_id", "created_at", "latency_ms", "git_sha"]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_mid_run_then_resume(tmp_path: Path, session_home: Path) -> None:
    out = tmp_path / "out"
    env = os.environ | {"WIKIQA_HOME": str(session_home)}
    cli = [sys.executable, "-m", "wikiqa.cli", "eval"]
    proc = subprocess.Popen(
        [*cli, *ARGS, "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    journal = None
    while time.monotonic() < deadline:
        logs = list((out / "runs").glob("*.log.jsonl")) if (out / "runs").exists() else []
        if logs and len(_keys(logs[0])) >= 6:
            journal = logs[0]
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    assert journal is not None, "the run never got going"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done = _keys(journal)
    total = TRIALS * TASKS
    assert 6 <= len(done) < total, "the kill must land partway"

    run_id = journal.name.removesuffix(".log.jsonl")
    resumed = subprocess.run(
        [*cli, *ARGS, "--resume", run_id, "--out", str(out)],  # the same command, resumed
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{total - len(set(done))} trials run now" in resumed.stdout
    final = _keys(journal)
    assert len(set(final)) == total
    assert all(final.count(key) == 1 for key in done)  # nothing finished was redone

    parquet = next((out / "runs").glob("*.parquet"))
    clean = run_eval(RunConfig(trials=TRIALS, limit=TASKS, model="extractive:delay=0.05", concurrency=2, cache=False,
                               experiment="crash", out=tmp_path / "clean"), progress=False)  # fmt: skip
    a = pd.read_parquet(parquet).drop(columns=RUN_SPECIFIC)
    b = pd.read_parquet(clean.parquet).drop(columns=RUN_SPECIFIC)
    pd.testing.assert_frame_equal(a, b)
