"""The `abstain_below` lever: an answer that passed every check is refused when its fitted
confidence is under the threshold; it acts after the model's last call, so it costs no call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wikiqa.agent import Agent, AgentConfig, Answer, Refusal
from wikiqa.evals import RunConfig, run_eval
from wikiqa.experiment.params import parameters
from wikiqa.models import ScriptedModel
from wikiqa.sources import SnapshotSource

QUESTION = "Who developed the FLOW-MATIC programming language?"
QUOTE = "She developed the FLOW-MATIC programming language."
FETCH = [{"name": "get_article", "arguments": {"title": "Grace Hopper"}}]


def _script(answer: str = "Grace Hopper developed FLOW-MATIC.") -> list[Any]:
    citation = {"title": "Grace Hopper", "quote": QUOTE}
    submit = [{"name": "submit_answer", "arguments": {"answer": answer, "citations": [citation]}}]
    return [FETCH, submit]


def test_an_answer_under_the_threshold_is_refused_and_what_it_said_is_kept(
    tiny: SnapshotSource,
) -> None:
    plain = Agent(ScriptedModel(_script()), tiny).ask(QUESTION)
    assert isinstance(plain.output, Answer) and 0.0 < plain.confidence < 1.0
    score = plain.confidence
    over = Agent(ScriptedModel(_script()), tiny, AgentConfig(abstain_below=score + 0.01)).ask(
        QUESTION
    )
    assert isinstance(over.output, Refusal) and over.output.reason_code == "low_confidence"
    assert over.confidence == 0.0 and over.signals == {} and over.needs_human_review
    assert f"{score:.2f}" in over.output.reason
    kept = [e for e in over.trace if e.summary.startswith("abstained")]
    assert len(kept) == 1 and kept[0].detail["answer"] == plain.output.text
    assert kept[0].detail["confidence"] == score and kept[0].detail["signals"] == plain.signals
    assert over.trace[-1].kind == "decision" and "low_confidence" in over.trace[-1].summary
    # at the score itself it answers: the threshold is "under", as the extractive answerer's
    at = Agent(ScriptedModel(_script()), tiny, AgentConfig(abstain_below=score)).ask(QUESTION)
    assert isinstance(at.output, Answer) and at.confidence == score


def test_a_refusal_and_a_rejected_answer_are_left_as_they_are(tiny: SnapshotSource) -> None:
    refuse = [FETCH, [{"name": "refuse", "arguments": {"reason": "Not in the text."}}]]
    result = Agent(ScriptedModel(refuse), tiny, AgentConfig(abstain_below=1.0)).ask(QUESTION)
    assert isinstance(result.output, Refusal) and result.output.reason_code == "not_supported"
    assert not [e for e in result.trace if e.summary.startswith("abstained")]


@pytest.mark.slow
def test_a_threshold_outside_zero_to_one_is_an_error(tiny: SnapshotSource) -> None:
    with pytest.raises(ValueError, match="less than or equal to 1"):
        Agent(ScriptedModel([]), tiny, AgentConfig(abstain_below=1.5))
    with pytest.raises(ValueError, match=r"-p ABSTAIN_BELOW -0\.1"):
        parameters({"ABSTAIN_BELOW": -0.1})
    done = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", "ask", "who?", "--abstain-below", "2"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "--abstain-below Input should be less than or equal to 1" in done.stderr


def test_a_run_with_the_lever_is_the_run_without_it_from_the_cache(
    tiny: SnapshotSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Graded: the unanswerable question's answer, refused, now passes calibration; and the
    second run makes no model call, since the lever acts after the last one."""
    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path / "home"))  # a cache of this test's own
    task = {
        "id": "hopper-language", "category": "unanswerable", "should_refuse": True,
        "question": QUESTION, "dimensions": ["faithfulness", "calibration"],
    }  # fmt: skip
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps(task) + "\n")
    base: dict[str, Any] = {"suite": str(suite), "trials": 1, "out": tmp_path, "infra_backoff": 0}
    first = run_eval(RunConfig(**base), model=ScriptedModel(_script()), source=tiny, progress=False)
    assert first.model_calls == 2 and first.summary.cells["unanswerable"]["calibration"].passes == 0
    lever = RunConfig(**base, abstain_below=1.0)
    second = run_eval(lever, model=ScriptedModel(_script()), source=tiny, progress=False)
    assert second.meta.config.agent.abstain_below == 1.0
    assert second.model_calls == 0 and second.cached_calls == 2
    assert second.summary.cells["unanswerable"]["calibration"].passes == 1
    assert set(second.frame["reason_code"]) == {"low_confidence"}
