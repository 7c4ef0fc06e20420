"""The `cassette` benchmark: what recording a run's cassette costs, in time and in bytes.

The offline public suite runs with and without the cassette recorder (the extractive answerer,
no response cache), in pairs run back to back so that a busy machine slows both alike; the
overhead is the median of the pairs' differences over the median run without (a best-of-2 moved
by more than the overhead between two runs of the same code),
with 1 trial (every answer is new: the worst case) and with 3 (the climb's default: a task's
later trials mostly repeat its first one's calls). The target is held on the process's CPU time
per trial: this machine is shared, and wall time moves by more than the overhead between two
identical runs; wall figures are printed beside it. The last run's cassette is sized: its bytes
per 1,000 trials, and against the sum of its distinct article texts (deduplication and
compression must keep it under that + 10%).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from statistics import median

from wikiqa.bench.report import line
from wikiqa.sources import SnapshotSource
from wikiqa.sources.cassette_files import read_cassette

OVERHEAD_TARGET = 0.05  # of an offline trial's time
SIZE_TARGET = 1.10  # x the sum of distinct article texts


REPEATS = 5


def bench_cassette(
    repeats: int = REPEATS, trial_counts: tuple[int, ...] = (1, 3)
) -> dict[str, float]:
    from wikiqa.evals import RunConfig, run_eval

    saved = os.environ.get("WIKIQA_HOME")
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-") as tmp:
        home = Path(tmp)
        os.environ["WIKIQA_HOME"] = str(home / "home")
        try:
            source = SnapshotSource()  # build the index before timing
            for trials in trial_counts:
                walls: dict[bool, list[float]] = {False: [], True: []}
                cpus: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(repeats):
                    for recording in (False, True):
                        config = RunConfig(suite="public", trials=trials, out=home, cache=False)
                        start, cpu = time.perf_counter(), time.process_time()
                        outcome = run_eval(
                            config, source=source, progress=False, record_cassette=recording
                        )
                        walls[recording].append(time.perf_counter() - start)
                        cpus[recording].append(time.process_time() - cpu)
                run_trials = outcome.meta.tasks * trials
                for unit, seen in (("cpu", cpus), ("wall", walls)):
                    without = median(seen[False])
                    extra = median(b - a for a, b in zip(seen[False], seen[True], strict=True))
                    figures |= {
                        f"x{trials}_{unit}_ms_per_trial": without / run_trials * 1000,
                        f"x{trials}_{unit}_overhead_ms": extra / run_trials * 1000,
                        f"x{trials}_{unit}_overhead_share": extra / without,
                    }
            # The last run recorded its cassette: size it.
            path = home / str(outcome.meta.cassette)
            cassette = read_cassette(path)
            size = path.stat().st_size
            text = sum(len(a.text.encode()) for a in cassette.articles.values())
        finally:
            if saved is None:
                os.environ.pop("WIKIQA_HOME", None)
            else:
                os.environ["WIKIQA_HOME"] = saved
    return figures | {
        "public_tasks": outcome.meta.tasks,
        "sized_trials": run_trials,
        "cassette_bytes": size,
        "bytes_per_1000_trials": size / run_trials * 1000,
        "distinct_articles": len(cassette.articles),
        "distinct_searches": len(cassette.searches),
        "distinct_text_bytes": text,
        "size_over_text": size / text if text else 0.0,
    }


def report(figures: dict[str, float]) -> str:
    f = figures
    rows = [
        f"cassette (offline public suite, {f['public_tasks']:.0f} tasks, extractive, no response "
        f"cache, 8 workers; time: median of {REPEATS} pairs of runs without and with the recorder; "
        f"size: the last run's cassette, {f['sized_trials']:.0f} trials)"
    ]
    for key, value in f.items():
        if key.endswith("cpu_overhead_share"):
            rows.append(_target(key, value, OVERHEAD_TARGET, "{:+.1%}"))
        elif key == "size_over_text":
            rows.append(_target(key, value, SIZE_TARGET, "{:.3f}"))
        elif key.endswith("overhead_share"):  # wall time: as noisy as the machine is shared
            rows.append(line(key, value, "{:+.1%}"))
        elif key not in ("public_tasks", "sized_trials"):
            rows.append(line(key, value, "{:.0f}" if value >= 1000 else "{:.3f}"))
    return "\n".join(rows)


def _target(key: str, value: float, bound: float, fmt: str) -> str:
    verdict = "ok" if value <= bound else "MISSED"
    return f"{key:<26} {fmt.format(value):>8}   target <= {fmt.format(bound)}   {verdict}"
