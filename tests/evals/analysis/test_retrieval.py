"""Retrieval figures in every run (`wikiqa.evals.analysis.retrieval`): recall@k of the expected
article, the gold in the text read, and each failing answerable trial put down to the stage that
lost it, from a recorded run whose five tasks each end at a different stage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wikiqa.evals import RunConfig, run_eval
from wikiqa.evals.analysis import render, summarize
from wikiqa.evals.analysis.retrieval import cause, retrieval_figures
from wikiqa.models import ScriptedModel
from wikiqa.models.protocol import Message, ModelTurn, UserMessage
from wikiqa.sources import SnapshotSource

DIMENSIONS = ["faithfulness", "correctness", "attribution", "calibration"]
DUNE = "Dune is a 1965 epic science fiction novel by American author Frank Herbert."


def _task(id_: str, question: str, answers: list[str], source: str) -> dict[str, Any]:
    return {
        "id": id_, "category": "factual", "question": question, "dimensions": DIMENSIONS,
        "reference_answer": answers[0], "answers": answers, "expected_sources": [source],
        "should_refuse": False,
    }  # fmt: skip


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _submit(answer: str, title: str, quote: str) -> dict[str, Any]:
    return _call("submit_answer", answer=answer, citations=[{"title": title, "quote": quote}])


class _ByQuestion:
    spec = "scripted:by-question"

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.models = {q: ScriptedModel(turns) for q, turns in scripts.items()}

    def __call__(self, system: str, messages: list[Message], *args: Any, **kw: Any) -> ModelTurn:
        first = next(m.text for m in messages if isinstance(m, UserMessage))
        return self.models[next(q for q in self.models if q in first)](
            system, messages, *args, **kw
        )


TASKS = [
    _task("dune-right", "Who wrote the novel Dune?", ["Frank Herbert"], "Dune (novel)"),
    _task("dune-wrong", "Which author is behind Dune?", ["Frank Herbert"], "Dune (novel)"),
    _task(
        "everest-refused",
        "In which sub-range of the Himalayas does Mount Everest lie?",
        ["Mahalangur Himal"],
        "Mount Everest",
    ),
    _task(
        "hopper-unread",
        "Which programming language did Grace Hopper develop?",
        ["FLOW-MATIC"],
        "Grace Hopper",
    ),
    _task("peak-unfound", "What is the tallest peak on the planet?", ["Everest"], "Mount Everest"),
    # not answerable: no retrieval figures, whatever happens
    {
        "id": "purpose",
        "category": "unanswerable",
        "question": "What is the purpose of god?",
        "dimensions": ["faithfulness", "calibration"],
        "should_refuse": True,
    },
]
SCRIPTS = {
    TASKS[0]["question"]: [
        [_call("get_article", title="Dune (novel)")],
        [_submit("Frank Herbert", "Dune (novel)", DUNE)],
    ],
    TASKS[1]["question"]: [
        [_call("get_article", title="Dune (novel)")],
        [_submit("an epic science fiction novel", "Dune (novel)", DUNE)],
    ],
    TASKS[2]["question"]: [
        [_call("get_article", title="Mount Everest")],
        [_call("refuse", reason="Not sure.")],
    ],
    TASKS[3]["question"]: [
        [_call("get_article", title="Mountain")],
        [_call("refuse", reason="Not in the text.")],
    ],
    TASKS[4]["question"]: [
        [_call("get_article", title="Mercury (planet)")],
        [_call("refuse", reason="Not in the text.")],
    ],
    TASKS[5]["question"]: [[_call("refuse", reason="Nobody knows.")]],
}


@pytest.fixture
def frame(tiny: SnapshotSource, tmp_path: Path) -> pd.DataFrame:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    config = RunConfig(
        suite=str(suite), trials=1, concurrency=1, out=tmp_path / "results", cache=False
    )
    outcome = run_eval(config, model=_ByQuestion(SCRIPTS), source=tiny, progress=False)
    return outcome.frame


def test_each_trial_records_its_retrieval_columns(frame: pd.DataFrame) -> None:
    rows = frame.drop_duplicates("task_id").set_index("task_id")
    assert rows.loc["dune-right", "expected_rank"] == 1
    assert rows.loc["everest-refused", "expected_rank"] == 1
    assert rows["expected_rank"].isna().to_dict()["peak-unfound"]
    assert list(rows["gold_read"].iloc[:5]) == [True, True, True, False, False]
    assert list(rows["expected_found"].iloc[:5]) == [True, True, True, True, False]
    assert rows["gold_read"].isna().to_dict()["purpose"]  # not an answerable task


def test_the_run_summary_splits_failures_by_stage(frame: pd.DataFrame) -> None:
    figures = summarize(frame).retrieval
    assert figures is not None
    assert figures.trials == 5  # the unanswerable task is not counted
    assert figures.recall == {1: 4, 3: 4, 5: 4}
    assert figures.gold_read == 3 and figures.correct == 1 and figures.undecided == 0
    assert figures.lost == {
        "not_retrieved": 1,
        "retrieved_not_read": 1,
        "read_not_answered": 1,
        "answered_wrong": 1,
    }
    assert figures.share(figures.recall[5]) == 0.8
    text = render(summarize(frame))
    assert "retrieval (5 answerable trials): expected article in the first search @1 4/5" in text
    assert "gold in the text read 3/5" in text
    assert "not retrieved 1, retrieved not read 1, read not answered 1, answered wrong 1" in text


def test_a_results_table_without_the_columns_has_no_figures(frame: pd.DataFrame) -> None:
    older = frame.drop(columns=["expected_rank", "expected_found", "gold_read"])
    assert summarize(older).retrieval is None
    assert retrieval_figures([]) is None


@pytest.mark.parametrize(
    ("found", "read", "refused", "stage"),
    [
        (False, False, False, "not_retrieved"),
        (False, False, True, "not_retrieved"),
        (True, False, True, "retrieved_not_read"),
        (False, True, True, "read_not_answered"),  # the gold read in another article
        (True, True, False, "answered_wrong"),
    ],
)
def test_the_first_stage_that_lost_it(found: bool, read: bool, refused: bool, stage: str) -> None:
    assert cause(found, read, refused) == stage
