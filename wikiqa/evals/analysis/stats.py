"""Error bars: every rate the project reports comes with its 95% interval.

- `wilson`: the score interval for k successes in n (one trial per task): unlike the normal
  approximation it stays inside [0, 1] and is honest at small n and near 0 or 1, where graders
  and agents on small suites live (Wilson 1927);
- `clustered`: a rate over tasks with several trials each, clustered by task;
- `paired`: two runs on the same tasks, the difference with its interval and McNemar's exact p;
- `minimum_detectable_effect`: what a suite of n tasks can tell apart at 80% power.
Anchored on Miller 2024, "Adding Error Bars to Evals".
"""

from __future__ import annotations

from math import comb, log, sqrt
from typing import NamedTuple

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """(low, high) of the 95% Wilson score interval for k of n, or None when n is 0. `k` may be
    fractional: the sum of per-task pass shares when each task ran several trials."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def count_text(k: int, n: int) -> str:
    """ "13/41 [0.17, 0.47]": a count with the 95% Wilson interval of its rate."""
    bounds = wilson(k, n)
    return f"{k}/{n}" + (f" [{bounds[0]:.2f}, {bounds[1]:.2f}]" if bounds else "")


def interval_text(k: int, n: int) -> str:
    """ "0.962 [0.87, 0.99]" for a rate with its interval, "n/a" without data."""
    bounds = wilson(k, n)
    if bounds is None:
        return "n/a"
    return f"{k / n:.3f} [{bounds[0]:.2f}, {bounds[1]:.2f}]"


def clustered(task_means: list[float], z: float = Z95) -> tuple[float, float, float] | None:
    """(mean, low, high) of a rate measured over tasks with several trials each, clustered by
    task: each task's own pass share is one observation, so trials of one question are not
    counted as independent (Miller 2024, section 3). The interval is the wider of the CLT one on
    the task shares and Wilson's on their sum: the CLT alone collapses to zero width when every
    task's trials agree and all pass, which a deterministic answerer makes common."""
    n = len(task_means)
    if n == 0:
        return None
    mean = sum(task_means) / n
    variance = sum((x - mean) ** 2 for x in task_means) / (n - 1) if n > 1 else 0.25
    half = z * sqrt(variance / n)
    score = wilson(sum(task_means), n, z)
    assert score is not None
    return mean, max(0.0, min(mean - half, score[0])), min(1.0, max(mean + half, score[1]))


class Paired(NamedTuple):
    """B minus A on the tasks both runs graded: the mean difference, its 95% interval, and
    McNemar's exact p on the tasks whose pass/fail flipped."""

    tasks: int
    a_rate: float
    b_rate: float
    diff: float
    low: float
    high: float
    gained: int  # failed in A, passed in B
    lost: int  # passed in A, failed in B
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05


def paired(a: list[float], b: list[float], z: float = Z95) -> Paired | None:
    """Paired difference of per-task scores (0/1, or per-task means over trials), in task order.
    With 0/1 scores the interval is Newcombe's paired score interval; with per-task means over
    several trials, the CLT one on the per-task differences (Miller 2024, section 4)."""
    if len(a) != len(b):
        raise ValueError("paired scores need the same tasks in the same order")
    n = len(a)
    if n == 0:
        return None
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    mean = sum(diffs) / n
    gained = sum(x < 0.5 <= y for x, y in zip(a, b, strict=True))
    lost = sum(y < 0.5 <= x for x, y in zip(a, b, strict=True))
    if all(v in (0, 1) for v in [*a, *b]):
        both = sum(x == y == 1 for x, y in zip(a, b, strict=True))
        low, high = newcombe_paired(both, lost, gained, n - both - lost - gained, z)
    else:
        variance = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
        half = z * sqrt(variance / n)
        low, high = mean - half, mean + half
    return Paired(
        tasks=n, a_rate=sum(a) / n, b_rate=sum(b) / n, diff=mean, low=low, high=high,
        gained=gained, lost=lost, p_value=mcnemar_exact(gained, lost),
    )  # fmt: skip


def newcombe_paired(
    both: int, lost: int, gained: int, neither: int, z: float = Z95
) -> tuple[float, float]:
    """95% interval for B - A from a paired 2x2 table (Newcombe 1998, method 10: the Wilson
    intervals of both rates, combined with their correlation). Unlike the CLT interval it does
    not collapse to a point when no task flipped: 0 flips in 35 tasks is not proof of 0."""
    n = both + lost + gained + neither
    p_a, p_b = (both + lost) / n, (both + gained) / n
    l1, u1 = wilson(both + lost, n, z) or (0.0, 1.0)
    l2, u2 = wilson(both + gained, n, z) or (0.0, 1.0)
    denominator = (both + lost) * (gained + neither) * (both + gained) * (lost + neither)
    phi = (both * neither - lost * gained) / sqrt(denominator) if denominator else 0.0
    down = sqrt(max(0.0, (p_b - l2) ** 2 - 2 * phi * (p_b - l2) * (u1 - p_a) + (u1 - p_a) ** 2))
    up = sqrt(max(0.0, (u2 - p_b) ** 2 - 2 * phi * (u2 - p_b) * (p_a - l1) + (p_a - l1) ** 2))
    diff = p_b - p_a
    return max(-1.0, diff - down), min(1.0, diff + up)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p: the discordant pairs against Binomial(b + c, 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail: float = sum(comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def z_of(p: float) -> float:
    """The standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9)."""
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    a = (
        -3.969683028665376e01,
        2.209460984245205e02,
        -2.759285104469687e02,
        1.383577518672690e02,
        -3.066479806614716e01,
        2.506628277459239e00,
    )
    b = (
        -5.447609879822406e01,
        1.615858368580409e02,
        -1.556989798598866e02,
        6.680131188771972e01,
        -1.328068155288572e01,
    )
    c = (
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e00,
        -2.549732539343734e00,
        4.374664141464968e00,
        2.938163982698783e00,
    )
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00,
         3.754408661907416e00)  # fmt: skip
    if p < 0.02425:
        q = sqrt(-2 * log(p))
        num = ((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]
        return num / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    if p > 1 - 0.02425:
        return -z_of(1 - p)
    q = p - 0.5
    r = q * q
    num = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
    return num / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)


def minimum_detectable_effect(
    tasks: int,
    rate: float = 0.5,
    alpha: float = 0.05,
    power: float = 0.8,
    discordant: float | None = None,
) -> float:
    """The smallest true difference in pass rate a paired comparison on `tasks` tasks detects
    with the given power at two-sided level `alpha`. Paired runs of one suite differ only on the
    tasks that flip; `discordant` is that share (default: 2·rate·(1−rate), as if the runs were
    independent, the conservative case). MDE = (z₁₋α/₂ + z_power)·√(discordant / tasks)
    (Miller 2024, section 5)."""
    if tasks <= 0:
        raise ValueError("tasks must be positive")
    share = 2 * rate * (1 - rate) if discordant is None else discordant
    return (z_of(1 - alpha / 2) + z_of(power)) * sqrt(share / tasks)
