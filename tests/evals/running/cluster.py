"""A two-node Ray cluster on this machine's loopback, started from the command line (`ray start
--head`, then `ray start --address`), for the tests marked `ray`.

Every process of it listens on 127.0.0.1 only. Ray's servers bind to loopback only when their
node's address is exactly 127.0.0.1 (any other address, 127.0.0.2 included, binds every
interface); `ray start` keeps that address only with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (with
clusters enabled it rewrites 127.0.0.1 into the machine's outward address), and with it set it
refuses to start a second node. So both nodes run with it set (as a Ray of the executor's own
does: `executors.OWN_RAY_ENV`), the head from `ray start` as it is, the second node from `ray
start` with those two checks lifted in its own process (`JOIN`): its node address stays
127.0.0.1, and the processes it starts see the setting and stay on loopback too.

Each `ray start --block` runs in a session of its own, so the cluster is ended by killing
exactly those process groups (never `ray stop`, which would end every Ray on the machine).
Token authentication is on (Ray's default for a local head since 2.59): every node and every
driver reads the same token file.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psutil  # (installed with ipykernel; no stubs pinned)

from wikiqa.evals.running.executors import SLOW_START
from wikiqa.models.local import free_port

RAY = str(Path(sys.executable).with_name("ray"))
NODE_STARTS = 3
# `ray start` for the second node: the refusal of a second node and the rewriting of 127.0.0.1
# lifted, in this process only (see the module docstring).
JOIN = [sys.executable, "-c", "; ".join([
    "import sys",
    "import ray._private.ray_constants as constants",
    "import ray._private.services as services",
    "constants.ENABLE_RAY_CLUSTER = True",
    "services.resolve_ip_for_localhost = lambda host: host",
    "from ray.scripts.scripts import main",
    "sys.argv[0] = 'ray'",
    "sys.exit(main())",
])]  # fmt: skip


@dataclass
class Cluster:
    gcs: str  # host:port of the head's GCS (a driver on a node: `ray:<gcs>`)
    client: str  # ray://127.0.0.1:<port>, the Ray client port
    env: dict[str, str]  # what a driver needs in its environment (the token, loopback)
    pids: list[int]  # the `ray start` processes (each node's processes are under its own)


def _alive(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


class NodeExited(RuntimeError):
    """A `ray start` ended before its node joined (Ray 2.60 gives a raylet a fixed 30 s to
    register, which a busy machine can miss)."""


def _wait_nodes(
    env: dict[str, str],
    gcs: str,
    count: int,
    deadline: float,
    starting: subprocess.Popen[bytes] | None = None,
) -> None:
    script = "import ray, sys; ray.init(address=sys.argv[1]); print(sum(n['Alive'] for n in ray.nodes()))"
    while time.monotonic() < deadline:
        if starting is not None and starting.poll() is not None:
            raise NodeExited(f"ray start exited with {starting.returncode}")
        try:  # a check that hangs on a busy machine is one failed check, not the test's end
            done = subprocess.run(
                [sys.executable, "-c", script, gcs],
                env=env, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            continue
        if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(count)]:
            return
        time.sleep(1)
    raise TimeoutError(f"the Ray cluster did not reach {count} nodes")


@contextmanager
def loopback_cluster(tmp: Path, home: Path, timeout: float = 600) -> Iterator[Cluster]:
    token = tmp / "ray_token"
    token.write_text(secrets.token_hex(32))
    gcs_port, client_port = free_port(), free_port()
    gcs = f"127.0.0.1:{gcs_port}"
    env = (
        os.environ
        | {
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # node addresses stay 127.0.0.1
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(token),
            "WIKIQA_HOME": str(home),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        | SLOW_START
    )
    common = ["--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1"]
    head = [RAY, "start", "--head", "--port", str(gcs_port), "--ray-client-server-port",
            str(client_port), "--include-dashboard", "false", *common]  # fmt: skip
    worker = [*JOIN, "start", "--address", gcs, *common]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        deadline = time.monotonic() + timeout
        for count, (name, command) in enumerate([("head", head), ("worker", worker)], 1):
            for attempt in range(NODE_STARTS):
                processes.append(_alive(command, env, tmp / f"{name}{attempt}.log"))
                try:
                    _wait_nodes(env, gcs, count, deadline, processes[-1])
                    break
                except NodeExited:  # timed out registering on a busy machine: start it again
                    _end(processes.pop())
            else:
                raise TimeoutError(f"the Ray {name} did not start in {NODE_STARTS} tries")
        yield Cluster(gcs=gcs, client=f"ray://127.0.0.1:{client_port}", env=env,
                      pids=[p.pid for p in processes])  # fmt: skip
    finally:
        for process in reversed(processes):
            _end(process)


def _descendants(root: int) -> list[int]:
    """Every process under `root` (Ray's workers start sessions of their own)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _end(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the `ray start` session (it stops its node), then SIGKILL whatever is left of
    it and of the processes it started."""
    started = _descendants(process.pid)
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    for pid in [process.pid, *started]:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait(timeout=10)


def listeners(root: psutil.Process) -> dict[tuple[str, int], str]:
    """(address, port) -> process name, for every listening TCP socket in root's process tree."""
    found: dict[tuple[str, int], str] = {}
    for process in [root, *root.children(recursive=True)]:
        try:
            sockets = process.net_connections(kind="tcp")
            name = process.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for s in sockets:
            if s.status == psutil.CONN_LISTEN:
                found[(s.laddr.ip, s.laddr.port)] = name
    return found


def loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return address.is_loopback
