"""Test helpers for run logs: cut one short as a kill would, read its trial keys, rewrite one as
an attacker who knows the format would (every chain recomputed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wikiqa.evals.running.runlog import FORMAT, _canonical, _link, log_path


def cut_after(out: Path, run_id: str, trials: int, fragment: int = 0) -> Path:
    """Keep the header and the first `trials` trial lines of a run's log (and `fragment`
    characters of the next line, as a kill mid-write leaves them)."""
    path = log_path(out, run_id)
    lines = path.read_text(encoding="utf-8").splitlines()
    kept = "\n".join(lines[: 1 + trials]) + "\n"
    path.write_text(kept + (lines[1 + trials][:fragment] if fragment else ""), encoding="utf-8")
    return path


def trial_keys(path: Path) -> list[tuple[str, int]]:
    """(task, trial) of every whole trial line of a log, in order."""
    keys = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            body = json.loads(line)
        except json.JSONDecodeError:
            continue
        if body.get("kind") == "trial":
            keys.append((body["record"]["task_id"], body["record"]["trial"]))
    return keys


def rechained(text: str, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> str:
    """A log's text with `edit` applied to its line bodies and every chain recomputed (the
    seals dropped: without the key they cannot be recomputed)."""
    bodies = [json.loads(line) for line in text.splitlines()]
    for body in bodies:
        body.pop("chain")
        body.pop("seal", None)
    chain, lines = FORMAT, []
    for body in edit(bodies):
        line = _canonical(body)
        chain = _link(chain, line)
        lines.append(line[:-1] + f',"chain":"{chain}"}}')
    return "\n".join(lines) + "\n"
