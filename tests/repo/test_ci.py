"""CI runs what the README says it runs: the `make` lines of `.ci/run` are, in order, the
targets the README's Tests section names where it says what CI (`.ci/run`) runs, and each is a
Makefile target."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip().startswith("make")]


def _readme_ci_sentence() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tests = readme.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    sentences = [s for s in re.split(r"(?<=\.)\s", tests.replace("\n", " ")) if "`.ci/run`" in s]
    assert len(sentences) == 1, sentences
    return sentences[0]


def test_ci_runs_exactly_the_commands_the_readme_says_it_runs() -> None:
    named = re.findall(r"`(make [\w-]+)`", _readme_ci_sentence())
    assert named == _ci_commands()
    assert named[0] == "make test"  # the README's test command, first


def test_every_target_ci_runs_is_a_makefile_target() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for command in _ci_commands():
        target = command.removeprefix("make ")
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), target
