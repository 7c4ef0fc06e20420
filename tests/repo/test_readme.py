"""Every README command that needs no network runs, on a fresh copy of the repository, as a new
user would type it: the README cannot drift from what the tools do.

Two kinds are not rerun here, because another test already runs the same thing:

- `wikiqa experiment run ...` runs dry (`test_a_readme_experiment_run_is_what_the_cli_accepts`):
  everything the command does (the globs, every `-p` name and value checked, a step needing an
  extra skipped, the grid's points, where it writes) except papermill executing the notebooks.
  Those executions are covered elsewhere: in `make test` nbval executes every offline step at
  its defaults; `recorded_steps` (tests/conftest.py, read by tests/repo/test_notebooks.py) runs
  steps 00-02 with `-p TRIALS 1`, recorded; and tests/repo/test_notebooks.py's
  `test_exploratory_runs_stay_out_of_the_climb_and_recorded_ones_go_in` runs step 01 through
  `wikiqa experiment run` plainly, with `--record`, `-p OUT`, `-p RECORD false` and as a grid.
- `wikiqa check`: `make test` runs it on the checkout as its last step.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Needs a network, a key, a server, data outside the repository, or stands for a value to fill in.
SKIP = re.compile(
    r"live|anthropic:|openai:|local-model|\bserve\b|RUN_ID|RUN_A|\[|path/to/|\.\./shared|"
    r"NQ\.jsonl|titles\.txt"
)
# Run by `make test` itself (see the module's docstring).
COVERED = {"wikiqa check"}


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
DRY = [c for c in RUNNABLE if c.startswith("wikiqa experiment run ")]
RUN = [c for c in RUNNABLE if c not in DRY and c not in COVERED]


def test_the_readme_documents_commands_and_most_run_offline() -> None:
    assert len(COMMANDS) >= 20 and len(RUNNABLE) >= 12
    assert len(DRY) >= 4 and len(RUN) >= 12
    assert set(RUNNABLE) >= COVERED, "a covered command the README no longer gives"


@pytest.fixture(scope="module")
def readme_copy(
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
@pytest.mark.parametrize("command", RUN)
def test_a_readme_command_runs_on_a_fresh_copy(
    command: str, readme_copy: tuple[Path, dict[str, str]]
) -> None:
    copy, env = readme_copy
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


@pytest.mark.parametrize("command", DRY)
def test_a_readme_experiment_run_is_what_the_cli_accepts(
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The command through `wikiqa experiment run`, papermill replaced by a stand-in that
    records what it was asked to execute (see the module's docstring for what executes it)."""
    from wikiqa import experiment
    from wikiqa.cli import main

    ran: list[tuple[str, dict[str, Any]]] = []

    def execute(notebook: Path, parameters: dict[str, Any], out: Path | None = None) -> Path:
        ran.append((Path(notebook).name, parameters))
        return (out or tmp_path) / "notebooks" / Path(notebook).name

    monkeypatch.setattr(experiment, "execute", execute)
    monkeypatch.chdir(ROOT)
    argv = [arg for word in shlex.split(command)[1:] for arg in sorted(glob.glob(word)) or [word]]
    assert main(argv) == 0, capsys.readouterr().err
    shown = capsys.readouterr().out
    notebooks = [Path(a).name for a in argv if a.endswith(".ipynb")]
    points = experiment.grid([(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "-p"])
    assert notebooks and (len(notebooks) > 1) == ("*" in command)
    for name in notebooks:
        runs = [parameters for notebook, parameters in ran if notebook == name]
        if f"== {name}: skipped, it needs the" in shown:
            assert runs == [], name
            continue
        # one execution per point of the grid, each with that point's values, recorded into
        # the folder the command chose
        assert [
            {k: run[k] for k in point} for run, point in zip(runs, points, strict=True)
        ] == points
        assert all(run["RECORD"] is True and run["OUT"] for run in runs), runs
    assert ran or "skipped" in shown
