"""Run options are declared once, in `RunConfig`: every one (the internal ones aside) is a flag of
`wikiqa eval` and `wikiqa check` and a step parameter, generated with the field's default, rule
and help; the output-token cap and the timeout reach the model's constructor from the run's
configuration, never through the environment."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

import pytest

from wikiqa.cli import build_parser, main
from wikiqa.evals import RunConfig
from wikiqa.evals.climb.record import parameters_hash
from wikiqa.evals.running.records import INTERNAL
from wikiqa.evals.running.runner import Runner
from wikiqa.evals.running.trial import Trial
from wikiqa.experiment.params import COMMON, STEP_OWN, fields, parameters
from wikiqa.experiment.step import _config

ROOT = Path(__file__).resolve().parents[3]
OPTIONS = [name for name in RunConfig.model_fields if name not in INTERNAL]
SERVER = "openai:some-model@http://127.0.0.1:9/v1"  # never called: the clients are only built


def command(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices[name]
    parser.format_help()  # its run flags are generated when it is first used
    return parser


@pytest.mark.parametrize("name", ["eval", "check"])
def test_every_run_option_is_a_flag(name: str) -> None:
    flags = {f for a in command(name)._actions for f in a.option_strings}
    for option in OPTIONS:
        spelt = option.replace("_", "-")
        assert f"--{spelt}" in flags or f"--no-{spelt}" in flags, option


def test_every_run_option_is_a_step_parameter_with_the_fields_default_rule_and_help() -> None:
    step = fields()
    for option in OPTIONS:
        if option == "experiment":  # a step's experiment is its notebook's name
            continue
        assert option.upper() in COMMON, option
        if option in STEP_OWN:
            continue
        field, parameter = RunConfig.model_fields[option], step[option.upper()]
        assert parameter.default == field.default, option
        assert parameter.description == field.description and field.description, option
        assert parameter.metadata == field.metadata, option
    with pytest.raises(ValueError, match=r"-p MAX_TOKENS 8: .*greater than or equal to 16"):
        parameters({"MAX_TOKENS": 8})


def test_an_unknown_kind_is_refused_by_the_parser_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--kind", "prompts", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and re.search(r"--kind: invalid choice: 'prompts'", errors[0])
    assert not any(tmp_path.iterdir())  # nothing ran


def test_a_run_option_breaking_its_rule_is_one_line_naming_its_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["eval", "--max-tokens", "8", "--limit", "1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "wikiqa: error: --max-tokens Input should be greater than or equal to 16"
    )


def _no_settings_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("WIKIQA_MODEL_MAX_TOKENS", "WIKIQA_MODEL_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)


def _called_with(model: Any) -> tuple[int, float]:
    return model.max_tokens, model._client.timeout


def test_max_tokens_and_timeout_reach_the_models_constructor_from_a_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`-p MAX_TOKENS 64 -p TIMEOUT 5`: the runner's model, and the model a worker process
    opens from the shipped trial function, are built with them; nothing is set in the
    environment."""
    _no_settings_in_the_environment(monkeypatch)
    p = parameters({"MODEL": SERVER, "MAX_TOKENS": 64, "TIMEOUT": 5})
    config = _config(p, "step", tmp_path)
    assert (config.max_tokens, config.timeout) == (64, 5.0)
    assert _called_with(Runner(config, progress=False).model) == (64, 5.0)
    shipped = Trial(config).shipped(None)
    assert _called_with(shipped.opened()[0]) == (64, 5.0)
    assert "WIKIQA_MODEL_MAX_TOKENS" not in os.environ
    # without them, the settings' defaults, filled in by the driver for every worker
    plain = Trial(RunConfig(model=SERVER, out=tmp_path)).shipped(None)
    assert (plain.config.max_tokens, plain.config.timeout) == (1024, 60.0)


def test_max_tokens_and_timeout_reach_the_model_from_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wikiqa.cli.evals import _run_config

    _no_settings_in_the_environment(monkeypatch)
    args = command("eval").parse_args(
        ["--model", SERVER, "--max-tokens", "64", "--timeout", "5", "--no-cache"]
    )
    config = _run_config(args)
    assert (config.max_tokens, config.timeout, config.cache) == (64, 5.0, False)
    assert _called_with(Runner(config, progress=False).model) == (64, 5.0)


def test_the_timeout_is_no_part_of_what_a_run_measures_and_the_cap_is_the_models() -> None:
    plain = RunConfig()
    assert parameters_hash(RunConfig(timeout=900)) == parameters_hash(plain)
    # the cap counts as the cap the model was called with (RunMeta.max_tokens), as before
    assert parameters_hash(RunConfig(max_tokens=64), 64) == parameters_hash(plain, 64)
    assert parameters_hash(plain, 64) != parameters_hash(plain)


def test_a_config_recorded_before_these_options_loads_without_them() -> None:
    old = RunConfig.model_validate({"suite": "dev", "trials": 1, "model": "extractive"})
    assert (old.max_tokens, old.timeout) == (None, None)


def test_no_run_option_travels_through_the_environment() -> None:
    package = ROOT / "wikiqa"
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for name in ("WIKIQA_MODEL_MAX_TOKENS", "WIKIQA_MODEL_TIMEOUT"):
            assert name not in text, f"{path.relative_to(ROOT)} names {name}"
