"""Where a run's trials execute: an executor maps the run's trial function (`trial.Trial`) over
its (task, trial) pairs and yields each result as it completes; it knows nothing of the run
itself (the runner alone writes the run log, the cassette and the parquet).

- `local` (the default): a thread pool in this process. Ray is never imported.
- `ray`, `ray://<host>:<port>`, `ray:<address>`: trials run as Ray tasks across a cluster
  (`ray_executor`, imported only when asked for; it needs the `ray` extra).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed

from wikiqa.evals.running.execution import Executor, ExecutorError, Todo
from wikiqa.evals.running.served import is_served, stop_all
from wikiqa.evals.running.trial import Finished, Trial

__all__ = ["Executor", "ExecutorError", "LocalExecutor", "open_executor"]


class LocalExecutor:
    """Bounded concurrency in this process: a thread pool (the agent's work is I/O and SQLite);
    one thread for a local model this run serves."""

    def map(self, trial: Trial, todo: Todo) -> Iterator[Finished]:
        # a local model's one server answers one call at a time: more threads would only queue
        # calls there, each waiting against its timeout
        config = trial.config
        workers = 1 if is_served(config.model) else config.concurrency
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(trial, task, t) for task, t in todo]
                try:
                    for future in as_completed(futures):
                        yield future.result()
                except BaseException:  # the consumer stopped (Ctrl-C, an error): drop the rest
                    for f in futures:
                        f.cancel()
                    raise
        finally:
            stop_all()  # a local-model server this run started


# Ray's start-up deadlines, raised: on a busy machine a node's agents take longer than Ray's
# defaults (30 s) to import and register, and the node is then declared failed. (The driver's
# own 30 s wait for its node is fixed in Ray 2.60: `ray_cluster` starts again when it runs out.)
SLOW_START = {"RAY_agent_register_timeout_ms": "300000", "RAY_raylet_start_wait_time_s": "300"}
# What a Ray of our own (`--executor ray`, no RAY_ADDRESS) runs with, set before Ray is imported
# (Ray reads these once, at import; a value the user exported wins): a single-node Ray whose
# node address is loopback, so its GCS, raylet, workers and agents listen on 127.0.0.1 only (on
# Linux Ray otherwise names the node by its outward address and listens on every interface);
# token authentication; no usage statistics sent; the deadlines above.
OWN_RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_USAGE_STATS_ENABLED": "0",
} | SLOW_START


def open_executor(spec: str) -> Executor:
    """The executor a spec names (RunConfig checks the spelling)."""
    if spec == "local":
        return LocalExecutor()
    if spec == "ray:auto":
        raise ExecutorError(
            "--executor ray:auto follows /tmp/ray/ray_current_cluster, which any user's "
            "`ray start` on this machine rewrites: name the cluster (ray:<host>:<port> or "
            "ray://<host>:<port>)"
        )
    if spec == "ray" and not os.environ.get("RAY_ADDRESS"):
        unset = {k: v for k, v in OWN_RAY_ENV.items() if k not in os.environ}
        imported = sys.modules.get("ray") is not None  # Ray read its settings then, without these
        if unset and imported:
            raise ExecutorError(
                "Ray was imported before wikiqa could set up a Ray of its own (loopback only, "
                "token auth): start the run in a fresh process, or export "
                + " ".join(f"{k}={v}" for k, v in unset.items())
            )
        os.environ.update(unset)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ExecutorError(
            f"--executor {spec} needs Ray: install the `ray` extra (pip install -e '.[ray]')"
        ) from None
    from wikiqa.evals.running.ray_executor import RayExecutor

    return RayExecutor.from_spec(spec)
