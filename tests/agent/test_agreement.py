"""Agreement signals: k samples of the reading call, and the extractive answerer's reading."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from wikiqa.agent import Agent, AgentConfig, Answer
from wikiqa.agent.agreement import SAMPLE_TEMPERATURE, extractive_signals, same, sample_signals
from wikiqa.evals import RunConfig
from wikiqa.evals.climb.record import parameters_hash
from wikiqa.evals.running.cache import CachingModel
from wikiqa.models import AssistantMessage, CallOptions, Message, ModelTurn, ToolSpec
from wikiqa.sources import SnapshotSource

QUESTION = "Who wrote the novel Dune?"


class Samples:
    """A reading model: the greedy reply first, then one reply per seed."""

    spec = "samples"

    def __init__(self, greedy: str, by_seed: dict[int, str]) -> None:
        self.greedy, self.by_seed = greedy, by_seed
        self.options: list[CallOptions | None] = []

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        self.options.append(options)
        seed = options.seed if options is not None else None
        text = self.greedy if seed is None else self.by_seed[seed]
        return ModelTurn(message=AssistantMessage(text=text), model="samples")


def test_same_reads_one_answer_within_the_other() -> None:
    assert same("Frank Herbert", "Herbert") and same("1965", "in 1965")
    assert not same("Frank Herbert", "Brian Herbert") and not same("", "Herbert")


def test_sample_signals_count_agreement_distinct_answers_and_unknowns() -> None:
    found = sample_signals("Frank Herbert", ["Frank Herbert", "Herbert", "Isaac Asimov"])
    assert found == {"sample_agreement": 0.6667, "sample_distinct": 0.6667, "sample_unknown": 0.0}
    found = sample_signals("Frank Herbert", ["Frank Herbert", None, None, "Herbert", "Asimov"])
    assert found == {"sample_agreement": 0.4, "sample_distinct": 0.6, "sample_unknown": 0.4}
    assert sample_signals("Frank Herbert", ["Frank Herbert"]) == {}  # k = 1: off


def test_three_samples_two_agree(tiny: SnapshotSource) -> None:
    model = Samples("Frank Herbert", {1: "Herbert", 2: "Isaac Asimov"})
    config = AgentConfig(mode="reading", read_first=2, samples=3)
    result = Agent(model, tiny, config).ask(QUESTION)
    assert isinstance(result.output, Answer) and result.output.text == "Frank Herbert"
    assert result.signals["sample_agreement"] == pytest.approx(2 / 3, abs=1e-4)
    assert result.signals["sample_distinct"] == pytest.approx(2 / 3, abs=1e-4)
    greedy, *sampled = model.options
    assert greedy is not None and greedy.temperature == 0.0 and greedy.seed is None
    assert [(o.seed, o.temperature) for o in sampled if o] == [
        (1, SAMPLE_TEMPERATURE),
        (2, SAMPLE_TEMPERATURE),
    ]
    assert result.usage.model_calls == 3
    # the extractive answerer reads the same articles and finds the same author
    assert result.signals["extractive_agrees"] == 1.0


def test_samples_off_is_one_call_and_no_sample_signal(tiny: SnapshotSource) -> None:
    model = Samples("Frank Herbert", {})
    result = Agent(model, tiny, AgentConfig(mode="reading", read_first=2)).ask(QUESTION)
    assert result.usage.model_calls == 1 and "sample_agreement" not in result.signals
    assert "extractive_agrees" in result.signals


def test_extractive_agreement_is_zero_for_an_answer_it_does_not_find(tiny: SnapshotSource) -> None:
    dune = tiny.get_article("Dune (novel)")
    assert dune is not None
    assert extractive_signals(QUESTION, "Frank Herbert", [dune])["extractive_agrees"] == 1.0
    assert extractive_signals(QUESTION, "Isaac Asimov", [dune])["extractive_agrees"] == 0.0
    assert extractive_signals(QUESTION, "Herbert", []) == {
        "extractive_agrees": 0.0, "extractive_score": 0.0,
    }  # fmt: skip


def test_the_lever_is_part_of_the_runs_identity() -> None:
    reading = AgentConfig(mode="reading", read_first=2)
    sampled = reading.model_copy(update={"samples": 3})
    assert sampled.changed()["samples"] == 3
    assert parameters_hash(RunConfig(agent=reading)) != parameters_hash(RunConfig(agent=sampled))


def test_cache_keys_differ_by_sample_and_replay_is_deterministic(
    tiny: SnapshotSource,
) -> None:
    store: dict[str, str] = {}

    class Store:
        def get(self, key: str) -> str | None:
            return store.get(key)

        def put(self, key: str, value: str) -> None:
            store[key] = value

    model = Samples("Frank Herbert", {1: "Herbert", 2: "Isaac Asimov"})
    cached = CachingModel(model, Store(), namespace="trial-0")
    keys = {
        cached.key("s", [], [], CallOptions(temperature=SAMPLE_TEMPERATURE, seed=i)) for i in (1, 2)
    }
    assert len(keys) == 2
    # unset, the seed is not in the dump: every earlier call keeps its key
    assert "seed" not in CallOptions(max_tokens=24, temperature=0.0).model_dump()
    config = AgentConfig(mode="reading", read_first=2, samples=3)
    first = Agent(cached, tiny, config).ask(QUESTION)
    again = Agent(cached, tiny, config).ask(QUESTION)
    assert cached.calls == 3 and cached.hits == 3
    assert again.signals == first.signals


def test_every_agreement_signal_can_be_fitted_on(tiny: SnapshotSource) -> None:
    from wikiqa.agent.agreement import EXTRACTIVE_SIGNALS, SAMPLE_SIGNALS
    from wikiqa.models.evidence import SIGNALS

    assert set(SAMPLE_SIGNALS) | set(EXTRACTIVE_SIGNALS) <= set(SIGNALS)
    model = Samples("Frank Herbert", {1: "Herbert", 2: "Herbert"})
    result = Agent(model, tiny, AgentConfig(mode="reading", read_first=2, samples=3)).ask(QUESTION)
    assert set(result.signals) <= set(SIGNALS)
