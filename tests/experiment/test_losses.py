"""Losses by stage (`wikiqa.experiment.losses`): where a recorded run's answerable trials lost
the gold answer, read from its journal; and the figures table of the report page that cites it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wikiqa.evals import RunConfig, journal_dir, run_eval
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
    figures = losses_by_stage(journal_dir(out, run_id), tiny)
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


def test_a_run_is_found_by_its_id_or_its_journal_file(
    tiny: SnapshotSource, four_trials: tuple[Path, str]
) -> None:
    out, run_id = four_trials
    by_folder = losses_by_stage(journal_dir(out, run_id), tiny)
    assert losses_by_stage(run_id, tiny, out=out) == by_folder
    assert losses_by_stage(journal_dir(out, run_id) / "journal.jsonl", tiny) == by_folder


def test_a_folder_that_is_no_run_and_an_unknown_run_id_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no meta\.json"):
        losses_by_stage(tmp_path)
    with pytest.raises(ValueError, match="no journal of run 'nope'"):
        losses_by_stage("nope", out=tmp_path)


def _figures_table(page: Path, heading: str) -> list[dict[str, str]]:
    """The markdown table under `heading` in `page`, as one {column: cell} per row."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            table.append([cell.strip() for cell in line.strip("|").split("|")])
        elif table:
            break
    header, rows = table[0], table[2:]  # table[1] is the |---| line
    return [dict(zip(header, row, strict=True)) for row in rows]


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


def test_the_reports_figures_are_what_the_committed_journals_give(
    snapshot: SnapshotSource,
) -> None:
    rows = _figures_table(REPORT, "### Losses by stage")
    assert len(rows) == 10
    for row in rows:
        run_id = row["run"].strip("`")
        figures = losses_by_stage(ROOT / "results" / "journals" / run_id, snapshot)
        expected = _columns(figures)
        assert set(expected) <= set(row), sorted(set(expected) - set(row))
        assert {k: int(row[k]) for k in expected} == expected, run_id
