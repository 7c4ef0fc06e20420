"""The `cite_sentences` lever: articles shown with numbered sentences, cited by number, and the
loop puts the cited sentence in the quote before any check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import fetched_of
from wikiqa.agent import Agent, AgentConfig, Answer, Refusal
from wikiqa.agent.citing import UNRESOLVED
from wikiqa.agent.grounding import citation_problems
from wikiqa.agent.prompts import prompt_hash, system_prompt, tools_for
from wikiqa.evals import RunConfig, RunLog, TrialRecord, run_eval
from wikiqa.evals.labels.validation import UNREADABLE, _proposed, proposals
from wikiqa.evals.running.passes import RunOutcome
from wikiqa.experiment.params import parameters
from wikiqa.models import SUBMIT, CitationArg, ScriptedModel, ToolResult
from wikiqa.sources import SnapshotSource

QUESTION = "Who developed the FLOW-MATIC programming language?"
FETCH = [{"name": "get_article", "arguments": {"title": "Grace Hopper"}}]
SECOND = "She developed the FLOW-MATIC programming language."


def _cite(title: str, sentence: Any, answer: str = "Grace Hopper developed it.") -> list[Any]:
    citation = {"title": title, "sentence": sentence}
    return [{"name": "submit_answer", "arguments": {"answer": answer, "citations": [citation]}}]


def test_the_model_reads_numbered_sentences_and_its_number_becomes_the_quote(
    tiny: SnapshotSource,
) -> None:
    script = [FETCH, _cite("grace hopper", 2)]
    result = Agent(ScriptedModel(script), tiny, AgentConfig(cite_sentences=True)).ask(QUESTION)
    assert isinstance(result.output, Answer)
    [citation] = result.output.citations
    assert (citation.title, citation.quote) == ("Grace Hopper", SECOND)  # the article's own title
    model = [e for e in result.trace if e.kind == "model"][-1]
    [call] = model.detail["calls"]
    assert call["arguments"]["citations"] == [{"title": "grace hopper", "sentence": 2}]
    assert call["quoted"]["citations"] == [{"title": "Grace Hopper", "quote": SECOND}]
    # what the model was shown: each sentence after its number
    shown = _shown(tiny, cite_sentences=True)
    assert (
        "[1] Grace Brewster Hopper was an American computer scientist. [2] She developed" in shown
    )
    assert "[1]" not in _shown(tiny, cite_sentences=False)


class _Recording:
    """A scripted model that keeps the conversation it was last sent."""

    def __init__(self, script: list[Any]) -> None:
        self.inner, self.spec = ScriptedModel(script), "scripted"
        self.sent: list[Any] = []

    def __call__(self, system: str, messages: Any, tools: Any, options: Any = None) -> Any:
        self.sent = list(messages)
        return self.inner(system, messages, tools, options)


def _shown(tiny: SnapshotSource, cite_sentences: bool) -> str:
    """The fetched article as the model read it."""
    model = _Recording([FETCH, _cite("Grace Hopper", 2)])
    Agent(model, tiny, AgentConfig(cite_sentences=cite_sentences)).ask(QUESTION)
    return "\n".join(m.content for m in model.sent if isinstance(m, ToolResult))


def test_a_number_the_article_lacks_gets_the_repair_turn_naming_what_exists(
    tiny: SnapshotSource,
) -> None:
    script = [FETCH, _cite("Grace Hopper", 7), _cite("Grace Hopper", 2)]
    result = Agent(ScriptedModel(script), tiny, AgentConfig(cite_sentences=True)).ask(QUESTION)
    assert isinstance(result.output, Answer) and result.output.citations[0].quote == SECOND
    [repair] = [e for e in result.trace if e.kind == "repair"]
    assert "'Grace Hopper' has sentences [1] to [2]; there is no [7]" in repair.summary
    unfetched = [FETCH, _cite("Mount Everest", 1), _cite("Mount Everest", 1)]
    refused = Agent(ScriptedModel(unfetched), tiny, AgentConfig(cite_sentences=True)).ask(QUESTION)
    assert isinstance(refused.output, Refusal) and refused.output.reason_code == "ungrounded"
    [repair] = [e for e in refused.trace if e.kind == "repair"]
    assert "'Mount Everest' was not fetched in this run (fetched: Grace Hopper)" in repair.summary
    for bad in ("2", True, 0, -1):  # not a sentence number: rejected, never read as one
        wrong = [FETCH, _cite("Grace Hopper", bad), _cite("Grace Hopper", bad)]
        out = (
            Agent(ScriptedModel(wrong), tiny, AgentConfig(cite_sentences=True)).ask(QUESTION).output
        )
        assert isinstance(out, Refusal) and out.reason_code == "ungrounded", bad


def test_the_checks_still_run_on_the_sentence_put_in(tiny: SnapshotSource) -> None:
    """A number only picks the quote: an answer the cited sentence does not state is still
    rejected, and a quote given as text is still checked as one."""
    wrong = _cite("Grace Hopper", 1, answer="John Backus developed FLOW-MATIC.")
    result = Agent(
        ScriptedModel([FETCH, wrong, wrong]), tiny, AgentConfig(cite_sentences=True)
    ).ask(QUESTION)
    assert isinstance(result.output, Refusal) and result.output.reason_code == "ungrounded"
    quoted = {"title": "Grace Hopper", "quote": SECOND}
    submit = [
        {"name": "submit_answer", "arguments": {"answer": "Grace Hopper.", "citations": [quoted]}}
    ]
    kept = Agent(ScriptedModel([FETCH, submit]), tiny, AgentConfig(cite_sentences=True)).ask(
        QUESTION
    )
    assert isinstance(kept.output, Answer) and kept.output.citations[0].quote == SECOND


def test_the_lever_changes_the_prompt_and_the_tools_and_nothing_without_it() -> None:
    assert prompt_hash(AgentConfig()) == "b1f854c30774f8cd"  # every recorded run's hash: unchanged
    assert prompt_hash(AgentConfig(cite_sentences=True)) != prompt_hash(AgentConfig())
    assert "number n of the sentence, shown as [n]" in system_prompt(
        AgentConfig(cite_sentences=True)
    )
    assert "copies a passage word for word" in system_prompt(AgentConfig())
    submit = next(t for t in tools_for(True) if t.name == SUBMIT)
    item = submit.parameters["properties"]["citations"]["items"]
    item = submit.parameters["$defs"][item["$ref"].rsplit("/", 1)[1]] if "$ref" in item else item
    assert set(item["properties"]) == {"title", "sentence"}
    assert item["properties"]["sentence"]["type"] == "integer"
    assert [t.name for t in tools_for(True)] == [t.name for t in tools_for(False)]


def _run_of(
    tiny: SnapshotSource, tmp_path: Path, script: list[list[Any]], read_first: int = 3
) -> RunOutcome:
    """One trial of the FLOW-MATIC question under the lever, recorded in `tmp_path`."""
    task = {
        "id": "flow-matic", "category": "factual", "should_refuse": False, "question": QUESTION,
        "dimensions": ["faithfulness", "correctness", "attribution", "calibration"],
        "reference_answer": "Grace Hopper", "answers": ["Grace Hopper"],
        "expected_sources": ["Grace Hopper"],
    }  # fmt: skip
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps(task) + "\n")
    config = RunConfig(
        suite=str(suite), trials=1, cite_sentences=True, cache=False, out=tmp_path,
        infra_backoff=0, read_first=read_first,
    )  # fmt: skip
    return run_eval(config, model=ScriptedModel(script), source=tiny, progress=False)


def _trials_of(
    tiny: SnapshotSource, tmp_path: Path, script: list[list[Any]], read_first: int = 3
) -> dict[tuple[str, int], TrialRecord]:
    outcome = _run_of(tiny, tmp_path, script, read_first)
    return RunLog.load(tmp_path, outcome.meta.run_id).trials


def test_a_run_records_the_lever_and_its_proposals_read_as_quotes(
    tiny: SnapshotSource, tmp_path: Path
) -> None:
    assert parameters({"CITE_SENTENCES": True}).agent().cite_sentences is True
    outcome = _run_of(tiny, tmp_path, [FETCH, _cite("Grace Hopper", 2)])
    assert outcome.meta.config.agent.cite_sentences is True
    assert outcome.meta.prompt_hash == prompt_hash(AgentConfig(cite_sentences=True))
    cells = outcome.summary.cells["factual"]
    assert cells["faithfulness"].passes == 1 and cells["attribution"].passes == 1
    [proposal] = proposals(RunLog.load(tmp_path, outcome.meta.run_id).trials)
    assert isinstance(proposal.answer, Answer) and proposal.answer.citations[0].quote == SECOND


def test_a_citation_the_loop_rejected_is_never_read_back_as_dropped(
    tiny: SnapshotSource, tmp_path: Path
) -> None:
    """One good citation beside a number the article lacks: the loop rejects the submission,
    and so must everything that reads it back (labels, replays), not see the good one alone."""
    citations = [
        {"title": "Grace Hopper", "sentence": 2},
        {"title": "Grace Hopper", "sentence": 10**15},
    ]
    both = [{"name": "submit_answer", "arguments": {"answer": "Grace Hopper.", "citations": citations}}]  # fmt: skip
    result = Agent(ScriptedModel([FETCH, both, both]), tiny, AgentConfig(cite_sentences=True)).ask(
        QUESTION
    )
    assert isinstance(result.output, Refusal) and result.output.reason_code == "ungrounded"
    call = [e for e in result.trace if e.kind == "model"][-1].detail["calls"][0]
    assert call["quoted"]["citations"] == [
        {"title": "Grace Hopper", "quote": SECOND}, {"title": "Grace Hopper", "quote": UNRESOLVED}
    ]  # fmt: skip
    [proposal] = proposals(_trials_of(tiny, tmp_path, [FETCH, both, both]))
    assert isinstance(proposal.answer, Answer)
    assert [c.quote for c in proposal.answer.citations] == [SECOND, UNRESOLVED]
    fetched = fetched_of(tiny, "Grace Hopper")
    cites = [CitationArg(title=c.title, quote=c.quote) for c in proposal.answer.citations]
    assert citation_problems(cites, fetched)  # a replay rejects it, as the loop did


def test_a_citation_of_an_article_fetched_in_the_same_turn_is_logged_resolved(
    tiny: SnapshotSource,
) -> None:
    # one turn: fetch the article and cite its sentence; the loop runs the fetch first
    turn = [FETCH[0], _cite("Grace Hopper", 2)[0]]
    result = Agent(ScriptedModel([turn]), tiny, AgentConfig(cite_sentences=True, read_first=0)).ask(
        QUESTION
    )
    assert isinstance(result.output, Answer) and result.output.citations[0].quote == SECOND
    call = [e for e in result.trace if e.kind == "model"][-1].detail["calls"][1]
    assert call["quoted"]["citations"] == [{"title": "Grace Hopper", "quote": SECOND}]


def test_journals_from_before_the_placeholders_are_read_without_the_dropped_citation() -> None:
    # written by the loop as it was: the unresolved citation left out of `quoted`
    old = {
        "name": "submit_answer", "error": None,
        "arguments": {"answer": "Grace Hopper.", "citations": [{"title": "Grace Hopper", "sentence": 2}, {"title": "Grace Hopper", "sentence": 9}]},
        "quoted": {"answer": "Grace Hopper.", "citations": [{"title": "Grace Hopper", "quote": SECOND}]},
    }  # fmt: skip
    answer = _proposed(old)
    assert isinstance(answer, Answer) and len(answer.citations) == 2
    assert answer.citations[1] == UNREADABLE
    # without the lever, a malformed citation is kept as unreadable too, and so is a bare answer
    bare = {"name": "submit_answer", "arguments": {"answer": "Grace Hopper.", "citations": [{"title": "Grace Hopper"}]}}  # fmt: skip
    assert _proposed(bare) == Answer(text="Grace Hopper.", citations=[UNREADABLE])
    none = {"name": "submit_answer", "arguments": {"answer": "Grace Hopper."}}
    assert _proposed(none) == Answer(text="Grace Hopper.", citations=[UNREADABLE])


def test_a_fetch_and_a_citation_in_one_turn_replay_as_the_loop_ran_them(
    tiny: SnapshotSource, tmp_path: Path
) -> None:
    # the loop fetched, then resolved and accepted the citation; its replay must see the fetch
    turn = [[FETCH[0], _cite("Grace Hopper", 2)[0]]]
    [proposal] = proposals(_trials_of(tiny, tmp_path, turn, read_first=0))
    assert proposal.retrieved == ["Grace Hopper"]  # fetched in the proposal's own turn
    assert isinstance(proposal.answer, Answer)
    cites = [CitationArg(title=c.title, quote=c.quote) for c in proposal.answer.citations]
    assert not citation_problems(cites, fetched_of(tiny, *proposal.retrieved))


def test_what_the_loop_calls_malformed_is_read_back_as_rejected() -> None:
    extra = {"name": "submit_answer", "arguments": {"answer": "Grace Hopper.", "citations": [{"title": "Grace Hopper", "quote": SECOND, "sentence": 2}]}}  # fmt: skip
    read = _proposed(extra)
    assert isinstance(read, Answer) and read.citations == [UNREADABLE]
    long = {"name": "submit_answer", "arguments": {"answer": "x " * 2001, "citations": [{"title": "Grace Hopper", "quote": SECOND}]}}  # fmt: skip
    read = _proposed(long)
    assert isinstance(read, Answer) and read.citations[-1] == UNREADABLE
    empty = {"name": "submit_answer", "arguments": {"answer": "", "citations": [{"title": "Grace Hopper", "quote": SECOND}]}}  # fmt: skip
    assert _proposed(empty) is None
