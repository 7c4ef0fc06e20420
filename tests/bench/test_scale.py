"""The scale bench on a Ray of its own (`make test-ray`): it measures real work and paired
overhead, and its report holds each figure to its target. Small settings: the figures' values
are a benchmark's business, not a test's; their presence, their arithmetic and the verdicts are."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from wikiqa.bench.report import line

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="the `ray` extra"),
]
# In a fresh process, as `python -m wikiqa.bench scale` runs: Ray is imported after the
# executor's own-Ray settings (this test process must not import it first).
SCRIPT = (
    "import json; from wikiqa.bench.scale import bench_scale; print(json.dumps(bench_scale("
    "pairs=3, stub_latency=0.05, stub_trials=16, served=None, public_limit=24)))"
)


def test_the_scale_bench_measures_work_pairs_and_linearity_and_prints_its_targets() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=1200, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["public_trials"] == 24 and figures["overhead_pairs"] == 3
    for workers in (1, 2, 4):
        assert figures[f"ray_{workers}_workers_trials_per_s"] > 0
    assert figures["ray_2_workers_vs_1"] == pytest.approx(
        figures["ray_2_workers_trials_per_s"] / figures["ray_1_workers_trials_per_s"]
    )
    low, mid, high = (figures[f"overhead_ms_per_trial_{k}"] for k in ("min", "median", "max"))
    assert low <= mid <= high
    assert figures["stub_8_actors_trials"] == 16
    assert figures["linear_share_8_actors_with_startup"] < figures["linear_share_8_actors"]
    assert "served_1x2_s" not in figures  # no served model asked for
    report = line("overhead_ms_per_trial_median", mid, "{:.3f}")
    assert "target <= 20" in report and report.endswith(("ok", "MISSED"))
    assert "target >= 0.85" in line("linear_share_8_actors", 0.9, "{:.3f}")
