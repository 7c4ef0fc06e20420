"""Package code says what it does and why, never which issue, step or held-out set prompted it.

That history belongs in git log and the experiment write-ups: a comment citing "issue 24" or
"step 09's slice" tells a reader where a rule came from, not what it is for, and goes stale as
the numbering moves on. Every `.py` under `wikiqa/` is scanned, line by line, for issue numbers,
step numbers and held-out set numbers; a hit fails naming file:line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import wikiqa

PACKAGE = Path(wikiqa.__file__).parent
ROOT = PACKAGE.parent

PATTERNS = {
    "issue": re.compile(r"\bissues? #?\d+", re.IGNORECASE),
    "step": re.compile(r"\bsteps? \d{2}\b", re.IGNORECASE),
    "held-out set": re.compile(r"held-out set \d", re.IGNORECASE),
}


def hits() -> dict[tuple[str, str], list[str]]:
    """(file, pattern name) -> the `file:line: text` of every line of the package it matches."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for kind, pattern in PATTERNS.items():
                if pattern.search(line):
                    found.setdefault((name, kind), []).append(f"{name}:{number}: {line.strip()}")
    return found


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("issue", "# issue 15: orders that name no reader"),
        ("issue", "let those through (Issue #23)."),
        ("issue", "see issues 12-14"),
        ("step", "On step 09's public slice, 15 of 33"),
        ("step", "(Steps 05 and 06)"),
        ("held-out set", "# held-out set 3: orders phrased as a condition"),
    ],
)
def test_the_patterns_catch_history(kind: str, text: str) -> None:
    assert PATTERNS[kind].search(text)


@pytest.mark.parametrize(
    "text",
    [
        "the suite's floors, as the issue tracker lists them",
        "a step 3 of the loop",
        "every step of a climb; `step(globals())`",
        "the held-out split loads only with --holdout",
        "steps = 100",
    ],
)
def test_the_patterns_leave_ordinary_prose_alone(text: str) -> None:
    assert not any(pattern.search(text) for pattern in PATTERNS.values())


def test_no_module_cites_its_history() -> None:
    cited = list(dict.fromkeys(line for lines in hits().values() for line in lines))
    assert not cited, "say the rule and its reason, not where it came from:\n" + "\n".join(cited)
