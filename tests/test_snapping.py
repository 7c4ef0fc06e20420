"""The quote-repair what-if (`python -m wikiqa.bench snapping`): what it snaps, and its replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import fetched_of
from wikiqa.bench.snapping import RECITE, bench_snapping, recite, report, snap
from wikiqa.evals import RunConfig, journal_dir, run_eval
from wikiqa.models import CitationArg, ScriptedModel
from wikiqa.sources import SnapshotSource

DUNE = "Dune is a 1965 epic science fiction novel by American author Frank Herbert."


def test_a_verbatim_quote_under_the_wrong_title_is_reattributed(tiny: SnapshotSource) -> None:
    fetched = fetched_of(tiny, "Mountain", "Mount Everest")
    wrong = CitationArg(title="Mountain", quote="Mount Everest is the highest mountain on Earth")
    assert snap(wrong, fetched, 1.0, 0.8) == CitationArg(
        title="Mount Everest", quote="Mount Everest is the highest mountain on Earth"
    )


def test_a_shortened_quote_snaps_to_its_sentence_only_as_loosely_as_allowed(
    tiny: SnapshotSource,
) -> None:
    fetched = fetched_of(tiny, "Dune (novel)", "Mountain")
    shortened = CitationArg(
        title="Dune (novel)", quote="Dune is a 1965 science fiction novel by Frank Herbert"
    )
    # 7 of the sentence's 10 content stems: under precision 0.8, over 0.5
    assert snap(shortened, fetched, 1.0, 0.8) is None
    assert snap(shortened, fetched, 0.9, 0.5) == CitationArg(title="Dune (novel)", quote=DUNE)
    unrelated = CitationArg(title="Dune (novel)", quote="Herbert sailed across the Atlantic twice")
    assert snap(unrelated, fetched, 0.8, 0.3) is None


def test_recite_adds_the_sentence_about_the_question_that_backs_the_answer(
    tiny: SnapshotSource,
) -> None:
    fetched = fetched_of(tiny, "Dune (novel)", "Mountain")
    question, answer = "Who wrote the novel Dune?", "Frank Herbert wrote Dune."
    off = [
        CitationArg(
            title="Mountain", quote="A mountain is an elevated portion of the Earth's crust."
        )
    ]
    dune = CitationArg(title="Dune (novel)", quote=DUNE)
    # the Dune sentence holds 2 of the question's 3 content stems (novel, dune; not "wrote")
    assert recite(answer, question, off, fetched, strict=True) == [*off, dune]
    assert recite(answer, question, off, fetched, strict=True, share=1.0) is None
    assert recite(answer, question, [dune], fetched, strict=True) is None  # already backed
    garbled = [CitationArg(title="Dune (novel)", quote="Dune is a novel by Frank Herbert")]
    assert recite(answer, question, garbled, fetched, strict=True) is None  # not verbatim
    # an answer no fetched sentence states stays unbacked
    assert recite("Isaac Asimov wrote Dune.", question, off, fetched, strict=True) is None


def _dune_run(tiny: SnapshotSource, tmp_path: Path, script: list[list[dict[str, Any]]]) -> Path:
    """The journal folder of one scripted trial of "Who wrote the novel Dune?", which the loop
    refused as ungrounded (the script submits twice, and both fail its checks)."""
    task: dict[str, Any] = {
        "id": "dune-author", "category": "factual", "question": "Who wrote the novel Dune?",
        "dimensions": ["faithfulness", "correctness", "attribution", "calibration"],
        "reference_answer": "Frank Herbert.", "answers": ["Frank Herbert", "Herbert"],
        "expected_sources": ["Dune (novel)"], "should_refuse": False,
    }  # fmt: skip
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps(task) + "\n")
    config = RunConfig(
        suite=str(suite), trials=1, cache=False, out=tmp_path / "results", infra_backoff=0.0
    )
    outcome = run_eval(config, model=ScriptedModel(script), source=tiny, progress=False)
    folder = journal_dir(tmp_path / "results", outcome.meta.run_id)
    recorded = json.loads((folder / "journal.jsonl").read_text())["result"]["output"]
    assert recorded["reason_code"] == "ungrounded"
    return folder


def _submit(title: str, quote: str) -> dict[str, Any]:
    citation = {"title": title, "quote": quote}
    return {"name": "submit_answer", "arguments": {"answer": "Frank Herbert wrote Dune.", "citations": [citation]}}  # fmt: skip


def _fetch(*titles: str) -> list[dict[str, Any]]:
    return [{"name": "get_article", "arguments": {"title": t}} for t in titles]


def test_the_replay_counts_what_the_lever_would_change(
    tiny: SnapshotSource, tmp_path: Path
) -> None:
    # as run: the quote is not verbatim, twice
    near = _submit("Dune (novel)", "Dune is a 1965 science fiction novel by Frank Herbert")
    folder = _dune_run(tiny, tmp_path, [_fetch("Dune (novel)"), [near], [near]])

    figures = bench_snapping(folder, tiny)
    assert figures["trials_with_submissions"] == 1
    strict, medium = figures["recall 1 precision 0.8"], figures["recall 0.9 precision 0.5"]
    assert strict["answered"] == {"recorded": 0, "snapped": 0} and strict["changed_trials"] == {}
    assert medium["answered"] == {"recorded": 0, "snapped": 1}
    assert medium["changed_trials"] == {"correct": 1}
    assert medium["changed_tasks"] == {"correct": ["dune-author"]}
    assert "changed to correct: 1 trials, 1 tasks (dune-author)" in report(figures)


def test_the_recite_replay_answers_a_submission_its_verbatim_quotes_did_not_back(
    tiny: SnapshotSource, tmp_path: Path
) -> None:
    # as run: verbatim, twice, but the quote never says Herbert
    off = _submit("Mountain", "A mountain is an elevated portion of the Earth's crust.")
    folder = _dune_run(tiny, tmp_path, [_fetch("Dune (novel)", "Mountain"), [off], [off]])

    figures = bench_snapping(folder, tiny)
    assert figures["trim"]["answered"] == {"recorded": 0, "snapped": 0}  # nothing to trim
    assert figures[RECITE]["answered"] == {"recorded": 0, "snapped": 1}
    assert figures[RECITE]["changed_trials"] == {"correct": 1}


def test_the_bench_says_what_it_needs_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wikiqa.bench.main import main

    assert main(["snapping"]) == 1
    assert "snapping needs --journal" in capsys.readouterr().err
    assert main(["snapping", "--journal", str(tmp_path)]) == 1
    assert "no meta.json" in capsys.readouterr().err
