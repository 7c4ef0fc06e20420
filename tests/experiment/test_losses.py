"""Losses by stage (`wikiqa.experiment.losses`): where a recorded run's answerable trials lost
the gold answer, read from its log; and the figures table of the report page that cites it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.reports import figures_table
from wikiqa.evals import RunConfig, log_path, run_eval
from wikiqa.experiment import losses_by_stage, losses_text
from wikiqa.models import ScriptedModel
from wikiqa.models.protocol import Message, ModelTurn, UserMessage
from wikiqa.project import project_root
from wikiqa.sources import SnapshotSource

DIMENSIONS = ["faithfulness", "correctness", "attribution", "calibration"]
ROOT = project_root()
REPORT = ROOT / "results" / "reports" / "qwen-climb.md"


def _task(id_: str, question: str, answers: list[str], source: str) -> dict[str, Any]:
    return {
        "id": id_, "category": "factual", "question": question, "dimensions": DIMENSIONS,
        "reference_answer": answers[0], "answers": answers, "expected_sources": [source],
        "should_refuse": False,
    }  # fmt: skip


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


class _ByQuestion:
    """A script per question (a `ScriptedModel` plays one script for every question)."""

    spec = "scripted:by-question"

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.models = {q: ScriptedModel(turns) for q, turns in scripts.items()}

    def __call__(self, system: str, messages: list[Message], *args: Any, **kw: Any) -> ModelTurn:
        first = next(m.text for m in messages if isinstance(m, UserMessage))
        question = next(q for q in self.models if q in first)
        return self.models[question](system, messages, *args, **kw)


@pytest.fixture
def four_trials(tiny: SnapshotSource, tmp_path: Path) -> tuple[Path, str]:
    """A recorded run of four answerable tasks, one trial each, each lost (or won) at a
    different stage: (the results folder, the run id)."""
    tasks = [
        _task("dune-author", "Who wrote the novel Dune?", ["Frank Herbert"], "Dune (novel)"),
        _task(
            "hopper-language",
            "Which programming language did Grace Hopper develop?",
            ["FLOW-MATIC"],
            "Grace Hopper",
        ),
        _task(
            "everest-range",
            "In which sub-range of the Himalayas does Mount Everest lie?",
            ["Mahalangur Himal"],
            "Mount Everest",
        ),
        _task("dune-writer", "Which author is behind Dune?", ["Frank Herbert"], "Dune (novel)"),
    ]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    # the gold, under a quote that is not verbatim: rejected twice
    paraphrased = _call(
        "submit_answer",
        answer="Frank Herbert wrote Dune.",
        citations=[{"title": "Dune (novel)", "quote": "Dune is a novel written by Frank Herbert"}],
    )
    verbatim = _call(
        "submit_answer",
        answer="Grace Hopper developed FLOW-MATIC.",
        citations=[
            {"title": "Grace Hopper", "quote": "She developed the FLOW-MATIC programming language."}
        ],
    )
    # the gold, under a verbatim quote that does not state it: rejected twice
    unbacked = _call(
        "submit_answer",
        answer="Frank Herbert wrote Dune.",
        citations=[
            {
                "title": "Mountain",
                "quote": "A mountain is an elevated portion of the Earth's crust.",
            }
        ],
    )
    scripts = {
        tasks[0]["question"]: [
            [_call("get_article", title="Dune (novel)")], [paraphrased], [paraphrased]
        ],
        tasks[1]["question"]: [[_call("get_article", title="Grace Hopper")], [verbatim]],
        tasks[2]["question"]: [
            [_call("get_article", title="Mountain")], [_call("refuse", reason="Not in the text.")]
        ],
        tasks[3]["question"]: [
            [_call("get_article", title="Dune (novel)"), _call("get_article", title="Mountain")],
            [unbacked],
            [unbacked],
        ],
    }  # fmt: skip
    config = RunConfig(
        suite=str(suite),
        trials=1,
        concurrency=1,
        out=tmp_path / "results",
        infra_backoff=0.0,
        cache=False,
    )
    outcome = run_eval(config, model=_ByQuestion(scripts), source=tiny, progress=False)
    return tmp_path / "results", outcome.meta.run_id


def test_each_lost_trial_is_put_down_to_its_stage(
    tiny: SnapshotSource, four_trials: tuple[Path, str]
) -> None:
    out, run_id = four_trials
    figures = losses_by_stage(run_id, tiny, out=out)
    assert figures["run_id"] == run_id and figures["trials"] == 4
    assert figures["expected_fetched"] == 3  # Everest's article was never fetched
    assert figures["in_reach"] == 3 and figures["gold_proposed"] == 3
    assert figures["gold_proposed_out_of_reach"] == 0
    assert figures["outcomes"] == {
        "correct": 1, "incorrect": 0, "undecided": 0, "not_attempted": 3
    }  # fmt: skip
    assert figures["lost"]["in_reach"] == {
        "quote_not_verbatim": 1, "answer_not_in_quotes": 1, "passed_checks": 0,
        "never_proposed": 0,
    }  # fmt: skip
    assert figures["lost"]["out_of_reach"] == {
        "quote_not_verbatim": 0, "answer_not_in_quotes": 0, "passed_checks": 0,
        "never_proposed": 1,
    }  # fmt: skip
    text = losses_text(figures)
    assert "a proposal states an alias                  3/4" in text
    assert "incorrect or not attempted, the gold in reach: 2 trials" in text
    assert "quote not verbatim     1/2" in text and "answer not in quotes   1/2" in text


def test_a_run_is_found_by_its_id_or_its_log_file(
    tiny: SnapshotSource, four_trials: tuple[Path, str]
) -> None:
    out, run_id = four_trials
    by_id = losses_by_stage(run_id, tiny, out=out)
    assert losses_by_stage(log_path(out, run_id), tiny) == by_id


def test_an_unknown_run_id_and_a_path_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no log of run 'nope'"):
        losses_by_stage("nope", out=tmp_path)
    with pytest.raises(ValueError, match="is not a run id"):
        losses_by_stage("../../etc", out=tmp_path)


def _columns(figures: dict[str, Any]) -> dict[str, int]:
    """The report's column names, each with its figure."""
    lost = figures["lost"]
    return {
        "trials": figures["trials"],
        "expected source fetched": figures["expected_fetched"],
        "gold in reach": figures["in_reach"],
        "gold proposed": figures["gold_proposed"],
        "gold proposed from memory": figures["gold_proposed_out_of_reach"],
        **{k.replace("_", " "): v for k, v in figures["outcomes"].items()},
        **{f"lost in reach: {k.replace('_', ' ')}": v for k, v in lost["in_reach"].items()},
        "lost out of reach": sum(lost["out_of_reach"].values()),
    }


@pytest.mark.slow
def test_the_reports_figures_are_what_the_committed_logs_give(
    snapshot: SnapshotSource,
) -> None:
    rows = figures_table(REPORT, "### Losses by stage")
    assert len(rows) == 10
    for row in rows:
        run_id = row["run"].strip("`")
        figures = losses_by_stage(run_id, snapshot, out=ROOT / "results")
        expected = _columns(figures)
        assert set(expected) <= set(row), sorted(set(expected) - set(row))
        assert {k: int(row[k]) for k in expected} == expected, run_id
