"""Intervals checked against published values, not against themselves."""

from __future__ import annotations

import pytest

from wikiqa.evals.stats import interval_text, wilson


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
