"""The `scale` benchmark (needs the `ray` extra): what the Ray executor costs and what it buys, on
a Ray of its own on this machine.

- throughput: real work, the extractive answerer over the whole public suite (one trial per
  task), on local threads and on 1, 2 and 4 Ray workers (host actors, one trial at a time each):
  trials per second, and each against one worker;
- overhead: the dev suite x 3 trials on the extractive model, local threads against Ray tasks,
  in `pairs` paired runs (Ray's workers warmed by one run first); per trial, the median of the
  pairs and their spread;
- linearity: 1 and 8 actors on a stub that waits a fixed latency per model call, standing in for
  machines this one does not have; the share of linear at 8 once the actors are up (the target),
  and the actors' start-up (eight processes importing the package and opening the snapshot)
  apart, with the share it leaves when counted;
- a served model (SmolLM2 by default, with the `local` extra): one server of 2 threads against
  two servers of 1 thread on this node (`WIKIQA_SERVERS_PER_NODE`, `WIKIQA_SERVER_THREADS`).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from wikiqa.sources import SnapshotSource


def _timed(config: Any, **runner: Any) -> tuple[float, Any]:
    from wikiqa.evals import run_eval

    start = time.perf_counter()
    outcome = run_eval(config, progress=False, **runner)
    return time.perf_counter() - start, outcome


def bench_scale(
    pairs: int = 5,
    stub_latency: float = 0.5,
    stub_trials: int = 64,
    served: str | None = "local",
    served_tasks: int = 4,
    public_limit: int | None = None,
) -> dict[str, float]:
    from wikiqa.evals.running.executors import open_executor

    open_executor("ray")  # Ray's own-node settings (loopback, no usage stats) before its import
    from wikiqa.evals import RunConfig
    from wikiqa.evals.running.ray_cluster import connect
    from wikiqa.evals.running.ray_executor import RayExecutor

    figures: dict[str, float] = {}
    # runs write under a temporary folder; WIKIQA_HOME stays the user's (no run reads or writes
    # the response cache, and an assembled local model is not assembled again)
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-scale-") as tmp:
        home = Path(tmp)
        SnapshotSource()  # the index is built before anything is timed (and before Ray forks)
        start = time.perf_counter()
        connect(None)
        figures["ray_start_s"] = time.perf_counter() - start

        # throughput on real work: the extractive answerer over the public suite
        work = {"suite": "public", "trials": 1, "cache": False, "limit": public_limit}
        seconds, outcome = _timed(RunConfig(**work, concurrency=4, out=home / "threads"))
        trials = outcome.trials_run
        figures["public_trials"] = trials
        figures["threads_4_trials_per_s"] = trials / seconds
        for workers in (1, 2, 4):
            executor = RayExecutor(hosts=workers, slots=1)
            config = RunConfig(**work, concurrency=workers, out=home / f"w{workers}",
                               executor="ray")  # fmt: skip
            seconds, _ = _timed(config, executor=executor)
            assert executor.hosts_up is not None
            up = time.perf_counter() - executor.hosts_up
            figures[f"ray_{workers}_workers_trials_per_s"] = trials / up
            figures[f"ray_{workers}_workers_startup_s"] = seconds - up
        for workers in (2, 4):
            figures[f"ray_{workers}_workers_vs_1"] = (
                figures[f"ray_{workers}_workers_trials_per_s"]
                / figures["ray_1_workers_trials_per_s"]
            )

        # overhead per trial: paired runs, local threads against Ray tasks
        base = {"trials": 3, "cache": False, "concurrency": 8}
        _timed(RunConfig(**base, out=home / "warm", executor="ray"))  # workers start, import
        overheads = []
        for pair in range(pairs):
            local_s, local = _timed(RunConfig(**base, out=home / f"local{pair}"))
            ray_s, _ = _timed(RunConfig(**base, out=home / f"ray{pair}", executor="ray"))
            overheads.append(1000 * (ray_s - local_s) / local.trials_run)
        figures["overhead_pairs"] = pairs
        figures["overhead_trials_per_run"] = local.trials_run
        figures["overhead_ms_per_trial_median"] = statistics.median(overheads)
        figures["overhead_ms_per_trial_min"] = min(overheads)
        figures["overhead_ms_per_trial_max"] = max(overheads)

        # linearity on a stub with a fixed latency: 1 actor, then 8
        stub = {"cache": False, "model": f"extractive:delay={stub_latency}",
                "concurrency": 8, "executor": "ray"}  # fmt: skip
        one = RayExecutor(hosts=1, slots=1)
        _timed(RunConfig(**stub, limit=8, trials=1, out=home / "stub1"), executor=one)
        assert one.hosts_up is not None
        per_trial = (time.perf_counter() - one.hosts_up) / 8
        eight = RayExecutor(hosts=8, slots=1)
        limit, trials_each = 8, max(1, stub_trials // 8)
        seconds, outcome = _timed(
            RunConfig(**stub, limit=limit, trials=trials_each, out=home / "stub8"),
            executor=eight,
        )
        assert eight.hosts_up is not None
        up = time.perf_counter() - eight.hosts_up
        linear = outcome.trials_run * per_trial / 8
        figures |= {
            "stub_latency_s": stub_latency,
            "stub_1_actor_s_per_trial": per_trial,
            "stub_8_actors_trials": outcome.trials_run,
            "stub_8_actors_up_s": up,
            "stub_8_actors_startup_s": seconds - up,
            "linear_share_8_actors": linear / up,
            "linear_share_8_actors_with_startup": linear / seconds,
        }

        if served is not None:
            figures |= _served(served, served_tasks, home)
    return figures


def _served(model: str, tasks: int, home: Path) -> dict[str, float]:
    """One server of 2 threads against two of 1 thread, on this node (one trial per task)."""
    from wikiqa.evals import RunConfig

    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return {"served_skipped": 1.0}
    figures: dict[str, float] = {}
    for servers, threads in ((1, 2), (2, 1)):
        config = RunConfig(model=model, limit=tasks, trials=1, cache=False, read_first=1,
                           concurrency=8, executor="ray", timeout=900,
                           out=home / f"served{servers}x{threads}")  # fmt: skip
        settings = {"WIKIQA_SERVERS_PER_NODE": str(servers), "WIKIQA_SERVER_THREADS": str(threads)}
        with mock.patch.dict(os.environ, settings):
            seconds, outcome = _timed(config)
        name = f"served_{servers}x{threads}"
        figures[f"{name}_s"] = seconds
        figures[f"{name}_errors"] = outcome.summary.errors
    figures["served_tasks"] = tasks
    figures["served_2x1_vs_1x2"] = figures["served_1x2_s"] / figures["served_2x1_s"]
    return figures
