"""Confidence metrics against values worked out by hand."""

from __future__ import annotations

import pytest

from wikiqa.evals.analysis.confidence import auroc, ece, report, risk_coverage


def test_auroc_is_the_probability_a_correct_answer_ranks_higher() -> None:
    assert auroc([0.9, 0.8, 0.3, 0.2], [True, True, False, False]) == 1.0
    assert auroc([0.2, 0.3, 0.8, 0.9], [True, True, False, False]) == 0.0
    assert auroc([0.9] * 4, [True, False, True, False]) == 0.5  # constant confidence: no signal
    # pairs (pos, neg): (0.9,0.5) (0.9,0.7) (0.6,0.5) win, (0.6,0.7) loses: 3/4
    assert auroc([0.9, 0.6, 0.5, 0.7], [True, True, False, False]) == pytest.approx(0.75)
    assert auroc([0.9, 0.8], [True, True]) is None


def test_ece_is_the_weighted_gap_between_confidence_and_accuracy() -> None:
    # all at 0.9, half right: gap 0.4
    assert ece([0.9] * 4, [True, True, False, False]) == pytest.approx(0.4)
    # two bins: 0.95 all right (gap .05), 0.15 none right (gap .15), equal weight: 0.1
    assert ece([0.95, 0.95, 0.15, 0.15], [True, True, False, False]) == pytest.approx(0.1)
    assert ece([], []) is None


def test_risk_falls_as_coverage_shrinks_when_confidence_is_informative() -> None:
    curve = risk_coverage([0.9, 0.8, 0.3, 0.2], [True, True, False, True])
    assert [(p.coverage, p.risk) for p in curve] == [
        (0.25, 0.0), (0.5, 0.0), (0.75, 0.3333), (1.0, 0.25),
    ]  # fmt: skip
    r = report([0.9, 0.8, 0.3, 0.2], [True, True, False, True])
    assert (r.points, r.correct) == (4, 3) and r.auroc == pytest.approx(2 / 3, abs=1e-4)


def test_the_auroc_interval_resamples_whole_tasks() -> None:
    from wikiqa.evals.analysis.confidence import auroc_interval

    scores = [0.9, 0.9, 0.8, 0.8, 0.3, 0.3, 0.2, 0.2]
    labels = [True, True, True, True, False, False, False, False]
    tasks = ["a", "a", "b", "b", "c", "c", "d", "d"]
    assert auroc_interval(scores, labels, tasks) == (1.0, 1.0)  # separable in every resample
    noisy = [0.9, 0.4, 0.8, 0.3, 0.7, 0.6, 0.5, 0.2]
    mixed = [True, False, False, True, True, False, True, False]
    low, high = auroc_interval(noisy, mixed, list("abcdefgh")) or (None, None)
    point = auroc(noisy, mixed)
    assert low is not None and high is not None and point is not None
    assert low < point < high and high - low > 0.3  # eight points: a wide interval
    assert auroc_interval([0.9, 0.1], [True, False], ["a", "a"]) is None  # one task
