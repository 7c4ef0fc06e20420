"""The `trim_quotes` lever: a quote's garbled tail is cut to the verbatim sentences before it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import fetched_of
from wikiqa.agent import Agent, AgentConfig, Answer, Refusal
from wikiqa.agent.grounding import Fetched, trimmed
from wikiqa.evals import RunConfig, run_eval
from wikiqa.experiment.params import parameters
from wikiqa.models import CitationArg, ScriptedModel
from wikiqa.sources import Article, Provenance, SnapshotSource

EVEREST = "Mount Everest is the highest mountain on Earth above sea level."
RANGE = "It lies in the Mahalangur Himal sub-range of the Himalayas."
# Qwen's way of failing a long copy (step 09, public slice): right, then garbled at the end
GARBLED = f"{EVEREST} {RANGE} Originally包括七个"


def test_a_garbled_tail_is_cut_at_the_last_verbatim_sentence(tiny: SnapshotSource) -> None:
    fetched = fetched_of(tiny, "Mount Everest", "Mountain")
    cut = trimmed(CitationArg(title="Mount Everest", quote=GARBLED), fetched)
    assert cut == CitationArg(title="Mount Everest", quote=f"{EVEREST} {RANGE}")
    wrong_second = f"{EVEREST} It lies in the Alps of Switzerland."
    assert trimmed(CitationArg(title="Mount Everest", quote=wrong_second), fetched) == (
        CitationArg(title="Mount Everest", quote=EVEREST)
    )


def test_the_models_own_words_are_reattributed_never_added_to(tiny: SnapshotSource) -> None:
    fetched = fetched_of(tiny, "Mount Everest", "Mountain")
    # verbatim, but under the wrong title: the article that has them is cited instead
    assert trimmed(CitationArg(title="Mountain", quote=f'"{EVEREST}"'), fetched) == (
        CitationArg(title="Mount Everest", quote=EVEREST)
    )
    # nothing to keep: the first sentence is not verbatim anywhere
    paraphrase = "Everest is the tallest mountain in the world. It lies in Nepal."
    assert trimmed(CitationArg(title="Mount Everest", quote=paraphrase), fetched) is None


def test_a_cut_too_short_to_quote_is_no_cut() -> None:
    text = "It rose. The peak was first climbed in 1953 by Tenzing Norgay and Edmund Hillary."
    article = Article(title="Peak", text=text, url="u", provenance=Provenance(source="snapshot"))
    fetched = Fetched()
    fetched.add("Peak", article)
    assert trimmed(CitationArg(title="Peak", quote=text + " Tenzing then"), fetched) == (
        CitationArg(title="Peak", quote=text)
    )
    # "It rose." is verbatim, but two words: under the verbatim check's own minimum
    garbled = "It rose. The peak was climbed by Hillary"
    assert trimmed(CitationArg(title="Peak", quote=garbled), fetched) is None


def _submit(answer: str, quote: str) -> list[dict[str, Any]]:
    citation = {"title": "Mount Everest", "quote": quote}
    return [{"name": "submit_answer", "arguments": {"answer": answer, "citations": [citation]}}]


def test_through_the_loop_the_cut_quote_must_still_back_the_answer(tiny: SnapshotSource) -> None:
    fetch = [{"name": "get_article", "arguments": {"title": "Mount Everest"}}]
    question = "In which sub-range of the Himalayas does Mount Everest lie?"
    right = _submit("Mount Everest lies in the Mahalangur Himal.", GARBLED)
    good = [fetch, right, right]
    default = Agent(ScriptedModel(good), tiny).ask(question)
    assert isinstance(default.output, Refusal) and default.output.reason_code == "ungrounded"
    lever = Agent(ScriptedModel(good), tiny, AgentConfig(trim_quotes=True)).ask(question)
    assert isinstance(lever.output, Answer)
    assert [c.quote for c in lever.output.citations] == [f"{EVEREST} {RANGE}"]
    trims = [e for e in lever.trace if e.kind == "trim"]
    assert len(trims) == 1 and trims[0].detail["before"]["quote"] == GARBLED
    assert not [e for e in lever.trace if e.kind == "repair"]

    # the answer's claim was only in the garbled part: once cut, the support check refuses it
    only_tail = f"{EVEREST} It lies in the Karakoram of Pakistan, near K2."
    wrong = _submit("Mount Everest lies in the Karakoram.", only_tail)
    bad = [fetch, wrong, wrong]
    cut = Agent(ScriptedModel(bad), tiny, AgentConfig(trim_quotes=True)).ask(question)
    assert isinstance(cut.output, Refusal) and cut.output.reason_code == "ungrounded"
    repairs = [e for e in cut.trace if e.kind == "repair"]
    assert len(repairs) == 1 and "Karakoram" in repairs[0].summary


def test_the_lever_is_a_step_parameter_and_recorded_with_the_run(
    tiny: SnapshotSource, tmp_path: Path
) -> None:
    assert parameters({"TRIM_QUOTES": True}).agent().trim_quotes is True
    task = {
        "id": "everest-range", "category": "factual", "should_refuse": False,
        "question": "In which sub-range of the Himalayas does Mount Everest lie?",
        "dimensions": ["faithfulness", "correctness", "attribution", "calibration"],
        "reference_answer": "Mahalangur Himal", "answers": ["Mahalangur Himal"],
        "expected_sources": ["Mount Everest"],
    }  # fmt: skip
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps(task) + "\n")
    submit = _submit("Mount Everest lies in the Mahalangur Himal.", GARBLED)
    script = [[{"name": "get_article", "arguments": {"title": "Mount Everest"}}], submit, submit]
    config = RunConfig(
        suite=str(suite), trials=1, trim_quotes=True, cache=False, out=tmp_path, infra_backoff=0
    )
    outcome = run_eval(config, model=ScriptedModel(script), source=tiny, progress=False)
    assert outcome.meta.config.agent.trim_quotes is True
    cells = outcome.summary.cells["factual"]  # graded on the cut quote: grounded, attributed
    assert cells["faithfulness"].passes == 1 and cells["attribution"].passes == 1
