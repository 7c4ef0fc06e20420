from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from wikiqa.evals.analysis import combine, majority, render, summarize
from wikiqa.evals.analysis import pass_at as _pass_at


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        (["pass", "pass", "fail"], "pass"),
        (["pass", "fail", "fail"], "fail"),
        (["pass", "fail", "n/a"], "fail"),  # a tie goes to the worse verdict
        (["pass", "n/a", "n/a"], "n/a"),
        (["error", "pass", "fail", "pass"], "pass"),  # outages do not vote
        (["error", "error"], "error"),
        (["needs_judge", "pass"], "needs_judge"),
    ],
)
def test_majority(votes: list[str], expected: str) -> None:
    assert majority(votes) == expected


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        (["pass", "n/a"], "pass"),
        (["pass", "fail"], "fail"),
        (["n/a", "n/a"], "fail"),  # nothing applied: nothing shown
        (["pass", "needs_judge"], "needs_judge"),
        (["error", "pass"], "error"),
    ],
)
def test_task_verdict(verdicts: list[str], expected: str) -> None:
    assert combine(verdicts) == expected


def test_pass_at_k_and_pass_hat_k() -> None:
    assert _pass_at(3, 0, 3) == (0.0, 0.0)
    assert _pass_at(3, 3, 3) == (1.0, 1.0)
    assert _pass_at(3, 1, 1) == pytest.approx((1 / 3, 1 / 3))
    assert _pass_at(3, 2, 3) == (1.0, 0.0)
    assert _pass_at(4, 2, 2) == pytest.approx((1 - 1 / 6, 1 / 6))


def rows(spec: list[tuple[str, str, int, bool, str, str, str]]) -> pd.DataFrame:
    records: list[dict[str, Any]] = []
    for task_id, category, trial, should_refuse, decision, dimension, verdict in spec:
        records.append(
            {"task_id": task_id, "category": category, "trial": trial, "should_refuse": should_refuse,
             "decision": decision, "infra_error": verdict == "error", "dimension": dimension,
             "verdict": verdict, "fraction": 1.0 if verdict == "pass" else 0.0}
        )  # fmt: skip
    return pd.DataFrame.from_records(records)


def test_summary_tables_confusion_and_selective_accuracy() -> None:
    frame = rows(
        [
            ("a", "factual", 0, False, "answer", "faithfulness", "pass"),
            ("a", "factual", 0, False, "answer", "calibration", "pass"),
            ("a", "factual", 1, False, "answer", "faithfulness", "fail"),
            ("a", "factual", 1, False, "answer", "calibration", "pass"),
            ("a", "factual", 2, False, "answer", "faithfulness", "pass"),
            ("a", "factual", 2, False, "answer", "calibration", "pass"),
            ("b", "unanswerable", 0, True, "answer", "calibration", "fail"),
            ("b", "unanswerable", 1, True, "refusal", "calibration", "pass"),
            ("b", "unanswerable", 2, True, "refusal", "calibration", "pass"),
            ("c", "factual", 0, False, "refusal", "faithfulness", "n/a"),
            ("c", "factual", 0, False, "refusal", "calibration", "fail"),
            ("c", "factual", 1, False, "refusal", "faithfulness", "error"),
            ("c", "factual", 1, False, "refusal", "calibration", "error"),
            ("c", "factual", 2, False, "refusal", "faithfulness", "n/a"),
            ("c", "factual", 2, False, "refusal", "calibration", "fail"),
        ]
    )
    s = summarize(frame)
    assert s.trials == 3 and s.tasks == 3
    faith = s.cells["factual"]["faithfulness"]
    assert (faith.passes, faith.applicable) == (1, 1)  # a: pass by majority; c: n/a
    calib = s.cells["factual"]["calibration"]
    assert (calib.passes, calib.applicable) == (1, 2)
    assert (s.task_cells["factual"].passes, s.task_cells["factual"].applicable) == (1, 2)
    assert (s.task_cells["unanswerable"].passes, s.task_cells["all"].passes) == (1, 2)
    assert s.errors == 1
    assert s.confusion == {
        "answerable": {"answer": 3, "refusal": 2},
        "unanswerable": {"answer": 1, "refusal": 2},
    }
    assert s.coverage == pytest.approx(3 / 5, abs=1e-3)
    assert s.selective_accuracy == pytest.approx(2 / 3, abs=1e-3)
    # per task: a passes 2/3 trials, b 2/3, c 0/2 (one errored trial does not count)
    assert s.pass_at_1 == pytest.approx((2 / 3 + 2 / 3 + 0) / 3, abs=1e-4)
    assert s.pass_at_k == pytest.approx(2 / 3, abs=1e-4) and s.pass_hat_k == 0.0
    table = render(s)
    assert "factual" in table and "1/2" in table and "pass@3" in table


def test_every_cell_carries_its_interval_and_confidence_is_reported() -> None:
    spec = [(f"t{i}", "factual", 0, False, "answer", "correctness", "pass" if i < 8 else "fail")
            for i in range(10)]  # fmt: skip
    frame = rows(spec)
    frame["outcome"] = "answer"
    frame["confidence"] = [0.9] * 8 + [0.2, 0.95]
    s = summarize(frame)
    cell = s.cells["all"]["correctness"]
    assert (cell.passes, cell.applicable) == (8, 10)
    assert (cell.low, cell.high) == pytest.approx((0.4902, 0.9433), abs=1e-4)  # Wilson 8/10
    assert "8/10 [49,94]" in render(s)
    assert s.confidence is not None and s.confidence.points == 10
    # pairs (correct, wrong): 0.9 beats 0.2 (8 wins), loses to 0.95 (8 losses): 16 / 16 / 2
    assert s.confidence.auroc == pytest.approx(0.5)
    assert s.simpleqa is not None and (s.simpleqa.correct, s.simpleqa.incorrect) == (8, 2)
