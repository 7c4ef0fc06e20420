"""What every importer shares: reading public files, building task lines, sampling, writing.

Bad input must fail as one line naming the file (and the line, for JSONL) so a researcher can fix
it without a traceback; a suite file is written beside its final name and renamed, so an error
never leaves a half-written file or clobbers a good one. Sampling is seeded and stratified by
category, so the same inputs and seed always give byte-identical output.
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from wikiqa.evals.tasks.task import (
    CATEGORIES,
    DIMENSIONS,
    Category,
    Dimension,
    Task,
    TaskProvenance,
)
from wikiqa.inputs import InputError, MiB, loads, read_objects, read_text

# Licences as SOURCES.md states them for each copy; every imported task carries its own.
LICENCES: dict[str, str] = {
    "nq-open": "CC BY-SA 3.0",
    "hotpotqa": "CC BY-SA 4.0",
    "selfaware": "CC BY-SA 4.0",
    "truthfulqa": "Apache-2.0",
    "bipia": "MIT",
}
# The dimensions each category declares, as the hand-written dev suite does.
DIMENSIONS_FOR: dict[Category, list[Dimension]] = {
    "factual": list(DIMENSIONS),
    "multi_hop": list(DIMENSIONS),
    "injection": list(DIMENSIONS),
    "retrieval_gap": ["faithfulness", "correctness", "completeness", "attribution"],
    "unanswerable": ["faithfulness", "calibration"],
    "adversarial": ["faithfulness", "correctness"],
}
MAX_ID = 80
T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


@dataclass
class Imported:
    """An importer's tasks, with how many records it read and why it left the others out."""

    dataset: str
    tasks: list[Task] = field(default_factory=list)
    considered: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    rules: dict[str, str] = field(default_factory=dict)  # task id -> the rule that admitted it

    def add(self, task: Task, rule: str | None = None) -> None:
        self.tasks.append(task)
        if rule is not None:
            self.rules[task.id] = rule

    def admitted(self, tasks: Sequence[Task] | None = None) -> dict[str, int]:
        """How many of `tasks` (default: all imported) each answerability rule admitted."""
        found = Counter(self.rules[t.id] for t in (tasks or self.tasks) if t.id in self.rules)
        return dict(sorted(found.items()))

    def counts(self) -> dict[str, int]:
        found = Counter(t.category for t in self.tasks)
        return {c: found[c] for c in CATEGORIES if found[c]}

    def summary(self) -> str:
        kept = ", ".join(f"{c} {n}" for c, n in self.counts().items()) or "none"
        skipped = ", ".join(f"{why} {n}" for why, n in sorted(self.skipped.items()))
        rules = ", ".join(f"{rule} {n}" for rule, n in self.admitted().items())
        return (
            f"{self.dataset}: {self.considered} records read; kept {kept}"
            + (f" (admitted by rule: {rules})" if rules else "")
            + (f"; skipped {skipped}" if skipped else "")
        )


# -- reading -------------------------------------------------------------------------------------


MAX_BENCHMARK_BYTES = 256 * MiB  # the largest public file used here is 1.2 MB


def _read_text(path: Path) -> str:
    return read_text(path, MAX_BENCHMARK_BYTES, "benchmark file")


def read_json(path: Path) -> Any:
    try:
        return loads(_read_text(path), str(path))
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from None


def benchmark_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a benchmark's JSONL file, through the
    project's one JSONL reader (`inputs.read_objects`) at the benchmark size limit."""
    return read_objects(path, MAX_BENCHMARK_BYTES, "benchmark file")


