"""A Ray that cannot start (an overloaded machine: `ray.init` raises a bare Exception or a
TimeoutError) is an unavailable executor, exit code 3 with one line saying why, like an
unreachable cluster; never a traceback. Ray itself is not started: `ray.init` fails as it does
under load."""

from __future__ import annotations

from pathlib import Path

import pytest

from wikiqa.cli import main
from wikiqa.evals.running.executors import OWN_RAY_ENV

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray")

TIMED_OUT = (
    "The current node timed out during startup. This could happen because some of the raylet "
    "failed to startup or the GCS has become overloaded."
)


@pytest.mark.parametrize(
    ("error", "address", "said"),
    [
        (Exception(TIMED_OUT), None, "a local Ray did not start: "),
        (TimeoutError("Timed out after 60 seconds while waiting for node to startup."), None,
         "a local Ray did not start or answer"),
        (ConnectionError("ray client connection timeout"), "ray://127.0.0.1:1",
         "cannot reach Ray at ray://127.0.0.1:1"),
    ],
)  # fmt: skip
def test_a_ray_that_does_not_start_exits_3_in_one_line(
    error: Exception, address: str | None, said: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    def init(*args: object, **kwargs: object) -> None:
        raise error

    from wikiqa.evals.running import ray_cluster
    from wikiqa.retry import RetryPolicy

    for name, value in OWN_RAY_ENV.items():  # as exported before Ray was imported
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    slept: list[float] = []
    stopped: list[int] = []
    monkeypatch.setattr(ray_cluster, "CONNECT_RETRY",
                        RetryPolicy(attempts=4, backoff=5.0, sleep=slept.append))  # fmt: skip
    monkeypatch.setattr(ray_cluster, "_stop_lost_processes", lambda: stopped.append(1))
    executor = "ray" if address is None else address
    code = main(["eval", "--limit", "1", "--trials", "1", "--no-cache", "--executor", executor,
                 "--out", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 3
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert said in err and str(error) in err
    # a node start that timed out is tried again, its lost processes stopped each time
    timed_out = TIMED_OUT in str(error)
    assert slept == ([5.0, 10.0, 20.0] if timed_out else [])
    assert len(stopped) == (4 if timed_out else 0)
    assert ("gave up after 4 attempts" in err) == timed_out


def test_a_node_start_that_timed_out_leaves_no_process_behind() -> None:
    """`ray.init` raises before it keeps the node's handle, so the GCS and raylet it started
    outlive `ray.shutdown`: the retry stops this process's children that run Ray's code, and
    nothing else."""
    import subprocess
    import sys

    from wikiqa.evals.running import ray_cluster

    home = str(Path(ray.__file__).parent)
    nap = "import sys, time; time.sleep(120)"
    lost = subprocess.Popen([sys.executable, "-c", nap, f"{home}/core/src/ray/raylet/raylet"])
    other = subprocess.Popen([sys.executable, "-c", nap, "llama-server"])
    try:
        ray_cluster._stop_lost_processes()
        assert lost.wait(timeout=15) is not None
        assert other.poll() is None
    finally:
        for process in (lost, other):
            process.kill()
            process.wait()


def test_a_ray_of_our_own_refuses_to_start_after_ray_was_imported_without_its_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ray reads its network and auth settings once, at import: set afterwards, the driver and
    the processes it starts would disagree (InvalidAuthToken, or listeners beyond loopback)."""
    for name in OWN_RAY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    code = main(["eval", "--limit", "1", "--trials", "1", "--executor", "ray",
                 "--out", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 3 and len(err.strip().splitlines()) == 1
    assert "Ray was imported before" in err and "RAY_AUTH_MODE=token" in err


FAILED_SERVERS = [
    "RuntimeError: Starting Ray client server failed. See ray_client_server_23000.err for "
    "detailed logs.",
    "Traceback (most recent call last): ... psutil.ZombieProcess: PID still exists but it's a "
    "zombie (pid=15496)",
]


@pytest.mark.parametrize("cause", FAILED_SERVERS)
@pytest.mark.parametrize("failures", [2, 9])
def test_a_busy_head_that_fails_to_start_a_clients_server_is_tried_again(
    failures: int, cause: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head starts a server per Ray client; busy, it may fail to start it in time, or the
    server it forks may die at once. The connection is tried again (4 attempts), then it is an
    ExecutorError."""
    from wikiqa.evals.running import ray_cluster
    from wikiqa.evals.running.execution import ExecutorError
    from wikiqa.retry import RetryPolicy

    calls: list[str] = []

    def init(address: str, **kwargs: object) -> None:
        calls.append(address)
        if len(calls) <= failures:
            raise ConnectionError(f"Initialization failure from server: {cause}")

    slept: list[float] = []
    monkeypatch.setattr(ray_cluster, "CONNECT_RETRY",
                        RetryPolicy(attempts=4, backoff=5.0, sleep=slept.append))  # fmt: skip
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr(ray_cluster, "_connected", [])
    if failures < 4:
        ray_cluster.connect("ray://127.0.0.1:10001")
        assert len(calls) == failures + 1 and slept == [5.0, 10.0]
    else:
        with pytest.raises(ExecutorError, match="gave up after 4 attempts"):
            ray_cluster.connect("ray://127.0.0.1:10001")
        assert len(calls) == 4
