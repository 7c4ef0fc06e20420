"""The docs cannot drift from the code: the reference pages are generated (docs/gen_reference.py,
run by the mkdocs hook at every `make docs`), and here checked to cover every command, option,
setting, lever and step parameter; every `wikiqa` command quoted in the README or a docs page
parses with today's parser; and every `WIKIQA_*` variable the package reads is documented."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
from pathlib import Path
from types import ModuleType

import pytest

from wikiqa.agent import AgentConfig
from wikiqa.cli import build_parser
from wikiqa.config import Settings
from wikiqa.experiment.params import COMMON

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs/gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def _parsers(
    parser: argparse.ArgumentParser, path: str = "wikiqa"
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _parsers(sub, f"{path} {name}")
    return found


def test_the_cli_page_has_every_command_and_option() -> None:
    page = GEN.cli_page()
    for path, parser in _parsers(build_parser()):
        assert f"\n## {path}\n" in page, path
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:  # hidden from --help, and so from the page
                continue
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in page or f", {option}" in page, (path, option)


def test_the_settings_page_has_every_setting_and_marks_what_a_dotenv_may_not_set() -> None:
    page = GEN.settings_page()
    for name, field in Settings.model_fields.items():
        assert field.description, f"Settings.{name} has no description for the docs"
        for variable in GEN.variables(name, field):
            assert f"`{variable}`" in page, variable
    assert page.count("only with `WIKIQA_TRUST_DOTENV=1`") == 4


def test_every_variable_the_package_reads_is_documented() -> None:
    documented = set(GEN.OTHER_VARIABLES) | {
        variable
        for name, field in Settings.model_fields.items()
        for variable in GEN.variables(name, field)
    }
    read = {
        name
        for path in (ROOT / "wikiqa").rglob("*.py")
        for name in re.findall(r"\bWIKIQA_[A-Z0-9_]+", path.read_text(encoding="utf-8"))
    }
    assert read <= documented, sorted(read - documented)


def test_the_parameters_page_has_every_lever_and_step_parameter() -> None:
    page = GEN.parameters_page()
    for name in AgentConfig.model_fields:
        assert f"| `{name}` | `--{name.replace('_', '-')}" in page, name
    for name in COMMON:  # the step's own, every run option and every lever
        assert f"| `{name}` |" in page, name


def quoted_commands() -> list[tuple[str, str]]:
    """(page, command) for every `wikiqa ...` line of a sh block, continuation lines joined;
    placeholders (`[--flag]`, `{a,b}`, `...`) are left out: they are not commands."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```sh\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command = re.split(r"\s#\s", line)[0].strip().removesuffix("&").strip()
                command = re.sub(r"^(\w+=\S+\s+)+", "", command)  # VAR=value wikiqa ...
                if command.startswith("wikiqa ") and not re.search(r"\[|\{|\.\.\.|\|", command):
                    found.append((page.name, command))
    return found


COMMANDS = quoted_commands()


def test_the_pages_quote_many_commands() -> None:
    assert len(COMMANDS) >= 40


@pytest.mark.parametrize(("page", "command"), COMMANDS)
def test_a_quoted_command_parses(page: str, command: str) -> None:
    words = shlex.split(command)[1:]
    try:
        build_parser().parse_args(words)
    except SystemExit as err:  # argparse's way of saying no (or of printing --help)
        assert err.code == 0 and "--help" in words, f"{page}: {command}"
