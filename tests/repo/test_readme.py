"""Every README command that needs no network runs, on a fresh copy of the repository, as a new
user would type it, in the README's order (the loop's `experiment new` first): the README cannot
drift from what the tools do. Its links and the repository paths it names must exist, and it stays a front
door (at most 250 lines): reference goes to docs/, findings to results/reports/."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Needs a network, a key, a server, a local model, data outside the repository, runs only once
# per suite (the holdout), or stands for a value to fill in.
SKIP = re.compile(
    r"live|anthropic:|openai:|--model local|local-model|\bserve\b|--holdout|RUN_ID|RUN_A|\[|"
    r"path/to/|\.\./shared|NQ\.jsonl|titles\.txt"
)
# Paths the README names that a run or a build creates, or that a reader creates (the loop's copy)
MADE = re.compile(r"^(results/scratch|site|\.venv)(/|$)|my_change")


def readme_commands() -> list[str]:
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        for line in re.sub(r"\\\n\s*", "", block).splitlines():  # continuation lines joined
            command = line.split("  #")[0].strip()
            if command.startswith(("wikiqa ", "cp ")):
                commands.append(command)
    return commands


COMMANDS = readme_commands()
RUNNABLE = [c for c in COMMANDS if not SKIP.search(c)]


def tracked() -> set[str]:
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folders = {str(p) for name in files for p in Path(name).parents if str(p) != "."}
    return set(files) | folders


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 250, "move reference to docs/, findings to results/reports/"


def test_the_readme_documents_commands_and_most_run_offline() -> None:
    assert len(COMMANDS) >= 10 and len(RUNNABLE) >= 6
    assert any(c.startswith("wikiqa experiment new ") for c in RUNNABLE)  # the loop's start


def test_every_readme_link_resolves_to_a_tracked_file_or_an_anchor() -> None:
    files = tracked()
    anchors = {
        re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        for title in re.findall(r"^#+ (.+)$", README, re.M)
    }
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if re.match(r"^[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        if not path:
            assert anchor in anchors, target
        else:
            assert path.rstrip("/") in files, target


def test_every_repository_path_the_readme_names_exists() -> None:
    files = tracked()
    named = {
        p
        for p in re.findall(r"`([\w.-]+/[^`\s]*)`", README)
        if p.split("/")[0] in {"docs", "results", "experiments", "notebooks", "wikiqa", "tests"}
        and not re.search(r"[*<>{}]|NN_|RUN_ID", p)
        and not MADE.search(p)
    }
    assert named, "the README names no repository path"
    missing = sorted(p for p in named if p.rstrip("/") not in files)
    assert not missing, missing


@pytest.fixture(scope="module")
def fresh(
    tmp_path_factory: pytest.TempPathFactory, session_home: Path
) -> tuple[Path, dict[str, str]]:
    """The tracked files only (what a clone holds), and a `wikiqa` that runs that copy."""
    copy = tmp_path_factory.mktemp("clone")
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    bin_dir = copy / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "wikiqa"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m wikiqa.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIQA_RESULTS")}
    env |= {"PATH": f"{bin_dir}:{env['PATH']}", "PYTHONPATH": str(copy), "WIKIQA_EXTRAS": ""}
    env |= {"WIKIQA_HOME": str(session_home)}  # this session's index, built once
    return copy, env


@pytest.mark.slow
@pytest.mark.parametrize("command", RUNNABLE)
def test_a_readme_command_runs_on_a_fresh_copy(
    command: str, fresh: tuple[Path, dict[str, str]]
) -> None:
    copy, env = fresh
    done = subprocess.run(
        ["bash", "-c", command], cwd=copy, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    # the copy's own package ran, not the editable install
    probe = subprocess.run(
        [sys.executable, "-c", "import wikiqa; print(wikiqa.__file__)"],
        cwd=copy, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.startswith(str(copy))
