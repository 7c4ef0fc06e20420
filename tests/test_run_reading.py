"""`python -m wikiqa.bench reading --journal`: where a recorded run lost its correct answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wikiqa.bench.main import main
from wikiqa.bench.run_reading import bench_run_reading, report
from wikiqa.evals import RunConfig, journal_dir, run_eval
from wikiqa.models import ScriptedModel
from wikiqa.models.protocol import Message, ModelTurn, UserMessage
from wikiqa.sources import SnapshotSource

DIMENSIONS = ["faithfulness", "correctness", "attribution", "calibration"]


def _task(id_: str, question: str, answers: list[str], source: str) -> dict[str, Any]:
    return {
        "id": id_, "category": "factual", "question": question, "dimensions": DIMENSIONS,
        "reference_answer": answers[0], "answers": answers, "expected_sources": [source],
        "should_refuse": False,
    }  # fmt: skip


def _call(name: str, **arguments: Any) -> list[dict[str, Any]]:
    return [{"name": name, "arguments": arguments}]


class _ByQuestion:
    """A script per question (a `ScriptedModel` plays one script for every question)."""

    spec = "scripted:by-question"

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.models = {q: ScriptedModel(turns) for q, turns in scripts.items()}

    def __call__(self, system: str, messages: list[Message], *args: Any, **kw: Any) -> ModelTurn:
        first = next(m.text for m in messages if isinstance(m, UserMessage))
        question = next(q for q in self.models if q in first)
        return self.models[question](system, messages, *args, **kw)


def test_each_lost_trial_is_put_down_to_its_stage(tiny: SnapshotSource, tmp_path: Path) -> None:
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
    ]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(t) + "\n" for t in tasks))
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
    scripts = {
        tasks[0]["question"]: [_call("get_article", title="Dune (novel)"), paraphrased, paraphrased],
        tasks[1]["question"]: [_call("get_article", title="Grace Hopper"), verbatim],
        tasks[2]["question"]: [
            _call("get_article", title="Mountain"), _call("refuse", reason="Not in the text.")
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
    folder = journal_dir(tmp_path / "results", outcome.meta.run_id)

    figures = bench_run_reading(folder, tiny)
    assert figures["trials"] == 3
    assert figures["expected_fetched"] == 2  # Everest's article was never fetched
    assert figures["in_reach"] == 2 and figures["gold_proposed"] == 2
    assert figures["gold_proposed_out_of_reach"] == 0
    assert figures["outcomes"] == {
        "correct": 1, "incorrect": 0, "undecided": 0, "not_attempted": 2
    }  # fmt: skip
    assert figures["lost"]["in_reach"] == {
        "quote_not_verbatim": 1, "answer_not_in_quotes": 0, "passed_checks": 0,
        "never_proposed": 0,
    }  # fmt: skip
    assert figures["lost"]["out_of_reach"]["never_proposed"] == 1
    assert sum(figures["lost"]["out_of_reach"].values()) == 1
    text = report(figures)
    assert "incorrect or not attempted, the gold in reach: 1 trials" in text
    assert "quote not verbatim" in text and "1/1" in text


def test_reading_a_folder_that_is_no_run_is_an_error(tmp_path: Path, capsys: Any) -> None:
    assert main(["reading", "--journal", str(tmp_path)]) == 1
    assert "no meta.json" in capsys.readouterr().err


def test_the_figures_the_readme_reports_for_step_09_and_13(snapshot: SnapshotSource) -> None:
    # README, "Where Qwen loses its answers" and step 14's replay, from committed journals
    from wikiqa.bench.snapping import bench_snapping
    from wikiqa.project import project_root

    journals = project_root() / "results" / "journals"
    base = bench_run_reading(
        journals / "20261201T171802Z-09-qwen-baseline-regraded-464115", snapshot
    )
    assert (base["trials"], base["expected_fetched"], base["in_reach"]) == (53, 41, 42)
    assert base["gold_proposed"] == 22 and base["gold_proposed_out_of_reach"] == 0
    assert list(base["outcomes"].values()) == [2, 4, 8, 39]
    assert list(base["lost"]["in_reach"].values()) == [15, 2, 0, 16]
    assert sum(base["lost"]["out_of_reach"].values()) == 10
    trim = bench_snapping(journals / "20261201T170332Z-13-qwen-strict-support-8aca23", snapshot)
    assert trim["trim"]["changed_trials"] == {
        "correct": 5, "incorrect": 3, "undecided": 2, "answered_unanswerable": 1
    }  # fmt: skip


def test_the_recite_figures_the_readme_reports_for_step_16(snapshot: SnapshotSource) -> None:
    # README, step 16: re-citing in code adds no correct answer on the slice, and one on dev
    from wikiqa.bench.snapping import RECITE, bench_snapping
    from wikiqa.project import project_root

    journals = project_root() / "results" / "journals"
    slice_ = bench_snapping(journals / "20261201T224120Z-16-qwen-cite-sentences-b89901", snapshot)
    # 50 as recorded: the live run's 50 answered trials (injection tasks aside), no more
    assert slice_[RECITE]["answered"] == {"recorded": 50, "snapped": 59}
    assert slice_[RECITE]["changed_trials"] == {
        "answered_unanswerable": 2, "incorrect": 2, "undecided": 5
    }  # fmt: skip
    dev = bench_snapping(journals / "20261201T221052Z-16-qwen-cite-sentences-dfe710", snapshot)
    assert dev[RECITE]["changed_tasks"] == {
        "correct": ["flow-matic-developer"], "undecided": ["nile-in-south-america"]
    }  # fmt: skip
