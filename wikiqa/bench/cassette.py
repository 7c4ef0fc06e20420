"""The `cassette` benchmark: what recording a run's cassette costs, in time and in bytes.

The offline public suite (extractive answerer, no response cache) runs without and with the
cassette recorder, in pairs run back to back so that a busy machine slows both alike, with 1
trial (every answer is new: the worst case) and with 3 (the climb's default: a task's later
trials repeat its first one's calls). A warm-up run comes first (memoised sentence splits and
the like would otherwise favour whichever side ran second), each run starts after a garbage
collection, and the pairs alternate which side runs first, so that a machine growing busier or
calmer during the benchmark does not lean on one side. Each pair gives an overhead share,
(with - without) / without; the figure held to the target is the median of the pairs' shares,
printed with their spread (lowest and highest). The target is on the process's CPU time: this
machine is shared, and wall time moves by more than the overhead between two identical runs
(wall figures are printed beside it).

Beside it, the recorder's own CPU per trial, measured apart from the agent: the last run's
calls (from its log's traces) replayed through a recorder over its own cassette, minus the same
calls without one. It moves little with the machine's load, and says what the paired runs
measure through their noise. The last run's cassette is sized too: its bytes per 1,000 trials,
and against the sum of its distinct article texts (deduplication and compression must keep it
under that + 10%).
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

from wikiqa.bench.report import line
from wikiqa.sources import SnapshotSource
from wikiqa.sources.cassette import CassetteMiss, CassetteRecorder, CassetteSource
from wikiqa.sources.cassette_files import CASSETTE_FORMAT, Header, read_cassette

if TYPE_CHECKING:
    from wikiqa.evals.running.records import RunMeta

OVERHEAD_TARGET = 0.05  # of an offline trial's CPU time
SIZE_TARGET = 1.10  # x the sum of distinct article texts
PAIRS = 7


def bench_cassette(pairs: int = PAIRS, trial_counts: tuple[int, ...] = (1, 3)) -> dict[str, float]:
    from wikiqa.evals import RunConfig, run_eval

    saved = os.environ.get("WIKIQA_HOME")
    figures: dict[str, float] = {"pairs": pairs}
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-") as tmp:
        home = Path(tmp)
        os.environ["WIKIQA_HOME"] = str(home / "home")
        try:
            source = SnapshotSource()  # build the index before timing

            def timed(trials: int, recording: bool) -> tuple[float, float, RunMeta]:
                config = RunConfig(suite="public", trials=trials, out=home, cache=False)
                gc.collect()  # each run starts from a collected heap, not the last run's garbage
                start, cpu = time.perf_counter(), time.process_time()
                outcome = run_eval(config, source=source, progress=False, record_cassette=recording)
                return time.process_time() - cpu, time.perf_counter() - start, outcome.meta

            recorded: RunMeta | None = None

            for trials in trial_counts:
                timed(trials, False)  # warm-up
                cpus: dict[bool, list[float]] = {False: [], True: []}
                walls: dict[bool, list[float]] = {False: [], True: []}
                for pair in range(pairs):
                    for recording in (False, True) if pair % 2 == 0 else (True, False):
                        cpu, wall, meta = timed(trials, recording)
                        cpus[recording].append(cpu)
                        walls[recording].append(wall)
                        recorded = meta if recording else recorded
                assert recorded is not None
                figures |= _paired(f"x{trials}", cpus, walls, recorded.tasks * trials)
                figures[f"x{trials}_recorder_own_ms"] = _own_cost(home, recorded.run_id) * 1000
            assert recorded is not None
            path = home / str(recorded.cassette)  # the last recorded run's
            cassette = read_cassette(path)
            size = path.stat().st_size
            text = sum(len(a.text.encode()) for a in cassette.articles.values())
        finally:
            if saved is None:
                os.environ.pop("WIKIQA_HOME", None)
            else:
                os.environ["WIKIQA_HOME"] = saved
    sized = recorded.tasks * trial_counts[-1]
    return figures | {
        "public_tasks": recorded.tasks,
        "sized_trials": sized,
        "cassette_bytes": size,
        "bytes_per_1000_trials": size / sized * 1000,
        "distinct_articles": len(cassette.articles),
        "distinct_searches": len(cassette.searches),
        "distinct_text_bytes": text,
        "size_over_text": size / text if text else 0.0,
    }


def _paired(
    name: str, cpus: dict[bool, list[float]], walls: dict[bool, list[float]], trials: int
) -> dict[str, float]:
    """A trial count's figures from its pairs (index i of each list is pair i): per trial, the
    median time without the recorder and the median overhead; the median of the pairs' overhead
    shares, with the lowest and highest."""
    found: dict[str, float] = {}
    for unit, seen in (("cpu", cpus), ("wall", walls)):
        without, with_ = seen[False], seen[True]
        shares = sorted(b / a - 1 for a, b in zip(without, with_, strict=True))
        extra = median(b - a for a, b in zip(without, with_, strict=True))
        found |= {
            f"{name}_{unit}_ms_per_trial": median(without) / trials * 1000,
            f"{name}_{unit}_overhead_ms": extra / trials * 1000,
            f"{name}_{unit}_overhead_share": median(shares),
            f"{name}_{unit}_share_lowest": shares[0],
            f"{name}_{unit}_share_highest": shares[-1],
        }
    return found


def _own_cost(out: Path, run_id: str, repeats: int = 5) -> float:
    """The recorder's CPU seconds per trial: run `run_id`'s calls (searches and fetches, trial
    by trial, from its log) through a new recorder over its cassette, with a flush a trial as
    the runner does, less the same calls made straight to the cassette; the median of
    `repeats`."""
    from wikiqa.evals.running.runlog import RunLog

    source = CassetteSource(out / "runs" / f"{run_id}.cassette.jsonl.gz")
    trials = []
    for record in RunLog.load(out, run_id).trials.values():
        trials.append([(e.kind, str(e.detail.get("query") or e.detail.get("title")))
                       for e in record.result.trace if e.kind in ("search", "fetch")])  # fmt: skip

    def calls(through: CassetteSource | CassetteRecorder) -> float:
        start = time.process_time()
        for trial in trials:
            for kind, arg in trial:
                try:
                    if kind == "search":
                        through.search(arg)
                    else:
                        through.get_article(arg)
                except CassetteMiss:  # a fetch traced under another title than asked
                    pass
            if isinstance(through, CassetteRecorder):
                through.flush()
        return time.process_time() - start

    costs = []
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-") as tmp:
        for n in range(repeats):
            header = Header(format=CASSETTE_FORMAT, created_at="bench")
            recorder = CassetteRecorder(source, Path(tmp) / f"{n}.cassette.jsonl.gz", header)
            recorded = calls(recorder)
            recorder.close()
            costs.append(recorded - calls(source))
    return median(costs) / len(trials)


def report(figures: dict[str, float]) -> str:
    f = figures
    rows = [
        f"cassette (offline public suite, {f['public_tasks']:.0f} tasks, extractive, no response "
        f"cache, 8 workers; time: median of {f['pairs']:.0f} pairs of runs without and with the "
        "recorder, alternating which runs first, after a warm-up run; size: the last run's "
        f"cassette, {f['sized_trials']:.0f} trials)"
    ]
    skip = ("public_tasks", "sized_trials", "pairs")
    for key, value in f.items():
        if key.endswith("cpu_overhead_share"):
            spread = key.removesuffix("overhead_share")
            low, high = f[f"{spread}share_lowest"], f[f"{spread}share_highest"]
            rows.append(
                _target(key, value, OVERHEAD_TARGET, "{:+.1%}")
                + f"   (pairs: {low:+.1%} to {high:+.1%})"
            )
        elif key == "size_over_text":
            rows.append(_target(key, value, SIZE_TARGET, "{:.3f}"))
        elif key.endswith("recorder_own_ms"):
            per_trial = f[key.replace("recorder_own_ms", "cpu_ms_per_trial")]
            rows.append(line(key, value, "{:.3f}") + f"   ({value / per_trial:.1%} of a trial)")
        elif key.endswith(("overhead_share", "_lowest", "_highest")):
            if "wall" in key and key.endswith("overhead_share"):  # as noisy as the machine is
                rows.append(line(key, value, "{:+.1%}"))
        elif key not in skip:
            rows.append(line(key, value, "{:.0f}" if value >= 1000 else "{:.3f}"))
    return "\n".join(rows)


def _target(key: str, value: float, bound: float, fmt: str) -> str:
    verdict = "ok" if value <= bound else "MISSED"
    return f"{key:<26} {fmt.format(value):>8}   target <= {fmt.format(bound)}   {verdict}"
