"""The two reference pages that must not drift: generated, never written by hand.

- `reference/cli.md`, from the `wikiqa` argument parser (`wikiqa.cli.build_parser`): every
  command and subcommand, its usage, its arguments with their help and defaults;
- `reference/settings.md`, from `wikiqa.config.Settings`: every field's variable, default and
  description, and which ones a `.env` may not set; then the few `WIKIQA_*` variables read
  outside `Settings` (listed below, `OTHER_VARIABLES`; `tests/repo/test_docs.py` fails when the
  package reads one this list lacks).

The mkdocs hook (`docs/hooks.py`) writes both into `docs/reference/` (git-ignored) before every
build; `python docs/gen_reference.py [FOLDER]` writes them by hand.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices

import wikiqa.cli
from wikiqa.cli import build_parser
from wikiqa.config import TRUST_DOTENV, TRUSTED_ONLY, Settings

WIDTH = "100"  # argparse wraps usage lines at $COLUMNS: fixed, so the page is the same anywhere

# Read outside `Settings` (by `wikiqa.project`, the config module itself, the local-model server
# or the test harness): name -> (default, meaning).
OTHER_VARIABLES: dict[str, tuple[str, str]] = {
    "WIKIQA_ROOT": (
        "found: the nearest folder upward whose `pyproject.toml` has a `[tool.wikiqa]` table",
        "the project: its `experiments/`, `experiments/suite/` and `results/` (`wikiqa.project`)",
    ),
    TRUST_DOTENV: (
        "`0`",
        "take the settings that choose where keys are sent from `./.env` too; read from the "
        "environment only, a `.env` cannot set it",
    ),
    "WIKIQA_LOCAL_LOG": (
        "unset",
        "a file the local llama.cpp chat handler appends each raw completion to, with its "
        "cached, prefilled and decoded token counts and timings (the speed bench sets it)",
    ),
    "WIKIQA_EXTRAS": (
        "unset: each extra's module is looked for",
        "comma-separated extras `wikiqa experiment run` takes as installed; a step notebook "
        "needing another is skipped (the README test sets it empty, as on a fresh clone)",
    ),
    "WIKIQA_SERVER_PARENT": (
        "set by wikiqa",
        "internal: the process id a local-model server started for a run polls, so it exits "
        "with that process",
    ),
    "WIKIQA_SERVER_KEY": (
        "set by wikiqa",
        "internal: the random key a local-model server started for a run requires of every "
        "call (a new one at each start; never the user's API key)",
    ),
    "WIKIQA_STEP": (
        "set by wikiqa",
        "internal: the step notebook's file name, passed to the notebook papermill runs",
    ),
}


def _cell(text: str) -> str:
    """Plain text made safe for one markdown table cell (code spans are kept as they are)."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part.replace("|", "\\|"))
        else:
            part = part.replace("\\", "\\\\")
            for char in "|*_[]":
                part = part.replace(char, "\\" + char)
            out.append(part.replace("<", "&lt;").replace(">", "&gt;"))
    return "".join(out)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in `--help` order."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: (a.help or "").replace("%%", "%") for a in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((name, helps.get(name, ""), sub))
    return found


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{names}`"
    metavar = action.metavar or action.dest.upper()
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.choices and not action.metavar:
        metavar = "{" + ",".join(str(c) for c in action.choices) + "}"
    return f"`{names} {metavar}`"


def _command(lines: list[str], path: str, help_line: str, parser: argparse.ArgumentParser) -> None:
    subs = _subcommands(parser)
    lines += [f"## {path}", ""]
    summary = parser.description or help_line
    if summary:
        lines += [summary.strip(), ""]
    lines += ["```", parser.format_usage().strip(), "```", ""]
    formatter = parser._get_formatter()
    for group in parser._action_groups:
        actions = [
            a
            for a in group._group_actions
            if a.help != argparse.SUPPRESS
            and not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
        ]
        if not actions:
            continue
        title = group.title or "arguments"
        lines += [f"**{title}**", "", "| argument | meaning |", "|---|---|"]
        for action in actions:
            text = formatter._expand_help(action) if action.help else ""
            default = action.default
            if default not in (None, False, True, [], argparse.SUPPRESS) and "default" not in text:
                text += f" (default: {default})" if text else f"default: {default}"
            lines.append(f"| {_flags(action)} | {_cell(text)} |")
        lines.append("")
    if subs:
        lines += ["| command | what it does |", "|---|---|"]
        for name, text, _ in subs:
            anchor = f"{path} {name}".replace(" ", "-").lower()
            lines.append(f"| [`{path} {name}`](#{anchor}) | {_cell(text)} |")
        lines.append("")
    for name, text, sub in subs:
        _command(lines, f"{path} {name}", text, sub)


def cli_page() -> str:
    """`reference/cli.md`: the whole `wikiqa` command line, from its parser."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser()
        lines = [
            "# Command line",
            "",
            "Generated from the `wikiqa` argument parser (`wikiqa.cli.build_parser`) by "
            "`docs/gen_reference.py` at every docs build: what `wikiqa COMMAND --help` prints, "
            "as one page.",
            "",
            " ".join((wikiqa.cli.__doc__ or "").split("\n\n")[1].split()),
            "",
        ]
        _command(lines, "wikiqa", "", parser)
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(lines).rstrip() + "\n"


def variables(name: str, field: Any) -> list[str]:
    """The environment variable names a `Settings` field is read from."""
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    prefix = Settings.model_config.get("env_prefix", "")
    return [f"{prefix}{name}".upper()]


def _default(field: Any) -> str:
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, Path):
        return f"`{value}`"
    if isinstance(value, bool):
        return f"`{int(value)}`"
    return f"`{value}`"


def settings_page() -> str:
    """`reference/settings.md`: every `Settings` field, then the variables read elsewhere."""
    import wikiqa.config

    doc = (wikiqa.config.__doc__ or "").strip().split("\n\n")
    lines = [
        "# Settings",
        "",
        "Generated from `wikiqa.config.Settings` (its fields and their descriptions) by "
        "`docs/gen_reference.py` at every docs build.",
        "",
        "All settings are environment variables, or lines of a `.env` file in the working "
        "directory. " + " ".join(" ".join(doc[1:]).split()),
        "",
        "| variable | default | meaning | from `.env` |",
        "|---|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        names = " / ".join(f"`{v}`" for v in variables(name, field))
        secret = "SecretStr" in str(field.annotation)
        meaning = field.description or ""
        if secret:
            meaning += " A secret: printed as `**********`, scrubbed from every output."
        dotenv = f"only with `{TRUST_DOTENV}=1`" if name in TRUSTED_ONLY else "yes"
        lines.append(f"| {names} | {_default(field)} | {_cell(meaning)} | {dotenv} |")
    lines += [
        "",
        "## Read outside `Settings`",
        "",
        "| variable | default | meaning |",
        "|---|---|---|",
    ]
    for name, (default, meaning) in OTHER_VARIABLES.items():
        lines.append(f"| `{name}` | {default} | {meaning} |")
    return "\n".join(lines) + "\n"


def _rule(field: Any) -> str:
    """A field's constraints (`ge`, `le`, `gt`, choices) as text."""
    parts = []
    for item in field.metadata:
        for name, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if getattr(item, name, None) is not None:
                parts.append(f"{sign} {getattr(item, name)}")
    args = getattr(field.annotation, "__args__", ())
    if getattr(field.annotation, "__origin__", None) is Literal:
        parts.append(" \\| ".join(str(a) for a in args))
    return ", ".join(parts)


def parameters_page() -> str:
    """`reference/parameters.md`: the agent's levers (`AgentConfig`) and every step notebook's
    common parameters (`wikiqa.experiment.params`), with defaults, rules and help."""
    from wikiqa.agent import AgentConfig
    from wikiqa.experiment.params import fields

    lines = [
        "# Levers and step parameters",
        "",
        "Generated from `wikiqa.agent.AgentConfig`, `wikiqa.evals.RunConfig` and "
        "`wikiqa.experiment.params.StepParameters` by `docs/gen_reference.py` at every docs "
        "build.",
        "",
        "## Agent levers",
        "",
        "What the agent does with its model. Each lever is a field of `AgentConfig`, a flag of "
        "`wikiqa eval`, `wikiqa ask`, `wikiqa serve` and the benchmarks, and a parameter of "
        "every step notebook (its name in capitals, e.g. `-p READ_FIRST 2`). A lever is part "
        "of the run's configuration: `--resume` refuses a run made with another value.",
        "",
        "| lever | flag | step parameter | default | rule | what it does |",
        "|---|---|---|---|---|---|",
    ]
    for name, field in AgentConfig.model_fields.items():
        flag = "--" + name.replace("_", "-")
        if field.annotation is bool:
            flag += "`, `--no-" + name.replace("_", "-")
        lines.append(
            f"| `{name}` | `{flag}` | `{name.upper()}` | `{field.default}` | {_rule(field)} "
            f"| {_cell(field.description or '')} |"
        )
    lines += [
        "",
        "## Step parameters",
        "",
        "Every step notebook takes these, with these defaults, beside the agent levers above: set "
        "one in the notebook's `parameters` cell or with `wikiqa experiment run NOTEBOOK -p NAME "
        "VALUE` (values are JSON when they parse). A name that is neither one of these nor "
        "declared in the notebook's own `parameters` cell is refused before the notebook runs. "
        "Apart from the step's own (`OUT`, `RECORD`, `VS`, `RESUME`), each is a run option, a "
        "field of `RunConfig` in capitals, and a flag of `wikiqa eval` and `wikiqa check` "
        "(`MAX_TOKENS` is `--max-tokens`).",
        "",
        "| parameter | default | rule | meaning |",
        "|---|---|---|---|",
    ]
    for name, field in fields().items():
        if name.lower() in AgentConfig.model_fields:
            continue  # listed above
        default = f"`{field.default}`" if field.default != "" else '`""`'
        rule = _rule(field)
        meaning = _cell(field.description or "")
        lines.append(f"| `{name}` | {default} | {rule if rule != meaning else ''} | {meaning} |")
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """Each generated page's path under the docs folder, with its text."""
    return {
        "reference/cli.md": cli_page(),
        "reference/parameters.md": parameters_page(),
        "reference/settings.md": settings_page(),
    }


def write(docs: Path) -> list[Path]:
    """Write the generated pages under `docs`, each only when its text changed (so `mkdocs
    serve`, which watches the folder, does not rebuild forever); the paths written."""
    written = []
    for name, text in pages().items():
        path = docs / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    for path in write(folder):
        print(path)