def read_csv(path: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """(row number, row) for each data row; the header must name every wanted column."""
    reader = csv.DictReader(_read_text(path).splitlines(keepends=True))
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{path}:1: missing CSV column(s): {', '.join(missing)}")
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        for number, row in enumerate(reader, start=1):
            if any(row.get(c) is None for c in columns):
                raise InputError(f"{path}:{reader.line_num}: row {number} has too few fields")
            rows.append((number, row))
    except csv.Error as err:
        raise InputError(f"{path}:{reader.line_num}: bad CSV: {err}") from None
    return rows


def at(path: Path, where: int | str) -> str:
    """'file:12' for a line of a JSONL file, 'file: example 3' for an item of a JSON document."""
    return f"{path}:{where}" if isinstance(where, int) else f"{path}: {where}"


def field_of(path: Path, where: int | str, record: dict[str, Any], key: str, kind: type) -> Any:
    """record[key], checked to be a `kind`; the error names file, line (or item) and field."""
    value = record.get(key)
    # bool is an int to Python; a question id of `true` is still wrong
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        wanted = {str: "a string", list: "a list", int: "an integer", bool: "true or false"}
        raise InputError(f"{at(path, where)}: {key!r} must be {wanted.get(kind, kind.__name__)}")
    return value


def strings(path: Path, where: int | str, record: dict[str, Any], key: str) -> list[str]:
    values = field_of(path, where, record, key, list)
    if not all(isinstance(v, str) for v in values):
        raise InputError(f"{at(path, where)}: {key!r} must be a list of strings")
    return [v.strip() for v in values if v.strip()]


def split_of(path: Path) -> str:
    """The split a file's name says it holds ('NQ-open.efficientqa.dev.1.1.jsonl' -> dev)."""
    parts = set(re.split(r"[^a-z]+", path.name.lower()))
    return next((s for s in ("dev", "test", "train", "validation") if s in parts), "all")


# -- building ------------------------------------------------------------------------------------


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def task_id(*parts: str | int) -> str:
    """`nq-dev-0123`: lower case, dataset first, never longer than task ids may be."""
    return "-".join(slug(str(p)) for p in parts if str(p))[:MAX_ID].rstrip("-")


def provenance(dataset: str, split: str, original_id: str | int) -> TaskProvenance:
    return TaskProvenance(
        dataset=dataset, split=split, original_id=str(original_id), licence=LICENCES[dataset]
    )


def make_task(**fields: Any) -> Task:
    """A task with its category's dimensions; a record that breaks the schema is a bug here."""
    fields.setdefault("dimensions", DIMENSIONS_FOR[fields["category"]])
    try:
        return Task.model_validate(fields)
    except ValidationError as err:  # pragma: no cover - the importers build valid tasks
        raise AssertionError(f"importer built an invalid task {fields.get('id')}: {err}") from err


# -- sampling and writing ------------------------------------------------------------------------


def shuffled(items: Sequence[T], seed: int, salt: str = "") -> list[T]:
    """A seeded shuffle; string seeds make `random` independent of PYTHONHASHSEED."""
    out = list(items)
    random.Random(f"{salt}:{seed}").shuffle(out)
    return out


def shares(counts: dict[K, int], total: int) -> dict[K, int]:
    """Split `total` over the keys in proportion to `counts` (largest remainders, stable)."""
    size = sum(counts.values())
    if total >= size:
        return dict(counts)
    exact = {k: n * total / size for k, n in counts.items()}
    out = {k: int(v) for k, v in exact.items()}
    order = sorted(counts, key=lambda k: (-(exact[k] - out[k]), list(counts).index(k)))
    for key in order[: total - sum(out.values())]:
        out[key] += 1
    return out


def category(task: Task) -> str:
    return task.category


def take(
    tasks: Sequence[Task],
    limit: int | None,
    seed: int,
    stratum: Callable[[Task], Hashable] = category,
) -> list[Task]:
    """The tasks in a seeded order; with a limit, that many, each stratum (by default each
    category) keeping its share, so a small sample still covers every kind of task."""
    ordered = shuffled(sorted(tasks, key=lambda t: t.id), seed, "order")
    if limit is None or limit >= len(ordered):
        return ordered
    groups: dict[Hashable, list[Task]] = {}
    for task in ordered:
        groups.setdefault(stratum(task), []).append(task)
    quota = shares({k: len(ts) for k, ts in groups.items()}, limit)
    kept = {t.id for k, ts in groups.items() for t in ts[: quota[k]]}
    return [t for t in ordered if t.id in kept]


def dumps(tasks: Sequence[Task]) -> str:
    """JSONL, one task a line, fields in schema order, empty and unset fields left out."""
    lines = []
    for task in tasks:
        record = task.model_dump(mode="json", exclude_none=True)
        record = {k: v for k, v in record.items() if v != [] or k == "expected_sources"}
        lines.append(json.dumps(record, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def write_suite(tasks: Sequence[Task], out: Path) -> None:
    """Write beside `out`, then rename: an existing file survives any failure before that."""
    if not tasks:
        raise InputError(f"{out}: no tasks to write (nothing in the input was kept)")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(dumps(tasks))
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
