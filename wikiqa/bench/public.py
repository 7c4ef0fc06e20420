"""The `public` benchmark: the 566-task public suite x 3 trials offline, and `compare` of two
such runs: the statistics must not make the climb slow (targets 60 s and 2 s on 2 cores)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from wikiqa.parquets import read_parquet
from wikiqa.sources import SnapshotSource


def bench_public(trials: int = 3) -> dict[str, float]:
    from wikiqa.evals import RunConfig, run_eval
    from wikiqa.evals.analysis.compare import compare

    saved = os.environ.get("WIKIQA_HOME")
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-") as tmp:
        home = Path(tmp)
        os.environ["WIKIQA_HOME"] = str(home / "home")  # a cold response cache, for real
        try:
            source = SnapshotSource()  # build the index before timing
            runs = []
            walls = []
            for read_first in (0, 1):  # two different runs to compare
                config = RunConfig(
                    suite="public", trials=trials, out=home / "out", read_first=read_first
                )
                start = time.perf_counter()
                runs.append(run_eval(config, source=source, progress=False))
                walls.append(time.perf_counter() - start)
            start = time.perf_counter()
            frames = [read_parquet(r.parquet) for r in runs]
            result = compare(frames[0], frames[1])
            compare_s = time.perf_counter() - start
        finally:
            if saved is None:
                os.environ.pop("WIKIQA_HOME", None)
            else:
                os.environ["WIKIQA_HOME"] = saved
    return {
        "public_tasks": runs[0].meta.tasks,
        "trials": trials,
        "public_x3_wall_s": walls[0],
        "second_run_wall_s": walls[1],
        "compare_s": compare_s,
        "compared_tasks": result.rows["tasks"]["tasks"],
    }
