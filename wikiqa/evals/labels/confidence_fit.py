"""Fit the confidence model: a logistic regression of decided correctness on evidence signals.

Points are the answered trials of one recorded run whose correctness the graders decided (pass
or fail); each carries the `signals` the agent scored (`wikiqa.models.evidence`). The fit is
L2-regularised Newton-Raphson (a few lines of numpy, no new dependency), so the same run always
gives the same weights.

The review threshold comes from the risk-coverage curve: the lowest confidence at which the
answers kept (those at or above it) are wrong at most `risk` of the time. Answers under it are
flagged `needs_human_review`.

Fit on the public suite's development part and check on its holdout: the weights never see the
tasks they are judged on.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from wikiqa.agent import Answer
from wikiqa.evals.analysis.confidence import (
    ConfidenceReport,
    auroc,
    auroc_interval,
    report,
    risk_coverage,
)
from wikiqa.evals.labels.validation import LabelledExample
from wikiqa.evals.tasks.task import Task
from wikiqa.inputs import loads
from wikiqa.models import evidence
from wikiqa.models.evidence import FEATURES, Weights


class FitError(ValueError):
    """The run cannot be fitted on: no signals, or one class only."""


def _signals(cell: object) -> Any:
    """One row's signals, from the JSON the run stored; a cell that is not JSON (or nests too
    deep) is a FitError, as a run from elsewhere may hold anything."""
    if not isinstance(cell, str):
        raise FitError(f"the signals column holds a {type(cell).__name__}, not JSON text")
    try:
        return loads(cell, "the signals column", FitError)
    except json.JSONDecodeError as err:
        raise FitError(f"the signals column holds invalid JSON ({err.msg})") from None


def points(frame: pd.DataFrame) -> tuple[list[dict[str, float]], list[bool]]:
    """(signals, correct) for every answered trial with decided correctness."""
    signals, labels, _ = _points(frame)
    return signals, labels


def _points(frame: pd.DataFrame) -> tuple[list[dict[str, float]], list[bool], list[str]]:
    """`points`, with the task each point belongs to (trials of one task are one group)."""
    if "signals" not in frame.columns:
        raise FitError("the run has no signals column: record it again with this version")
    rows = frame[
        (frame["dimension"] == "correctness")
        & (frame["outcome"] == "answer")
        & frame["verdict"].isin(["pass", "fail"])
        & ~frame["infra_error"].astype(bool)
    ]
    found = [_signals(s) for s in rows["signals"]]
    keep = [i for i, s in enumerate(found) if s]
    tasks = rows["task_id"] if "task_id" in rows.columns else pd.Series(range(len(rows)))
    return (
        [found[i] for i in keep],
        [bool(v == "pass") for v in rows["verdict"].iloc[keep]],
        [str(t) for t in tasks.iloc[keep]],
    )


def _design(signals: list[dict[str, float]], features: tuple[str, ...] = FEATURES) -> np.ndarray:
    missing = sorted({f for s in signals for f in features if f not in s})
    if missing:
        had = sum(all(f in s for f in features) for s in signals)
        raise FitError(
            f"{len(signals) - had} of {len(signals)} decided answers carry no "
            f"{', '.join(missing)} signal (a provider without log-probabilities, or a run "
            "recorded before it was kept)"
        )
    x = np.array([[s[f] for f in features] for s in signals], dtype=float).reshape(
        -1, len(features)
    )
    return np.hstack([np.ones((len(x), 1)), x])


def _newton(x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """L2-regularised logistic regression by Newton-Raphson (the intercept is not shrunk)."""
    beta = np.zeros(x.shape[1])
    penalty = np.eye(x.shape[1]) * l2
    penalty[0, 0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        gradient = x.T @ (p - y) + penalty @ beta
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta


L2_GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)


class Fold(NamedTuple):
    """One L2 strength's out-of-fold AUROC, with its task-resampled 95% interval, and the
    pooled out-of-fold probabilities it was computed from (in the order of `points`)."""

    auroc: float | None
    interval: tuple[float, float] | None
    scores: tuple[float, ...] = ()


def cross_validate(
    frame: pd.DataFrame,
    l2s: tuple[float, ...] = L2_GRID,
    folds: int = 5,
    seed: int = 0,
    features: tuple[str, ...] = FEATURES,
) -> dict[float, Fold]:
    """Out-of-fold AUROC of the fit for each L2 strength: every task's trials sit in one fold
    (seeded), each fold is scored by weights fitted on the others, and the scores are pooled.
    An estimate of how the weights rank answers to questions they were not fitted on, from the
    development part alone; the holdout stays unlooked-at while the strength is chosen."""
    signals, labels, tasks = _points(frame)
    groups = sorted(set(tasks))
    if folds < 2:
        raise FitError(f"K-fold cross-validation needs K >= 2, got {folds}")
    if len(groups) < folds:
        raise FitError(f"{folds}-fold cross-validation needs {folds} tasks with decided answers")
    order = np.random.default_rng(seed).permutation(len(groups))
    fold_of = {groups[i]: rank % folds for rank, i in enumerate(order)}
    x, y = _design(signals, features), np.array(labels, dtype=float)
    which = np.array([fold_of[t] for t in tasks])
    found: dict[float, Fold] = {}
    for l2 in l2s:
        scores = np.zeros(len(y))
        for k in range(folds):
            train, test = which != k, which == k
            if len(set(y[train])) < 2:
                raise FitError(f"fold {k} leaves one class only to fit on; use fewer folds")
            scores[test] = x[test] @ _newton(x[train], y[train], l2)
        pooled = [float(p) for p in 1.0 / (1.0 + np.exp(-scores))]
        found[l2] = Fold(
            auroc(pooled, labels), auroc_interval(pooled, labels, tasks), tuple(pooled)
        )
    return found


def fit(
    frame: pd.DataFrame,
    risk: float = 0.25,
    l2: float = 1.0,
    features: tuple[str, ...] = FEATURES,
    held_out: Fold | None = None,
) -> Weights:
    """Weights for `evidence.score` over `features` (the evidence signals by default; the
    model's own, `answer_logprob` and `p_unknown`, where the run kept them), fitted on one run's
    rows or several runs' together; `risk` sets the review threshold. With `held_out` (from
    `cross_validate` on the same frame) the share of answers to keep is chosen on the
    out-of-fold scores, which in-sample scores would flatter, and the threshold is the final
    fit's score at that rank: the folds' scores are on other fits' scales, so a threshold read
    off them could keep nothing (or everything) under the final weights."""
    signals, labels = points(frame)
    if len(set(labels)) < 2:
        raise FitError(f"need correct and incorrect answers to fit; got {len(labels)} points")
    x = _design(signals, features)
    beta = _newton(x, np.array(labels, dtype=float), l2)
    scores = list(1.0 / (1.0 + np.exp(-x @ beta)))
    run = ", ".join(map(str, frame["run_id"].unique())) if "run_id" in frame.columns else "?"
    suite = ", ".join(map(str, frame["suite"].unique())) if "suite" in frame.columns else "?"
    return Weights(
        features=list(features),
        weights=[round(float(b), 4) for b in beta[1:]],
        bias=round(float(beta[0]), 4),
        review_below=(
            threshold_at(scores, kept_share(list(held_out.scores), labels, risk))
            if held_out
            else review_threshold(scores, labels, risk)
        ),
        fitted_on=f"{run} (suite {suite})",
        points=len(labels),
        auroc_fit=round(auroc(scores, labels) or 0.5, 4),
    )


def on_run(
    frame: pd.DataFrame, fitted: Weights | None = None, mode: evidence.Mode = "tools"
) -> ConfidenceReport:
    """`fitted` weights (by default the shipped ones) scored on another run's decided answers
    (its graders' correctness): how weights fitted on one suite rank the answers of a suite
    they never saw."""
    signals, labels, tasks = _points(frame)
    if not signals:
        raise FitError("the run has no answered trial with decided correctness")
    if fitted is not None:
        _design(signals, tuple(fitted.features))  # every answer carries what the weights read
    scores = [evidence.score(s, fitted, mode) for s in signals]
    return report(scores, labels, tasks)  # a task's trials resampled together


def kept_share(scores: list[float], labels: list[bool], risk: float) -> int:
    """How many answers the most confident can be kept with error at most `risk` (0: none)."""
    ok = [p for p in risk_coverage(scores, labels) if p.risk <= risk]
    return min(ok, key=lambda p: p.threshold).answered if ok else 0


def threshold_at(scores: list[float], kept: int) -> float:
    """The confidence that keeps the `kept` highest scores (1.0 for none)."""
    if kept <= 0:
        return 1.0
    at = sorted(scores, reverse=True)[min(kept, len(scores)) - 1]
    return math.floor(at * 1000) / 1000  # written to 3 places: down, so the answer at it stays


def review_threshold(scores: list[float], labels: list[bool], risk: float) -> float:
    """The lowest confidence whose kept answers are wrong at most `risk` of the time (1.0 when
    no cut gets there: every answer is then reviewed)."""
    ok = [p.threshold for p in risk_coverage(scores, labels) if p.risk <= risk]
    return round(min(ok), 3) if ok else 1.0


def recorded_signals(frame: pd.DataFrame) -> dict[tuple[str, str], dict[str, float]]:
    """What a run recorded for each of its answers, by (task, answer text): the signals a label
    file cannot hold (agreement across samples, corroboration, the model's own), to score a
    labelled answer by when it is one of the run's."""
    rows = frame[(frame["outcome"] == "answer") & (frame["dimension"] == "correctness")]
    found: dict[tuple[str, str], dict[str, float]] = {}
    for task_id, answer, cell in zip(rows["task_id"], rows["answer"], rows["signals"], strict=True):
        signals = _signals(cell)
        if signals:
            found[(str(task_id), str(answer))] = signals
    return found


def on_labels(
    examples: list[LabelledExample],
    tasks: dict[str, Task],
    fitted: Weights | None = None,
    recorded: dict[tuple[str, str], dict[str, float]] | None = None,
    mode: evidence.Mode = "tools",
) -> ConfidenceReport:
    """The shipped confidence (or `fitted` weights) against *human* correctness labels: every
    labelled answer with a pass or fail, scored from its own quotes and titles. `retrieved` (the
    fetched titles, in search order) stands for the search hits. A check the fit never saw, on
    labels written without the graders. With `recorded` (a run's `recorded_signals`), each
    labelled answer is scored by the signals the run recorded for it, and one the run did not
    give is an error: a label file mixing runs would otherwise be scored two ways."""
    scores, labels, ids = [], [], []
    for example in examples:
        verdict = example.labels.get("correctness")
        output = example.answer
        if verdict not in ("pass", "fail") or not isinstance(output, Answer):
            continue
        task = tasks.get(example.task_id)
        if task is None:
            raise FitError(f"{example.id}: task {example.task_id} is in none of the suites")
        if recorded is not None:
            kept = recorded.get((example.task_id, output.text))
            if kept is None:
                raise FitError(
                    f"{example.id}: the run gave no answer {output.text!r} to {example.task_id}"
                )
            found = kept
        else:
            found = evidence.features(
                task.question,
                output.text,
                [c.quote for c in output.citations],
                [c.title for c in output.citations],
                example.retrieved,
            )
        scores.append(evidence.score(found, fitted, mode))
        labels.append(verdict == "pass")
        ids.append(example.id)
    if not scores:
        raise FitError("no labelled answer has a correctness label")
    return report(scores, labels, ids)
