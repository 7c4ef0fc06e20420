"""The `eval` benchmark: offline dev-suite wall time, cached reruns and concurrency speed-up."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from wikiqa.sources import SnapshotSource


def bench_eval(
    concurrency: int = 16, slow_tasks: int = 16, slow_trials: int = 2
) -> dict[str, float]:
    """Offline dev-suite wall time, the cached rerun's model calls, and concurrency speed-up."""
    from wikiqa.evals import RunConfig, run_eval

    saved = os.environ.get("WIKIQA_HOME")
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-") as tmp:
        home = Path(tmp)
        os.environ["WIKIQA_HOME"] = str(home / "home")  # a cold response cache, for real
        source = SnapshotSource()  # build the index before timing
        config = RunConfig(trials=3, out=home / "out", concurrency=8)
        start = time.perf_counter()
        cold = run_eval(config, source=source, progress=False)
        cold_s = time.perf_counter() - start
        start = time.perf_counter()
        warm = run_eval(config, source=source, progress=False)
        warm_s = time.perf_counter() - start
        # 32 trials: exactly two waves of 16, so the ideal speed-up is exactly 16.
        slow = {"trials": slow_trials, "limit": slow_tasks, "cache": False, "out": home / "slow"}
        timings = {}
        for workers in (1, concurrency):
            start = time.perf_counter()
            # The extractive policy behind a 200 ms delay per call: a known ideal to compare with.
            config = RunConfig(**slow, model="extractive:delay=0.2", concurrency=workers)
            run_eval(config, source=source, progress=False)
            timings[workers] = time.perf_counter() - start
    if saved is None:
        os.environ.pop("WIKIQA_HOME", None)
    else:
        os.environ["WIKIQA_HOME"] = saved
    speedup = timings[1] / timings[concurrency]
    return {
        "dev_trials": cold.trials_run,
        "dev_x3_wall_s": cold_s,
        "dev_x3_model_calls": cold.model_calls,
        "rerun_wall_s": warm_s,
        "rerun_model_calls": warm.model_calls,
        "slow_trials": slow_tasks * slow_trials,
        "serial_s": timings[1],
        "concurrent_s": timings[concurrency],
        "concurrency": concurrency,
        "speedup": speedup,
        "speedup_share_of_ideal": speedup / concurrency,
    }
