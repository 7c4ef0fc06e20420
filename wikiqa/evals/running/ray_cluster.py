"""Joining a Ray cluster, or starting a Ray of this process's own (`ray_executor` places the
work). Imported only when the ray executor is asked for; `executors.OWN_RAY_ENV` has set Ray's
own-node settings before Ray was imported."""

from __future__ import annotations

import os
from typing import Any

import ray

from wikiqa.evals.running.execution import ExecutorError
from wikiqa.retry import GaveUp, RetryPolicy, Transient


def cause(err: BaseException) -> str:
    """The last line of a Ray error: the reason, without Ray's traceback."""
    text = str(err).strip().splitlines()
    return text[-1] if text else type(err).__name__


_connected: list[str | None] = []
# What a busy machine makes Ray's start-up raise, each tried again (a few waits, then an
# ExecutorError): the head failing to set up a Ray client's own server ("Initialization failure
# from server": too busy to start it in time, or the server it forked died at once, which gRPC's
# fork handling can do under load); a node of our own whose raylet did not register within the
# 30 s that Ray 2.60 allows (hard-coded in ray/_private/node.py, no setting reaches it).
BUSY = ("Initialization failure from server", "timed out during startup")
CONNECT_RETRY = RetryPolicy(attempts=4, backoff=5.0, max_wait=30.0)


def connect(address: str | None) -> None:
    """Join the cluster (or start a local Ray) once per process; another address reconnects.
    Whatever keeps Ray from starting or answering is an ExecutorError, said in one line: an
    overloaded machine makes `ray.init` raise a bare Exception ("the current node timed out
    during startup") or a TimeoutError, besides the connection errors."""
    try:
        _connect(address)
    except ExecutorError:
        raise
    except Exception as err:
        where = f"Ray at {address}" if address else "a local Ray"
        raise ExecutorError(f"{where} did not start or answer: {cause(err)}") from err


def _connect(address: str | None) -> None:
    given = address
    if ray.is_initialized():
        if _connected and _connected[-1] == given:
            return
        ray.shutdown()
    kwargs: dict[str, Any] = {}
    if address is None and not os.environ.get("RAY_ADDRESS"):
        # a Ray of our own on this machine ("local": never a stale `ray start` it remembers),
        # on loopback (executors.OWN_RAY_ENV), no dashboard, a small object store; ray.shutdown
        # (at exit) stops exactly the processes it started
        address = "local"
        kwargs = {"include_dashboard": False, "object_store_memory": 256 * 2**20}
    if not (address or "").startswith("ray://"):
        kwargs["log_to_driver"] = False

    def init() -> None:
        try:
            ray.init(address=address, **kwargs)
        except Exception as err:
            if not any(busy in str(err) for busy in BUSY):
                raise
            ray.shutdown()  # try again from a clean state
            if address == "local":
                _stop_lost_processes()
            raise Transient(cause(err)) from err

    try:
        CONNECT_RETRY.call(init)
    except GaveUp as err:
        where = (
            "a local Ray did not start" if address == "local" else f"cannot reach Ray at {address}"
        )
        raise ExecutorError(f"{where}: {err}") from err
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise ExecutorError(f"cannot reach Ray at {address}: {err}") from err
    if address == "local" and (ip := ray.util.get_node_ip_address()) != "127.0.0.1":
        ray.shutdown()  # it would listen beyond loopback: Ray was imported before our settings
        raise ExecutorError(
            f"a local Ray would listen on {ip}, not only on loopback: Ray was imported before "
            "wikiqa set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (export it, or start the run in a "
            "fresh process)"
        )
    _connected.append(given)


def _stop_lost_processes() -> None:
    """Stop the Ray processes this process started and Ray lost hold of: a node start that timed
    out raises before `ray.init` keeps the node's handle, so `ray.shutdown` leaves its GCS and
    raylet running (until this process exits), and a second start would compete with them."""
    import psutil  # shipped with Ray (ray/thirdparty_files, on the path once Ray is imported)

    home = os.path.dirname(ray.__file__)
    lost = []
    for child in psutil.Process().children(recursive=True):
        try:
            if any(home in part for part in child.cmdline()):
                lost.append(child)
        except psutil.Error:  # gone already, or not ours to read
            continue
    for child in lost:
        child.terminate()
    for child in psutil.wait_procs(lost, timeout=10)[1]:
        child.kill()
