"""Undecided answers resolved at human-labelled rates (`wikiqa outcomes`): the reasons are read
off the grader, the rates off labels, and the arithmetic and its interval are checked by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from wikiqa.evals import load_tasks, resolve_suite
from wikiqa.evals.analysis.simpleqa import Outcomes, reason_of
from wikiqa.evals.analysis.stats import wilson
from wikiqa.evals.graders import correctness_of as correctness
from wikiqa.evals.labels.undecided import Rate, human_rates, resolve, run_outcomes
from wikiqa.evals.labels.validation import LabelledExample

TASKS = {t.id: t for t in load_tasks(resolve_suite("dev"))}
TASK = "flow-matic-developer"  # Who developed the FLOW-MATIC programming language? (Grace Hopper)
NO_ALIAS = (
    "The FLOW-MATIC programming language was developed in the 1950s by a team at Remington Rand."
)
IN_PASSING = (
    "She wrote many papers and later joined the Navy, where Grace Hopper rose to rear admiral."
)
CORRECT = (
    "FLOW-MATIC was the first English-like data processing language, created under the direction "
    "of Grace Hopper at Remington Rand."
)


def _example(i: int, text: str, human: str) -> LabelledExample:
    return LabelledExample.model_validate(
        {"id": f"x{i}", "task_id": TASK, "retrieved": ["FLOW-MATIC"],
         "answer": {"kind": "answer", "text": text,
                    "citations": [{"title": "FLOW-MATIC", "quote": text}]},
         "labels": {"correctness": human}}
    )  # fmt: skip


def test_the_texts_are_graded_as_the_tests_assume() -> None:
    task = TASKS[TASK]
    assert reason_of(correctness(task, NO_ALIAS).detail) == "no alias stated"
    assert reason_of(correctness(task, IN_PASSING).detail) == "alias in passing"
    assert correctness(task, CORRECT).verdict == "pass"
    assert reason_of({"reason": "something new"}) == "other" and reason_of(None) == "other"


def test_human_rates_tally_the_undecided_by_reason() -> None:
    examples = [_example(0, NO_ALIAS, "fail"), _example(1, NO_ALIAS, "fail"),
                _example(2, NO_ALIAS, "pass"), _example(3, IN_PASSING, "pass"),
                _example(4, CORRECT, "pass"),  # decided by the grader: not a rate
                _example(5, IN_PASSING, "n/a")]  # fmt: skip
    rates = human_rates(examples, TASKS)
    assert rates == {
        "alias in passing": Rate(reason="alias in passing", correct=1, labelled=1),
        "no alias stated": Rate(reason="no alias stated", correct=1, labelled=3),
    }
    assert rates["no alias stated"].interval == wilson(1, 3)
    with pytest.raises(ValueError, match="in none of the suites"):
        human_rates(examples, {})  # the wrong suite is an error, not an empty tally


def test_resolve_spreads_each_reason_at_its_rate() -> None:
    decided = Outcomes(tasks=10, correct=2, incorrect=1, not_attempted=3, undecided=4)
    rates = {
        "no alias stated": Rate(reason="no alias stated", correct=1, labelled=10),
        "alias in passing": Rate(reason="alias in passing", correct=8, labelled=10),
    }
    reasons = Counter({"no alias stated": 2, "alias in passing": 1, "premise not denied": 1})
    got = resolve(decided, reasons, rates)
    assert got.correct == pytest.approx(2 + 2 * 0.1 + 0.8)
    assert got.incorrect == pytest.approx(1 + 2 * 0.9 + 0.2)
    (lo_a, hi_a), (lo_b, hi_b) = (
        Rate(reason="a", correct=1, labelled=10).interval,
        Rate(reason="b", correct=8, labelled=10).interval,
    )
    assert got.correct_range == pytest.approx((2 + 2 * lo_a + lo_b, 2 + 2 * hi_a + hi_b), abs=0.01)
    assert got.incorrect_range == pytest.approx(
        (1 + 2 * (1 - hi_a) + (1 - hi_b), 1 + 2 * (1 - lo_a) + (1 - lo_b)), abs=0.01
    )
    assert got.unresolved == 1  # no label covers "premise not denied"
    low, high = got.interval(got.incorrect_range)  # adds the sampling of the 10 tasks
    assert (low, high) == pytest.approx(
        (_bound(got.incorrect_range[0], 10, 0), _bound(got.incorrect_range[1], 10, 1))
    )
    assert low < got.incorrect_range[0] / 10 and high > got.incorrect_range[1] / 10
    assert "sampling); 1 undecided with no labelled rate left out" in got.text()


def _bound(k: float, n: int, side: int) -> float:
    bounds = wilson(k, n)
    assert bounds is not None
    return bounds[side]


def _run(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    """(task_id, category, verdict, reason) rows: one correctness row per trial."""
    return pd.DataFrame(
        {
            "task_id": [r[0] for r in rows], "category": [r[1] for r in rows],
            "dimension": "correctness", "should_refuse": False, "trial": 0,
            "verdict": [r[2] for r in rows],
            "detail": [json.dumps({"reason": r[3]} if r[3] else {}) for r in rows],
        }
    )  # fmt: skip


def test_run_outcomes_take_each_tasks_majority_and_its_reason() -> None:
    frame = _run([
        ("a", "factual", "pass", ""), ("a", "factual", "pass", ""), ("a", "factual", "needs_judge", "no alias stated"),
        ("b", "factual", "needs_judge", "states an alias in passing: x"), ("b", "factual", "needs_judge", "states an alias in passing: x"),
        ("c", "factual", "fail", ""), ("d", "adversarial", "needs_judge", "states an alias but denies nothing of it"),
        ("e", "factual", "n/a", ""),
    ])  # fmt: skip
    decided, reasons = run_outcomes(frame)
    assert (decided.correct, decided.incorrect, decided.not_attempted, decided.undecided) == (
        1,
        1,
        1,
        2,
    )
    assert reasons == {"alias in passing": 1, "premise not denied": 1}
    only, by_reason = run_outcomes(frame, ["factual"])
    assert only.tasks == 4 and by_reason == {"alias in passing": 1}


@pytest.mark.slow
def test_outcomes_cli_prints_the_estimate_and_refuses_bad_input(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    _run([("a", "factual", "pass", ""), ("b", "factual", "needs_judge", "no alias stated and no contradiction found")]).to_parquet(runs / "r.parquet")  # fmt: skip
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "\n".join(_example(i, NO_ALIAS, v).model_dump_json() for i, v in enumerate(["fail", "fail", "pass", "fail"]))
    )  # fmt: skip
    cmd = [
        sys.executable,
        "-m",
        "wikiqa.cli",
        "outcomes",
        "r",
        "--out",
        str(tmp_path),
        "--labels",
        str(labels),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "undecided, no alias stated: 1 (humans: 1/4 correct, 0.25" in done.stdout
    assert "resolved at the human rates:\n  correct 1.2 tasks (range " in done.stdout
    assert "labelled rates' 95% intervals)" in done.stdout and "(95% interval " in done.stdout
    bad = subprocess.run([*cmd, "--category", "trivia"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown category" in bad.stderr
    missing = subprocess.run([*cmd[:4], "nope", *cmd[5:]], capture_output=True, text=True)
    assert missing.returncode != 0 and "no such run" in missing.stderr


def test_every_run_report_counts_its_undecided_by_reason() -> None:
    from wikiqa.evals.analysis.summary import summarize

    frame = _run([
        ("a", "factual", "needs_judge", "no alias stated and no contradiction found"),
        ("b", "factual", "needs_judge", "no alias stated and no contradiction found"),
        ("c", "factual", "needs_judge", "states an alias in passing: the answer is about something else"),
        ("d", "factual", "pass", ""),
    ])  # fmt: skip
    simpleqa = summarize(frame).simpleqa
    assert simpleqa is not None and simpleqa.undecided == 3
    assert simpleqa.undecided_reasons == {"no alias stated": 2, "alias in passing": 1}
    assert "undecided 3 (75%) (no alias stated 2, alias in passing 1)" in simpleqa.text()


FRESH_LABELS = "experiments/labels_fresh/fresh_extractive.jsonl"


def test_label_commands_read_held_out_tasks_only_with_holdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Labels of answers to held-out questions (the fresh split's, labelled blind after its one
    run) are checked with --holdout; without it the split stays refused."""
    from wikiqa.cli.main import main

    assert main(["confidence", "check", FRESH_LABELS, "--suite", "fresh"]) == 1
    assert "held-out split only" in capsys.readouterr().err
    assert main(["confidence", "check", FRESH_LABELS, "--suite", "fresh", "--holdout"]) == 0
    assert "37 labelled answers" in capsys.readouterr().out
    run = "results/runs/20261130T163423Z-04-confidence-from-evidence-063371.parquet"
    assert main(["outcomes", run, "--labels", FRESH_LABELS, "--suite", "public"]) == 1
    assert "in none of the suites" in capsys.readouterr().err
    assert main(["validate", FRESH_LABELS, "--suite", "fresh", "--holdout"]) == 0
    assert "0.923 [0.67, 0.99] (12/13)" in capsys.readouterr().out
