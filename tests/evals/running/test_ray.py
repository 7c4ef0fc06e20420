"""The Ray executor on a real two-node cluster on loopback, started with `ray start` (`make
test-ray`): the same verdicts as the local executor, trial for trial; a worker killed mid-trial
has that trial run again and journaled once; a driver killed mid-run resumes with only what is
missing. The SmolLM2 comparison (one server per node) is also marked `local`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import psutil  # (installed with ipykernel; no stubs pinned)
import pytest

from tests.evals.running.cluster import Cluster, listeners, loopback, loopback_cluster
from wikiqa.evals import RunConfig, RunOutcome, run_eval
from wikiqa.sources.cassette_files import read_cassette

pytestmark = pytest.mark.ray
pytest.importorskip("ray")

# What differs between two runs of the same trials by design: ids, times, and where each trial
# ran. The cassette's hash is compared: the driver records what the workers' sources answered.
ROOT = Path(__file__).resolve().parents[3]
RUN_SPECIFIC = ["run_id", "created_at", "latency_ms", "git_sha", "node"]
TOKEN_COUNTS = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                "estimated_cost_usd"]  # fmt: skip
CLI = [sys.executable, "-m", "wikiqa.cli", "eval"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, session_home: Path) -> Iterator[Cluster]:
    # Every driver is a `wikiqa eval` process with the cluster's environment (its token):
    # Ray reads its auth settings once, at import.
    with loopback_cluster(tmp_path_factory.mktemp("ray"), session_home) as running:
        yield running


def eval_cli(
    cluster: Cluster, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=cluster.env | (env or {}), capture_output=True,
                          text=True, timeout=900, check=False, cwd=cwd)  # fmt: skip


def same_trials(a: Path, b: Path) -> None:
    left = pd.read_parquet(a).drop(columns=RUN_SPECIFIC)
    right = pd.read_parquet(b).drop(columns=RUN_SPECIFIC)
    pd.testing.assert_frame_equal(left, right)


def keys(log: Path) -> list[tuple[str, int]]:
    """The (task, trial) of every trial line in a run's log (runs/RUN_ID.log.jsonl), in order; a
    line the driver was writing when killed is skipped."""
    found = []
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("kind") == "trial":
            found.append((entry["record"]["task_id"], entry["record"]["trial"]))
    return found


def run_logs(out: Path) -> list[Path]:
    return sorted((out / "runs").glob("*.log.jsonl")) if out.exists() else []


def local_run(tmp_path: Path, **fields: Any) -> RunOutcome:
    return run_eval(RunConfig(**fields, out=tmp_path / "local"), progress=False)


def test_the_cluster_listens_on_loopback_only(cluster: Cluster, tmp_path: Path) -> None:
    """Every listening socket of both nodes (the GCS, the raylets, their agents, the metrics
    exporters, the Ray client server, the workers) and of a driver, read with psutil while its
    trials run, is on 127.0.0.1: the executor's own Ray's test (test_ray_loopback), on the
    cluster."""
    args = [*CLI, "--executor", f"ray:{cluster.gcs}", "--limit", "6", "--trials", "1", "--model",
            "extractive:delay=2", "--no-cache", "--concurrency", "2", "--out", str(tmp_path)]  # fmt: skip
    driver = subprocess.Popen(args, cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    seen: dict[tuple[str, int], str] = {}
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and driver.poll() is None:
            logs = run_logs(tmp_path)
            if logs and len(logs[0].read_text().splitlines()) >= 2:  # trials are running
                for pid in [*cluster.pids, driver.pid]:
                    seen |= listeners(psutil.Process(pid))
                break
            time.sleep(0.5)
        _, err = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert driver.returncode == 0, err[-3000:]
    names = set(seen.values())
    assert {"gcs_server", "raylet"} <= names, seen
    assert sum(name == "raylet" for name in seen.values()) >= 4, seen  # two ports a node
    beyond = {where: name for where, name in seen.items() if not loopback(where[0])}
    assert not beyond, f"listening beyond loopback: {beyond}"


def test_cli_on_a_two_node_cluster_matches_local(cluster: Cluster, tmp_path: Path) -> None:
    """`wikiqa eval --executor ray://127.0.0.1:PORT`: both nodes take trials, and the verdicts
    are the local executor's, trial for trial."""
    args = ["--limit", "8", "--trials", "1", "--model", "extractive:delay=0.2", "--no-cache",
            "--concurrency", "4", "--experiment", "ray"]  # fmt: skip
    done = eval_cli(cluster, *args, "--executor", cluster.client, "--out", str(tmp_path / "ray"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "8 trials run now" in done.stdout
    parquet = next((tmp_path / "ray" / "runs").glob("*.parquet"))
    assert pd.read_parquet(parquet)["node"].nunique() == 2  # both nodes ran trials
    local = local_run(tmp_path, limit=8, trials=1, model="extractive:delay=0.2", cache=False,
                      concurrency=4, experiment="ray")  # fmt: skip
    same_trials(parquet, local.parquet)  # the cassette's hash too
    ray_cassette = read_cassette(next((tmp_path / "ray" / "runs").glob("*.cassette.jsonl.gz")))
    assert ray_cassette.sha256 == local.meta.cassette_hash and len(ray_cassette.fetches) > 8


def _trial_workers() -> list[int]:
    """Ray worker processes running a trial task now (Ray titles them `ray::_run_trial`)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if cmdline.read_bytes().startswith(b"ray::_run_trial"):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def test_a_worker_killed_mid_trial_is_retried_and_journaled_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    args = ["--limit", "6", "--trials", "2", "--model", "extractive:delay=0.3", "--no-cache",
            "--concurrency", "2", "--experiment", "kill"]  # fmt: skip
    driver = subprocess.Popen(
        [*CLI, *args, "--executor", f"ray:{cluster.gcs}", "--out", str(out)], env=cluster.env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and driver.poll() is None:
        logs = run_logs(out)
        busy = _trial_workers()
        if logs and keys(logs[0]) and busy:  # the run is going: kill one mid-trial
            os.kill(busy[0], signal.SIGKILL)
            killed = busy[0]
        time.sleep(0.05)
    stdout, stderr = driver.communicate(timeout=300)
    assert killed is not None, "no trial was caught running"
    assert driver.returncode == 0, stderr[-3000:]  # no infrastructure error: Ray retried it
    assert "12 trials run now" in stdout
    found = keys(run_logs(out)[0])
    assert len(found) == len(set(found)) == 12  # every trial once, the killed one included
    local = local_run(tmp_path, limit=6, trials=2, model="extractive:delay=0.3", cache=False,
                      concurrency=2, experiment="kill")  # fmt: skip
    same_trials(next((out / "runs").glob("*.parquet")), local.parquet)


def test_a_killed_driver_resumes_with_only_what_is_missing(
    cluster: Cluster, tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    args = ["--limit", "10", "--trials", "2", "--model", "extractive:delay=0.3", "--no-cache",
            "--concurrency", "2", "--experiment", "crash", "--executor", cluster.client]  # fmt: skip
    driver = subprocess.Popen([*CLI, *args, "--out", str(out)], env=cluster.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    journal = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None:
        logs = run_logs(out)
        if logs and len(keys(logs[0])) >= 4:
            journal = logs[0]
            break
        time.sleep(0.05)
    assert journal is not None, "the run never got going"
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    done = set(keys(journal))
    assert 4 <= len(done) < 20
    run_id = journal.name.removesuffix(".log.jsonl")
    resumed = subprocess.run(  # a resume names the parameters the run was made with
        [*CLI, *args, "--resume", run_id, "--out", str(out)],
        env=cluster.env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"{20 - len(done)} trials run now" in resumed.stdout
    final = keys(journal)
    assert len(set(final)) == 20 and all(final.count(k) == 1 for k in done)


@pytest.mark.local
def test_smollm2_one_server_per_node_matches_local(cluster: Cluster, tmp_path: Path) -> None:
    """The real local model: under Ray each node's host starts its own SmolLM2 server; the
    verdicts, and the recorded model spec, are the local executor's given the same server
    history. llama.cpp reuses the KV cache of a prompt's longest prefix with the last one it
    served, and a prefill split at another point can round differently: a server that has
    answered another task first may decode another greedy token. So each task runs locally on a
    fresh server too, as each node's server is fresh for the one trial it serves."""
    pytest.importorskip("llama_cpp")
    args = ["--model", "local", "--trials", "1", "--no-cache", "--read-first", "1",
            "--concurrency", "2", "--experiment", "smollm2"]  # fmt: skip
    # two trials in flight: each node's host takes one (a host serves one trial at a time)
    lines = (ROOT / "experiments" / "suite" / "dev.jsonl").read_text().splitlines()[:2]
    suites = []
    for i, line in enumerate(lines):
        suites.append(tmp_path / f"task{i}.jsonl")
        suites[-1].write_text(line + "\n")
    both = tmp_path / "both.jsonl"
    both.write_text("\n".join(lines) + "\n")
    runs = [("local", suite, tmp_path / f"local{i}") for i, suite in enumerate(suites)]
    runs.append((f"ray:{cluster.gcs}", both, tmp_path / "ray"))
    # No call may time out and be retried: a retry resends a prompt the server may have
    # half-evaluated, another KV-cache history, so on a busy machine (other models on the same
    # cores) a 60 s timeout made the two sides decode differently. The run's configuration
    # carries the timeout to every node.
    for executor, suite, out in runs:
        done = eval_cli(cluster, *args, "--suite", str(suite), "--executor", executor,
                        "--out", str(out), "--timeout", "900")  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert "0 served from cache" in done.stdout
    frames = [pd.read_parquet(next((out / "runs").glob("*.parquet"))) for _, _, out in runs]
    for frame in frames:
        assert set(frame["model"]) == {"openai:smollm2-135m-instruct@http://127.0.0.1:8080/v1"}
        assert not frame["infra_error"].any() and frame["model_calls"].sum() > 0
    assert frames[-1]["node"].nunique() == 2  # one trial on each node's own server
    # each local run saw one task, the Ray run both: their suites and cassettes differ. The
    # token counts are left out: under full load, once in five runs, a rejected submission the
    # model wrote along the way decoded 6 tokens shorter from the same 1,278-token prompt on a
    # fresh server (llama.cpp's greedy decoding is not bit-stable on a busy CPU), while the
    # answers, citations, calls, signals and verdicts were the local run's
    suite_columns = [*RUN_SPECIFIC, "suite", "suite_hash", "cassette_hash", *TOKEN_COUNTS]
    local = pd.concat(frames[:-1]).drop(columns=suite_columns)
    ray = frames[-1].drop(columns=suite_columns)
    key = ["task_id", "trial", "dimension"]
    pd.testing.assert_frame_equal(
        local.sort_values(key).reset_index(drop=True), ray.sort_values(key).reset_index(drop=True)
    )


def test_a_replayed_cassette_reaches_the_workers_through_the_object_store(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The cassette is named by a path relative to the driver's folder, which the nodes (started
    from another folder) cannot resolve: the replay runs on both nodes all the same, with the
    recorded run's verdicts, because the driver ships what it read. Each model call waits 0.2 s
    (each node has one CPU): a trial that took milliseconds could all be done by the first node
    before the second node's worker was up, as happened once under full load."""
    slow = "extractive:delay=0.2"
    recorded = local_run(tmp_path, limit=6, trials=1, model=slow, cache=False, experiment="rec")
    driver = tmp_path / "driver"
    driver.mkdir()
    cassette = next((tmp_path / "local" / "runs").glob("*.cassette.jsonl.gz"))
    (driver / "replay.cassette.jsonl.gz").write_bytes(cassette.read_bytes())
    assert not (ROOT / "replay.cassette.jsonl.gz").exists()  # where the nodes would look
    args = ["--limit", "6", "--trials", "1", "--model", slow, "--no-cache", "--concurrency", "2",
            "--source", "cassette:replay.cassette.jsonl.gz", "--executor", cluster.client,
            "--out", str(tmp_path / "ray"), "--experiment", "rec"]  # fmt: skip
    done = eval_cli(cluster, *args, env={"WIKIQA_ROOT": str(ROOT)}, cwd=driver)
    assert done.returncode == 0, done.stderr[-3000:]
    replayed = pd.read_parquet(next((tmp_path / "ray" / "runs").glob("*.parquet")))
    assert replayed["node"].nunique() == 2 and not replayed["infra_error"].any()
    original = pd.read_parquet(recorded.parquet)
    key = ["task_id", "trial", "dimension"]
    columns = [*key, "answer", "verdict", "passed"]
    pd.testing.assert_frame_equal(
        original[columns].sort_values(key).reset_index(drop=True),
        replayed[columns].sort_values(key).reset_index(drop=True),
    )
