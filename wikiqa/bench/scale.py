"""The `scale` benchmark (needs the `ray` extra): what the Ray executor costs and what it buys.

- overhead: the offline dev suite x 3 trials on the extractive model, local threads against a
  local Ray (its start-up apart, and its workers warmed by one run first), per trial;
- speed-up: 1, 2, 4 and 8 host actors on a stub model that sleeps 0.5 s per call, standing in
  for machines this one does not have;
- SmolLM2 (with the `local` extra) on 1 and 2 hosts, each with its own server, on this 2-core
  machine, where two servers share the same two cores: no gain is possible here.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from wikiqa.sources import SnapshotSource


def _timed(config: Any, **runner: Any) -> tuple[float, Any]:
    from wikiqa.evals import run_eval

    start = time.perf_counter()
    outcome = run_eval(config, progress=False, **runner)
    return time.perf_counter() - start, outcome


def bench_scale(
    stub_tasks: int = 8, stub_trials: int = 4, smollm2_tasks: int = 2
) -> dict[str, float]:
    from wikiqa.evals import RunConfig
    from wikiqa.evals.running.ray_executor import RayExecutor, connect

    figures: dict[str, float] = {}
    saved = os.environ.get("WIKIQA_HOME")
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-scale-") as tmp:
        home = Path(tmp)
        os.environ["WIKIQA_HOME"] = str(home / "home")
        SnapshotSource()  # the index is built before anything is timed (and before Ray forks)
        start = time.perf_counter()
        connect(None)
        figures["ray_start_s"] = time.perf_counter() - start

        base = {"trials": 3, "cache": False, "concurrency": 8}
        local_s, local = _timed(RunConfig(**base, out=home / "local"))
        _timed(RunConfig(**base, out=home / "warm", executor="ray"))  # workers start, import
        ray_s, _ = _timed(RunConfig(**base, out=home / "ray", executor="ray"))
        trials = local.trials_run
        figures |= {
            "overhead_trials": trials,
            "local_s": local_s,
            "ray_s": ray_s,
            "overhead_ms_per_trial": 1000 * (ray_s - local_s) / trials,
        }

        stub = {"trials": stub_trials, "limit": stub_tasks, "cache": False,
                "model": "extractive:delay=0.5"}  # fmt: skip
        times: dict[int, float] = {}
        up: dict[int, float] = {}
        for hosts in (1, 2, 4, 8):
            executor = RayExecutor(hosts=hosts, slots=1)
            config = RunConfig(**stub, concurrency=1, out=home / f"stub{hosts}", executor="ray")
            times[hosts], _ = _timed(config, executor=executor)
            assert executor.hosts_up is not None
            up[hosts] = time.perf_counter() - executor.hosts_up  # less the actors' start-up
        figures["stub_trials"] = stub_tasks * stub_trials
        for hosts, seconds in times.items():
            figures[f"stub_{hosts}_actors_s"] = seconds
        figures["speedup_8_actors"] = times[1] / times[8]
        figures["speedup_share_of_linear_8"] = times[1] / times[8] / 8
        for hosts, seconds in up.items():
            figures[f"stub_{hosts}_actors_hosts_up_s"] = seconds
        figures["speedup_share_of_linear_8_hosts_up"] = up[1] / up[8] / 8

        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            figures["smollm2_skipped"] = 1.0
        else:
            local_model = {"model": "local", "limit": smollm2_tasks, "trials": 1, "cache": False,
                           "read_first": 1, "concurrency": 1}  # fmt: skip
            for hosts in (1, 2):
                config = RunConfig(**local_model, out=home / f"smol{hosts}", executor="ray")
                seconds, outcome = _timed(config, executor=RayExecutor(hosts=hosts, slots=1))
                figures[f"smollm2_{hosts}_actors_s"] = seconds
                figures[f"smollm2_{hosts}_actors_errors"] = outcome.summary.errors
            figures["smollm2_speedup_2_actors"] = (
                figures["smollm2_1_actors_s"] / figures["smollm2_2_actors_s"]
            )
    if saved is None:
        os.environ.pop("WIKIQA_HOME", None)
    else:
        os.environ["WIKIQA_HOME"] = saved
    return figures
