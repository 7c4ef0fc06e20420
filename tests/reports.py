"""Test helpers for the write-ups in results/reports/: a test that pins a reported figure reads
it from the page's figures table, never from prose, so the page and the test cannot disagree
silently."""

from __future__ import annotations

import re
from pathlib import Path

REPORTS = Path(__file__).resolve().parent.parent / "results" / "reports"


def figures_table(page: str | Path, heading: str) -> list[dict[str, str]]:
    """The first markdown table under `heading` (a whole line, `### Losses by stage`) in `page`
    (a path, or a file name under results/reports/), as one {column: cell} per row."""
    path = page if isinstance(page, Path) else REPORTS / page
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            table.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif table:
            break
    header, rows = table[0], table[2:]  # table[1] is the |---| line
    return [dict(zip(header, row, strict=True)) for row in rows]


def cell(rows: list[dict[str, str]], column: str, value: str, wanted: str) -> str:
    """The cell in column `wanted` of the one row whose `column` is `value` or, when no row's
    is, begins with it."""
    found = [row[wanted] for row in rows if row[column] == value]
    found = found or [row[wanted] for row in rows if row[column].startswith(value)]
    assert len(found) == 1, f"{len(found)} rows whose {column!r} is or begins with {value!r}"
    return found[0]
