"""Does `confidence` mean anything? Risk-coverage, AUROC and expected calibration error.

Each answered trial whose correctness was decided is one point: its confidence and whether it
was correct. AUROC is the chance that a correct answer got more confidence than an incorrect one
(0.5 = no information; ties count half). The risk-coverage curve answers only the most confident
share of questions and reports the error among them: a useful confidence makes risk fall as
coverage shrinks. ECE is the gap between confidence and accuracy, averaged over equal-width bins
weighted by their size (Guo et al. 2017).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel


class CoveragePoint(BaseModel):
    threshold: float
    coverage: float
    risk: float
    answered: int


class ConfidenceReport(BaseModel):
    points: int
    correct: int
    auroc: float | None
    auroc_ci: tuple[float, float] | None = None  # 95%, bootstrap over tasks
    ece: float | None
    curve: list[CoveragePoint]


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Mann-Whitney AUROC of scores for the positive labels; None without both classes."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return None
    ranked = sorted((s, i) for i, s in enumerate(scores))
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(ranked):  # average ranks over ties
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[ranked[k][1]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, y in zip(ranks, labels, strict=True) if y)
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def ece(scores: Sequence[float], labels: Sequence[bool], bins: int = 10) -> float | None:
    """Expected calibration error over `bins` equal-width confidence bins."""
    if not scores:
        return None
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [
            (s, y) for s, y in zip(scores, labels, strict=True)
            if lo <= s < hi or (b == bins - 1 and s == 1.0)
        ]  # fmt: skip
        if members:
            conf = sum(s for s, _ in members) / len(members)
            acc = sum(y for _, y in members) / len(members)
            total += len(members) / len(scores) * abs(conf - acc)
    return total


def risk_coverage(scores: Sequence[float], labels: Sequence[bool]) -> list[CoveragePoint]:
    """Answer only at or above each distinct confidence: the share answered and its error."""
    n = len(scores)
    curve = []
    for threshold in sorted(set(scores), reverse=True):
        kept = [y for s, y in zip(scores, labels, strict=True) if s >= threshold]
        curve.append(
            CoveragePoint(
                threshold=threshold,
                coverage=round(len(kept) / n, 4),
                risk=round(1 - sum(kept) / len(kept), 4),
                answered=len(kept),
            )
        )
    return curve


def auroc_interval(
    scores: Sequence[float],
    labels: Sequence[bool],
    groups: Sequence[str],
    resamples: int = 1000,
    seed: int = 17,
) -> tuple[float, float] | None:
    """A 95% percentile interval for AUROC, resampling whole tasks (`groups`): a task's trials
    are not independent points, so resampling them one by one would be too narrow."""
    by_group: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    keys = sorted(by_group)
    if len(keys) < 2 or auroc(scores, labels) is None:
        return None
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        picked = [i for _ in keys for i in by_group[keys[rng.randrange(len(keys))]]]
        value = auroc([scores[i] for i in picked], [labels[i] for i in picked])
        if value is not None:
            values.append(value)
    if not values:
        return None
    values.sort()
    lo, hi = (
        values[int(0.025 * len(values))],
        values[min(len(values) - 1, int(0.975 * len(values)))],
    )
    return round(lo, 4), round(hi, 4)


def report(
    scores: Sequence[float], labels: Sequence[bool], groups: Sequence[str] | None = None
) -> ConfidenceReport:
    a, e = auroc(scores, labels), ece(scores, labels)
    return ConfidenceReport(
        points=len(scores),
        correct=sum(labels),
        auroc=None if a is None else round(a, 4),
        auroc_ci=auroc_interval(scores, labels, groups) if groups is not None else None,
        ece=None if e is None else round(e, 4),
        curve=risk_coverage(scores, labels),
    )
