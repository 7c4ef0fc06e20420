"""The response cache and the output-token cap: a reply is served only where the cap of the call
asking for it would have given the same reply, and every run records its cap."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest

from tests.runlogs import cut_after
from wikiqa.evals import RunConfig, log_path, run_eval
from wikiqa.evals.running.cache import CAP_FIELD, CachingModel, ResponseCache
from wikiqa.evals.running.served import ServedModel
from wikiqa.models import (
    AssistantMessage,
    CallOptions,
    Message,
    ModelTurn,
    TokenUsage,
    ToolSpec,
    UserMessage,
)
from wikiqa.sources import SnapshotSource

ASKED = [UserMessage(text="who wrote dracula")]


class Capped:
    """A model with an output cap, as the API clients have one: it writes `length` tokens and
    stops on its own, or is cut off at its cap (`stop_reason` "length", OpenAI's word)."""

    def __init__(self, max_tokens: int, length: int) -> None:
        self.max_tokens, self.length, self.spec, self.calls = max_tokens, length, "capped", 0

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        self.calls += 1
        cut = self.length > self.max_tokens
        written = min(self.length, self.max_tokens)
        return ModelTurn(
            message=AssistantMessage(text=f"reply {self.calls} under {self.max_tokens}"),
            usage=TokenUsage(output_tokens=written),
            stop_reason="length" if cut else "stop",
            model=self.spec,
        )


def _ask(model: Capped, cache: ResponseCache) -> ModelTurn:
    return CachingModel(model, cache, "0")("system", ASKED, [])


def test_a_reply_that_stopped_on_its_own_serves_every_cap_it_fits_in(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    first = _ask(Capped(384, length=120), cache)
    assert first.message.text == "reply 1 under 384" and not first.cached
    for cap in (1024, 384, 120):  # larger, the same, just large enough: the same reply
        model = Capped(cap, length=120)
        served = _ask(model, cache)
        assert served.cached and served.message.text == "reply 1 under 384" and model.calls == 0
    smaller = Capped(100, length=120)  # a cap under its 120 tokens would have cut it: a new call
    fresh = _ask(smaller, cache)
    assert not fresh.cached and smaller.calls == 1 and fresh.stop_reason == "length"
    cache.close()


def test_a_reply_the_cap_cut_off_serves_that_cap_only(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    cut = _ask(Capped(384, length=900), cache)
    assert cut.stop_reason == "length" and cut.usage.output_tokens == 384
    again = Capped(384, length=900)
    assert _ask(again, cache).cached and again.calls == 0
    larger = Capped(1024, length=900)  # it would have finished: the cut reply is not its reply
    finished = _ask(larger, cache)
    assert not finished.cached and larger.calls == 1 and finished.stop_reason == "stop"
    assert finished.usage.output_tokens == 900
    cache.close()


def test_entries_written_before_caps_were_kept(tmp_path: Path) -> None:
    """An old entry (a bare ModelTurn, no cap beside it) is served when it stopped on its own,
    and called again when the cap cut it, since which cap that was is not known."""
    cache = ResponseCache(tmp_path / "responses.sqlite")
    key = CachingModel(Capped(384, 10), cache, "0").key("system", ASKED, [])
    for stop, expect_cached in (("stop", True), ("length", False)):
        old = ModelTurn(
            message=AssistantMessage(text="old"),
            usage=TokenUsage(output_tokens=384 if stop == "length" else 50),
            stop_reason=stop,
            model="capped",
        )
        cache.put(key, old.model_dump_json())
        model = Capped(384, length=50)
        assert _ask(model, cache).cached is expect_cached
        assert model.calls == (0 if expect_cached else 1)
    # what the new call wrote keeps its cap beside it
    stored = cache.get(key)
    assert stored is not None and json.loads(stored)[CAP_FIELD] == 384
    cache.close()


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """One unanswerable task: a run of it is one short model call per trial."""
    path = tmp_path / "suite.jsonl"
    task = {"id": "meal", "category": "unanswerable", "should_refuse": True,
            "question": "What did Grace Hopper eat for breakfast in 1950?",
            "dimensions": ["faithfulness", "calibration"]}  # fmt: skip
    path.write_text(json.dumps(task) + "\n")
    return path


def test_a_run_records_the_cap_its_model_was_called_with(
    tmp_path: Path, tiny: SnapshotSource, suite: Path
) -> None:
    config = RunConfig(suite=str(suite), trials=1, out=tmp_path / "results", read_first=0)
    outcome = run_eval(config, model=Capped(256, length=20), source=tiny, progress=False)
    frame = pd.read_parquet(outcome.parquet)
    assert set(frame["max_tokens"]) == {256}
    assert outcome.meta.max_tokens == 256
    log = log_path(tmp_path / "results", outcome.meta.run_id)
    assert json.loads(log.read_text().splitlines()[0])["meta"]["max_tokens"] == 256
    # finishing it under another cap would mix two agents in one run: refused, nothing lost
    journal = log.read_text()
    with pytest.raises(ValueError, match="max_tokens 256; this model's cap is 1024"):
        run_eval(config, outcome.meta.run_id, model=Capped(1024, 20), source=tiny, progress=False)
    assert log.read_text() == journal
    again = run_eval(
        config, outcome.meta.run_id, model=Capped(256, 20), source=tiny, progress=False
    )
    assert again.trials_run == 0 and again.meta.max_tokens == 256
    journal = log.read_text()  # graded again, a pass appended: the log as it now is
    # and so is finishing it with another lever (a notebook's RESUME takes the notebook's)
    for lever in (
        {"cite_sentences": True}, {"abstain_below": 0.4}, {"read_first": 2},
        {"model": "extractive:hits_read=5"},
    ):  # fmt: skip
        other = RunConfig.model_validate(config.model_dump() | lever)
        with pytest.raises(ValueError, match=f"was made with {next(iter(lever))}="):
            run_eval(other, outcome.meta.run_id, model=Capped(256, 20), source=tiny, progress=False)
        assert log.read_text() == journal


def test_a_spec_with_a_password_resumes_though_its_log_holds_it_masked(
    tmp_path: Path, tiny: SnapshotSource, suite: Path
) -> None:
    spec = "openai:qwen@http://user:placeholder-pw@127.0.0.1:9/v1"
    config = RunConfig(suite=str(suite), trials=2, out=tmp_path / "results", read_first=0)
    config = config.model_copy(update={"model": spec, "limit": 1})
    first = run_eval(config, model=Capped(256, 20), source=tiny, progress=False)
    meta = log_path(tmp_path / "results", first.meta.run_id).read_text().splitlines()[0]
    assert "placeholder-pw" not in meta and "http://***@127.0.0.1:9/v1" in meta
    cut_after(tmp_path / "results", first.meta.run_id, 1)
    again = run_eval(config, first.meta.run_id, model=Capped(256, 20), source=tiny, progress=False)
    assert again.trials_run == 1
    other = config.model_copy(update={"model": spec.replace(":9/", ":10/")})
    with pytest.raises(ValueError, match="was made with model="):  # another server still is
        run_eval(other, first.meta.run_id, model=Capped(256, 20), source=tiny, progress=False)


def test_a_served_model_knows_its_cap_before_its_server_starts() -> None:
    served = ServedModel("local", max_tokens=384)
    assert served.max_tokens == 384 and served._model is None  # nothing started
