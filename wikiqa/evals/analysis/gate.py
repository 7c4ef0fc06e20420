"""The CI regression gate: every category x dimension pass rate against a committed baseline.

Exit 0 when nothing dropped, 2 with a readable diff when anything did (the Wikieval contract).
A baseline only compares with runs of the same suite, model, judge and source: anything else is
a different instrument, and the gate says so instead of comparing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ValidationError

from wikiqa.evals.analysis.summary import Summary, summarize
from wikiqa.inputs import InputError, MiB, first_problem, read_text
from wikiqa.project import repo_results

EXIT_REGRESSION = 2


def baseline_path() -> Path:
    """The project's committed baseline, `results/baseline.json`, wherever runs go."""
    return repo_results() / "baseline.json"


class Baseline(BaseModel):
    suite_hash: str
    model: str
    judge: str | None
    source_hash: str | None
    trials: int
    run_id: str
    # category -> dimension (or "tasks") -> [passes, applicable]
    cells: dict[str, dict[str, tuple[int, int]]]


def _cells(summary: Summary) -> dict[str, dict[str, tuple[int, int]]]:
    cells: dict[str, dict[str, tuple[int, int]]] = {}
    for category, row in summary.cells.items():
        cells[category] = {d: (c.passes, c.applicable) for d, c in row.items()}
        task = summary.task_cells[category]
        cells[category]["tasks"] = (task.passes, task.applicable)
    return cells


def baseline_from(frame: pd.DataFrame) -> Baseline:
    first = frame.iloc[0]
    return Baseline(
        suite_hash=str(first["suite_hash"]),
        model=str(first["model"]),
        judge=None if pd.isna(first["judge"]) else str(first["judge"]),
        source_hash=None if pd.isna(first["source_hash"]) else str(first["source_hash"]),
        trials=int(first["trials"]),
        run_id=str(first["run_id"]),
        cells=_cells(summarize(frame)),
    )


def write_baseline(frame: pd.DataFrame, path: Path | None = None) -> Baseline:
    path = path if path is not None else baseline_path()
    baseline = baseline_from(frame)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(baseline.model_dump(), indent=2, sort_keys=True) + "\n")
    return baseline


MAX_BASELINE_BYTES = 16 * MiB  # rates per category and dimension: kilobytes


def read_baseline(path: Path | None = None) -> Baseline:
    """The baseline at `path` (default: the project's), read bounded; not a baseline is an
    InputError naming the file."""
    path = path if path is not None else baseline_path()
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no baseline; write one with `wikiqa check --write-baseline`"
        )
    text = read_text(path, MAX_BASELINE_BYTES, "baseline")
    try:
        return Baseline.model_validate_json(text)
    except ValidationError as err:
        raise InputError(f"{path}: not a baseline: {first_problem(err)}") from None


def compare(baseline: Baseline, current: Baseline) -> list[str]:
    """Readable lines for everything that got worse (empty = the gate passes)."""
    for field in ("suite_hash", "model", "judge", "source_hash"):
        was, now = getattr(baseline, field), getattr(current, field)
        if was != now:
            return [
                f"not comparable: baseline {field} is {was!r}, this run's is {now!r}; "
                "rerun with the baseline's settings or refresh it with --write-baseline"
            ]
    drops = []
    for category, row in baseline.cells.items():
        for dimension, (passes, applicable) in row.items():
            now_passes, now_applicable = current.cells.get(category, {}).get(dimension, (0, 0))
            was_rate = passes / applicable if applicable else None
            now_rate = now_passes / now_applicable if now_applicable else None
            if was_rate is None:
                continue
            if now_rate is None or now_rate < was_rate - 1e-9:
                now_text = (
                    f"{now_passes}/{now_applicable}" if now_applicable else "nothing applicable"
                )
                drops.append(
                    f"{category:<15} {dimension:<13} {passes}/{applicable} ({was_rate:.0%}) -> "
                    f"{now_text}" + (f" ({now_rate:.0%})" if now_rate is not None else "")
                )
    return drops
