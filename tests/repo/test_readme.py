"""Every README command that needs no network runs, on a fresh copy of the repository, as a new
user would type it: the README cannot drift from what the tools do."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Needs a network, a key, a server, data outside the repository, or stands for a value to fill in.
SKIP = re.compile(
    r"live|anthropic:|openai:|local-model|\bserve\b|RUN_ID|RUN_A|\[|path/to/|\.\./shared|"
    r"NQ\.jsonl|titles\.txt"
)


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if command.startswith("wikiqa ") and not command.endswith("\\"):
                commands.append(command)
    return commands


COMMANDS = readme_commands()
RUNNABLE = [c for c in COMMANDS if not SKIP.search(c)]


def test_the_readme_documents_commands_and_most_run_offline() -> None:
    assert len(COMMANDS) >= 20 and len(RUNNABLE) >= 12


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
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
    return copy, env


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
