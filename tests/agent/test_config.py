"""`AgentConfig` is the one declaration of every agent lever: the CLI flags, the step
parameters, the parameters hash and the resume check all derive from its fields."""

from __future__ import annotations

import argparse

import pytest

from wikiqa.agent import AgentConfig
from wikiqa.agent.config import split_spec_levers
from wikiqa.cli.common import CliError, add_agent_flags, agent_config
from wikiqa.evals import RunConfig
from wikiqa.evals.climb.record import parameters_hash
from wikiqa.evals.running.runner import differences
from wikiqa.experiment.params import COMMON, ParameterError, parameters

LEVERS = tuple(AgentConfig.model_fields)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_agent_flags(parser)
    return parser


def test_every_lever_has_a_default_a_help_and_is_frozen() -> None:
    for name, field in AgentConfig.model_fields.items():
        assert field.description, name
        assert field.default is not None, name
    config = AgentConfig()
    with pytest.raises(ValueError, match="frozen"):
        config.budget = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="extra"):
        AgentConfig(trim_quote=True)  # type: ignore[call-arg]  # a typo is never a silent default


def test_cli_flags_are_generated_from_the_fields() -> None:
    parser = _parser()
    flags = {a.dest for a in parser._actions if a.dest != "help"}
    assert flags == set(LEVERS)
    args = parser.parse_args(["--trim-quotes", "--budget", "5", "--abstain-below", "0.4"])
    assert agent_config(args) == AgentConfig(trim_quotes=True, budget=5, abstain_below=0.4)
    assert agent_config(parser.parse_args([])) == AgentConfig()  # nothing given: the defaults
    assert agent_config(parser.parse_args(["--no-retrieval"])).retrieval is False


def test_the_reading_mode_brings_its_measured_levers_unless_given() -> None:
    parser = _parser()
    reading = agent_config(parser.parse_args(["--mode", "reading"]))
    assert reading == AgentConfig(mode="reading", read_first=3, link_titles=True, samples=5)
    given = parser.parse_args(["--mode", "reading", "--read-first", "1", "--no-link-titles"])
    assert agent_config(given) == AgentConfig(mode="reading", read_first=1, samples=5)
    assert agent_config(parser.parse_args(["--read-first", "2"])) == AgentConfig(read_first=2)


@pytest.mark.parametrize(
    ("argv", "error"),
    [(["--abstain-below", "2"], "--abstain-below Input should be less than or equal to 1"),
     (["--read-first", "8"], "read_first (8) must be below budget (8)"),
     (["--budget", "0"], "--budget Input should be greater than or equal to 1")],
)  # fmt: skip
def test_a_broken_rule_is_one_line_naming_the_flag(argv: list[str], error: str) -> None:
    with pytest.raises(CliError) as caught:
        agent_config(_parser().parse_args(argv))
    assert str(caught.value) == error and caught.value.code == 2


def test_step_parameters_are_generated_from_the_fields() -> None:
    assert {n.lower() for n in COMMON} >= set(LEVERS)
    p = parameters({"TRIM_QUOTES": True, "READ_FIRST": 3, "CHANGE": "x", "MY_OWN": 1})
    assert p.agent() == AgentConfig(trim_quotes=True, read_first=3)
    with pytest.raises(ParameterError, match=r"-p ABSTAIN_BELOW 2: .*less than or equal to 1"):
        parameters({"ABSTAIN_BELOW": 2})
    with pytest.raises(ParameterError, match=r"read_first \(9\) must be below budget \(8\)"):
        parameters({"READ_FIRST": 9})


def test_every_lever_changes_the_parameters_hash_and_blocks_a_resume() -> None:
    base = RunConfig(agent=AgentConfig(read_first=1))
    hashes = {parameters_hash(base)}
    for name, field in AgentConfig.model_fields.items():
        now = getattr(base.agent, name)
        other: object = not now if field.annotation is bool else now
        if isinstance(now, int | float) and not isinstance(now, bool):
            other = now + 1 if name != "abstain_below" else 0.5
        if name == "mode":
            other = "reading"
        if name == "ranker":
            other = "hybrid"
        changed = RunConfig(agent=base.agent.model_copy(update={name: other}))
        hashes.add(parameters_hash(changed))
        assert [f for f, _, _ in differences(base, changed)] == [name]
    assert len(hashes) == len(LEVERS) + 1
    # how a run executes is not what it measures
    plain = RunConfig()
    assert parameters_hash(RunConfig(concurrency=1, executor="ray")) == parameters_hash(plain)


def test_an_older_record_keeps_its_levers_and_its_recorded_spec() -> None:
    """Records made before the one declaration held levers as run fields and in model specs."""
    old = {"model": "local:qwen;brief=1,short_quote=1", "trim_quotes": True, "budget": 8,
           "read_first": 3, "abstain_below": 0.0, "cite_sentences": False}  # fmt: skip
    config = RunConfig.model_validate(old)
    assert config.model == "local:qwen"
    assert config.agent == AgentConfig(trim_quotes=True, read_first=3, brief=True, short_quote=True)
    extractive = RunConfig.model_validate({"model": "extractive:abstain=0.4,hits_read=5"})
    assert extractive.model == "extractive:hits_read=5"
    assert extractive.agent.abstain_below == 0.4
    assert split_spec_levers("openai:q@http://h/v1;tool_choice=auto,brief=1") == (
        "openai:q@http://h/v1;tool_choice=auto",
        {"brief": True},
    )
    assert split_spec_levers("anthropic:claude-sonnet-4-6") == ("anthropic:claude-sonnet-4-6", {})
