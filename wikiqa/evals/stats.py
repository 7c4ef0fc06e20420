"""Error bars: every rate the project reports comes with its 95% interval.

`wilson` is the score interval for k successes in n trials: unlike the normal approximation it
stays inside [0, 1] and is honest at small n and at rates near 0 or 1, which is where graders and
agents on small suites live (Wilson 1927; Miller 2024, "Adding Error Bars to Evals").
"""

from __future__ import annotations

from math import sqrt

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """(low, high) of the 95% Wilson score interval for k of n, or None when n is 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def interval_text(k: int, n: int) -> str:
    """ "0.962 [0.87, 0.99]" for a rate with its interval, "n/a" without data."""
    bounds = wilson(k, n)
    if bounds is None:
        return "n/a"
    return f"{k / n:.3f} [{bounds[0]:.2f}, {bounds[1]:.2f}]"
