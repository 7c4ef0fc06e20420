"""The cassette benchmark's arithmetic and its report: the figure held to the target is the
median of the pairs' overhead shares, printed with the target, the verdict and the spread (the
benchmark's timings themselves are printed, never asserted: `python -m wikiqa.bench cassette`)."""

from __future__ import annotations

import pytest

from wikiqa.bench.cassette import _paired, report


def figures(shares: list[float]) -> dict[str, float]:
    without = [2.0, 2.2, 1.8]
    cpus = {False: without, True: [a * (1 + s) for a, s in zip(without, shares, strict=True)]}
    walls = {False: [4.0, 4.0, 4.0], True: [4.4, 4.0, 4.2]}
    return _paired("x1", cpus, walls, trials=200)


def test_the_median_of_the_pairs_shares_with_its_spread() -> None:
    found = figures([0.10, 0.02, 0.04])
    assert found["x1_cpu_overhead_share"] == pytest.approx(0.04)
    assert (found["x1_cpu_share_lowest"], found["x1_cpu_share_highest"]) == pytest.approx(
        (0.02, 0.10)
    )
    assert found["x1_cpu_ms_per_trial"] == pytest.approx(2.0 / 200 * 1000)  # the median run
    extra = 1.8 * 0.04  # the median difference
    assert found["x1_cpu_overhead_ms"] == pytest.approx(extra / 200 * 1000)
    assert found["x1_wall_overhead_share"] == pytest.approx(0.05)


@pytest.mark.parametrize(("shares", "verdict"), [([0.10, 0.02, 0.04], "ok"),
                                                  ([0.06, 0.07, 0.01], "MISSED")])  # fmt: skip
def test_the_report_prints_the_target_and_whether_it_holds(
    shares: list[float], verdict: str
) -> None:
    numbers = figures(shares) | {
        "pairs": 3, "x1_recorder_own_ms": 0.3, "public_tasks": 566, "sized_trials": 566,
        "size_over_text": 0.9,
    }  # fmt: skip
    (row,) = [r for r in report(numbers).splitlines() if r.startswith("x1_cpu_overhead_share")]
    median = sorted(shares)[1]
    assert f"{median:+.1%}" in row and "target <= +5.0%" in row and row.split()[-5] == verdict
    assert f"(pairs: {min(shares):+.1%} to {max(shares):+.1%})" in row
    assert "x1_recorder_own_ms" in report(numbers) and "3.0% of a trial" in report(numbers)
