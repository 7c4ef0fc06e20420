"""A Ray of the executor's own (`--executor ray`, no RAY_ADDRESS): every listening socket of the
run's process tree (the driver, the GCS, the raylet, its agents and workers), read with psutil
while trials are running, is on 127.0.0.1; a local model is served by `WIKIQA_SERVERS_PER_NODE`
servers of `WIKIQA_SERVER_THREADS` threads. And `ray:auto`, which follows a file any user's
`ray start` rewrites, is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil  # (installed with ipykernel; no stubs pinned)
import pytest

from tests.evals.running.cluster import listeners, loopback
from wikiqa.cli import main

pytestmark = pytest.mark.ray
pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[3]


def test_a_ray_of_our_own_listens_on_loopback_only(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    args = [sys.executable, "-m", "wikiqa.cli", "eval", "--executor", "ray", "--limit", "8",
            "--trials", "1", "--model", "extractive:delay=2", "--no-cache", "--concurrency", "2",
            "--out", str(tmp_path)]  # fmt: skip
    child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    seen: dict[tuple[str, int], str] = {}
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and child.poll() is None:
            journals = list((tmp_path / "runs").glob("*.log.jsonl"))
            if journals and len(journals[0].read_text().splitlines()) >= 2:
                seen = listeners(psutil.Process(child.pid))  # trials are running: Ray is up
                break
            time.sleep(0.5)
        _, err = child.communicate(timeout=600)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 0, err[-3000:]
    names = set(seen.values())
    assert {"gcs_server", "raylet"} <= names, seen  # the cluster was up when we looked
    beyond = {where: name for where, name in seen.items() if not loopback(where[0])}
    assert not beyond, f"listening beyond loopback: {beyond}"


def test_ray_auto_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "--limit", "1", "--trials", "1", "--executor", "ray:auto",
                 "--out", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 3 and len(err.strip().splitlines()) == 1
    assert "ray:auto" in err and "ray://<host>:<port>" in err
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def _servers(root: psutil.Process) -> list[list[str]]:
    """The command lines of the llama.cpp servers in root's process tree."""
    found = []
    for process in root.children(recursive=True):
        try:
            command = process.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if "wikiqa.models.local.server" in command:
            found.append(command)
    return found


@pytest.mark.local
def test_a_node_runs_its_servers_per_node_with_their_threads_one_trial_each(
    tmp_path: Path,
) -> None:
    """SmolLM2 under Ray with WIKIQA_SERVERS_PER_NODE=2 and WIKIQA_SERVER_THREADS=1: the node
    starts two servers of one thread on its loopback (a host actor each, taking one trial at a
    time), whatever --concurrency says."""
    pytest.importorskip("llama_cpp")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {
        "WIKIQA_SERVERS_PER_NODE": "2", "WIKIQA_SERVER_THREADS": "1",
    }  # fmt: skip
    args = [sys.executable, "-m", "wikiqa.cli", "eval", "--executor", "ray", "--limit", "4",
            "--trials", "1", "--model", "local", "--read-first", "1", "--no-cache",
            "--concurrency", "8", "--timeout", "900", "--out", str(tmp_path)]  # fmt: skip
    child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    seen: list[list[str]] = []
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and child.poll() is None:
            servers = _servers(psutil.Process(child.pid))
            if len(servers) > len(seen):
                seen = servers
            time.sleep(0.5)
        out, err = child.communicate(timeout=900)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 0, err[-3000:]
    assert "4 trials run now" in out
    assert len(seen) == 2, seen
    for command in seen:
        assert command[command.index("--n_threads") + 1] == "1"
        assert command[command.index("--host") + 1] == "127.0.0.1"
