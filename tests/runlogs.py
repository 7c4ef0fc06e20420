"""Test helpers for run logs: cut one short as a kill would, read its trial keys."""

from __future__ import annotations

import json
from pathlib import Path

from wikiqa.evals.running.runlog import log_path


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
