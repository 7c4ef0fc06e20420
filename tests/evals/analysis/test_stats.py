"""Intervals checked against published values, not against themselves."""

from __future__ import annotations

import pytest

from wikiqa.evals.analysis.stats import (
    clustered,
    interval_text,
    mcnemar_exact,
    minimum_detectable_effect,
    paired,
    wilson,
    z_of,
)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857, table I (Wilson, no correction)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_newcombe(k: int, n: int, low: float, high: float) -> None:
    bounds = wilson(k, n)
    assert bounds is not None
    assert bounds == pytest.approx((low, high), abs=5e-5)


def test_wilson_edges() -> None:
    assert wilson(0, 0) is None
    low, high = wilson(10, 10) or (0.0, 0.0)
    assert high == pytest.approx(1.0) and 0.69 < low < 0.73
    with pytest.raises(ValueError):
        wilson(3, 2)
    assert interval_text(51, 53) == "0.962 [0.87, 0.99]"
    assert interval_text(0, 0) == "n/a"


def test_normal_quantiles_match_tables() -> None:
    assert z_of(0.975) == pytest.approx(1.959964, abs=1e-6)
    assert z_of(0.8) == pytest.approx(0.841621, abs=1e-6)
    assert z_of(0.001) == pytest.approx(-3.090232, abs=1e-6)


def test_mcnemar_exact_is_the_binomial_tail() -> None:
    # 2 vs 8 discordant pairs: 2 * P(X <= 2 | n=10, 1/2) = 2 * 56 / 1024
    assert mcnemar_exact(2, 8) == pytest.approx(0.109375)
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 10) < 0.01


def test_paired_difference_counts_flips_and_brackets_the_mean() -> None:
    result = paired([0, 0, 1, 1, 1], [1, 1, 1, 1, 0])
    assert result is not None
    assert (result.gained, result.lost) == (2, 1) and result.diff == pytest.approx(0.2)
    assert result.low < 0.2 < result.high and not result.significant
    big = paired([0.0] * 30 + [1.0] * 30, [1.0] * 60)
    assert big is not None and big.significant and big.low > 0.3
    assert paired([], []) is None
    with pytest.raises(ValueError):
        paired([1], [1, 0])


def test_clustered_interval_counts_tasks_not_trials() -> None:
    # 40 tasks, each passing 2 of 3 trials: no spread between tasks, but never zero width
    flat = clustered([2 / 3] * 40)
    assert flat is not None and flat[1] < 2 / 3 < flat[2]
    assert (flat[1], flat[2]) == pytest.approx(wilson(80 / 3, 40))
    # all tasks pass every trial: as wide as Wilson's 5/5, not [1, 1]
    perfect = clustered([1.0] * 5)
    assert perfect is not None and perfect[1] == pytest.approx((wilson(5, 5) or (0, 0))[0])
    mixed = clustered([1.0] * 20 + [0.0] * 20)
    assert mixed is not None and mixed[0] == 0.5
    assert mixed[2] - mixed[1] == pytest.approx(
        2 * 1.959964 * (0.25 * 40 / 39) ** 0.5 / 40**0.5, rel=1e-4
    )


def test_minimum_detectable_effect_shrinks_with_the_square_root_of_tasks() -> None:
    # (1.96 + 0.84) * sqrt(2 * .5 * .5 / n): 0.31 at 41 tasks, 0.08 at 566
    assert minimum_detectable_effect(41) == pytest.approx(0.3094, abs=1e-3)
    assert minimum_detectable_effect(566) == pytest.approx(0.0833, abs=1e-3)
    assert minimum_detectable_effect(164) == pytest.approx(minimum_detectable_effect(41) / 2)
    assert minimum_detectable_effect(566, discordant=0.1) < minimum_detectable_effect(566)
