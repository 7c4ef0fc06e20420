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

import numpy as np
import pandas as pd

from wikiqa.agent import Answer
from wikiqa.evals.confidence import ConfidenceReport, auroc, report, risk_coverage
from wikiqa.evals.tasks import Task
from wikiqa.evals.validation import LabelledExample
from wikiqa.models import evidence
from wikiqa.models.evidence import FEATURES, Weights


class FitError(ValueError):
    """The run cannot be fitted on: no signals, or one class only."""


def points(frame: pd.DataFrame) -> tuple[list[dict[str, float]], list[bool]]:
    """(signals, correct) for every answered trial with decided correctness."""
    if "signals" not in frame.columns:
        raise FitError("the run has no signals column: record it again with this version")
    rows = frame[
        (frame["dimension"] == "correctness")
        & (frame["outcome"] == "answer")
        & frame["verdict"].isin(["pass", "fail"])
        & ~frame["infra_error"].astype(bool)
    ]
    found = [json.loads(s) for s in rows["signals"]]
    keep = [i for i, s in enumerate(found) if s]
    return [found[i] for i in keep], [bool(v == "pass") for v in rows["verdict"].iloc[keep]]


def fit(frame: pd.DataFrame, risk: float = 0.25, l2: float = 1.0) -> Weights:
    """Weights for `evidence.score`, fitted on one run; `risk` sets the review threshold."""
    signals, labels = points(frame)
    if len(set(labels)) < 2:
        raise FitError(f"need correct and incorrect answers to fit; got {len(labels)} points")
    x = np.array([[s[f] for f in FEATURES] for s in signals], dtype=float)
    x = np.hstack([np.ones((len(x), 1)), x])
    y = np.array(labels, dtype=float)
    beta = np.zeros(x.shape[1])
    penalty = np.eye(x.shape[1]) * l2
    penalty[0, 0] = 0.0  # the intercept is not shrunk
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        gradient = x.T @ (p - y) + penalty @ beta
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    scores = list(1.0 / (1.0 + np.exp(-x @ beta)))
    run = str(frame["run_id"].iloc[0]) if "run_id" in frame.columns else "?"
    suite = str(frame["suite"].iloc[0]) if "suite" in frame.columns else "?"
    return Weights(
        features=list(FEATURES),
        weights=[round(float(b), 4) for b in beta[1:]],
        bias=round(float(beta[0]), 4),
        review_below=review_threshold(scores, labels, risk),
        fitted_on=f"{run} (suite {suite})",
        points=len(labels),
        auroc_fit=round(auroc(scores, labels) or 0.5, 4),
    )


def review_threshold(scores: list[float], labels: list[bool], risk: float) -> float:
    """The lowest confidence whose kept answers are wrong at most `risk` of the time (1.0 when
    no cut gets there: every answer is then reviewed)."""
    ok = [p.threshold for p in risk_coverage(scores, labels) if p.risk <= risk]
    return round(min(ok), 3) if ok else 1.0


def on_labels(examples: list[LabelledExample], tasks: dict[str, Task]) -> ConfidenceReport:
    """The shipped confidence against *human* correctness labels: every labelled answer with a
    pass or fail, scored from its own quotes and titles. `retrieved` (the fetched titles, in
    search order) stands for the search hits. A check the fit never saw, on labels written
    without the graders."""
    scores, labels, ids = [], [], []
    for example in examples:
        verdict = example.labels.get("correctness")
        output = example.answer
        if verdict not in ("pass", "fail") or not isinstance(output, Answer):
            continue
        task = tasks.get(example.task_id)
        if task is None:
            raise FitError(f"{example.id}: task {example.task_id} is in none of the suites")
        found = evidence.features(
            task.question,
            output.text,
            [c.quote for c in output.citations],
            [c.title for c in output.citations],
            example.retrieved,
        )
        scores.append(evidence.score(found))
        labels.append(verdict == "pass")
        ids.append(example.id)
    if not scores:
        raise FitError("no labelled answer has a correctness label")
    return report(scores, labels, ids)
