"""The eval task schema and loader. A malformed line fails with file:line and the reason."""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from wikiqa.evals.tasks import asserts
from wikiqa.inputs import MiB, parse_jsonl, read_bounded, validate
from wikiqa.project import suites_dir
from wikiqa.sources import Plant

Category = Literal[
    "factual",
    "multi_hop",
    "disambiguation",
    "unanswerable",
    "adversarial",
    "retrieval_gap",
    "injection",
]
Dimension = Literal["faithfulness", "correctness", "completeness", "attribution", "calibration"]
CATEGORIES: tuple[Category, ...] = (
    "factual", "multi_hop", "disambiguation", "unanswerable", "adversarial", "retrieval_gap",
    "injection",
)  # fmt: skip
DIMENSIONS: tuple[Dimension, ...] = (
    "faithfulness", "correctness", "completeness", "attribution", "calibration",
)  # fmt: skip


class TaskError(ValueError):
    """A task file is malformed; the message names file and line."""


class Injection(BaseModel):
    """Text planted into retrieved articles, and strings that must never reach the output."""

    model_config = ConfigDict(extra="forbid")

    plants: list[Plant] = Field(min_length=1)
    canaries: list[str] = Field(min_length=1)


class TaskProvenance(BaseModel):
    """Where an imported task came from, so every number can be traced to public data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str = Field(min_length=1)
    split: str = Field(min_length=1)
    original_id: str = Field(min_length=1, description="The source's id, or its line number.")
    licence: str = Field(min_length=1)


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=80)
    category: Category
    question: str = Field(min_length=1, max_length=1000)
    dimensions: list[Dimension] = Field(min_length=1)
    reference_answer: str | None = None
    expected_sources: list[str] = Field(default_factory=list)
    should_refuse: bool
    answers: list[str] = Field(
        default_factory=list,
        description="Short gold forms of the answer (aliases, as NQ and SimpleQA give them): "
        "an answer that states one is correct.",
    )
    asserts: list[str] = Field(default_factory=list)
    injection: Injection | None = None
    absent: list[str] = Field(
        default_factory=list,
        description="For unanswerable tasks: terms no snapshot article contains together.",
    )
    notes: str | None = None
    provenance: TaskProvenance | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        dims = set(self.dimensions)
        if len(dims) != len(self.dimensions):
            raise ValueError("dimensions repeat")
        if dims & {"correctness", "completeness"} and not self.reference_answer:
            raise ValueError("correctness/completeness need a reference_answer")
        if any(not a.strip() for a in self.answers):
            raise ValueError("answers must not be blank")
        if "attribution" in dims and not self.expected_sources:
            raise ValueError("attribution needs expected_sources")
        if self.category == "multi_hop" and len(self.expected_sources) < 2:
            raise ValueError("multi_hop tasks need at least 2 expected_sources")
        if self.category == "unanswerable" and not self.should_refuse:
            raise ValueError("unanswerable tasks must have should_refuse: true")
        if (self.category == "injection") != (self.injection is not None):
            raise ValueError("injection tasks (and only they) carry an `injection` block")
        for spec in self.asserts:
            bad = asserts.problem(spec)
            if bad:
                raise ValueError(bad)
        return self


MAX_SUITE_BYTES = 64 * MiB  # 100x the public suite; a bigger "suite" is a mistake


def read_suite(path: Path | str) -> bytes:
    """A task file's bytes, read once and bounded: parsing and hashing share them, so a pipe
    such as /dev/stdin hashes what was parsed."""
    try:
        return read_bounded(path, MAX_SUITE_BYTES, "task file")
    except ValueError as err:
        raise TaskError(str(err)) from err
    except OSError as err:
        raise TaskError(f"{path}: cannot read task file: {err.strerror}") from err


def load_tasks(path: Path | str) -> list[Task]:
    """Parse a JSONL task file; every problem names the file and line."""
    return parse_tasks(read_suite(path), path)


def parse_tasks(raw: bytes, path: Path | str) -> list[Task]:
    """Parse task-file bytes; `path` only names the file in errors."""
    tasks: list[Task] = []
    first_line: dict[str, int] = {}
    for lineno, record in parse_jsonl(raw, path, TaskError):
        task = validate(Task, record, f"{path}:{lineno}", TaskError)
        if task.id in first_line:
            raise TaskError(
                f"{path}:{lineno}: duplicate task id {task.id!r} (first on line {first_line[task.id]})"
            )
        first_line[task.id] = lineno
        tasks.append(task)
    if not tasks:
        raise TaskError(f"{path}: no tasks")
    return tasks


def suite_hash(path: Path | str) -> str:
    return bytes_hash(read_suite(path))


def bytes_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


def held_out_questions() -> set[str]:
    """Fingerprints of every held-out task: a held-out task is known by its content,
    so a copy, a subset or `/dev/stdin` cannot smuggle one into a development run."""
    folder = suites_dir()
    return {
        _fingerprint(t)
        for name in HOLDOUTS.values()
        if (folder / f"{name}.jsonl").exists()
        for t in load_tasks(folder / f"{name}.jsonl")
    }


def refuse_held_out(tasks: list[Task], path: Path | str) -> None:
    """Raise TaskError if any task asks a held-out question (held-out splits run with --holdout)."""
    held = held_out_questions()
    leaked = [t.id for t in tasks if _fingerprint(t) in held]
    if leaked:
        raise TaskError(
            f"{path}: {len(leaked)} task(s) ask held-out questions (e.g. {leaked[0]!r}); the "
            "held-out split loads only with --holdout (run it once, at the end)"
        )


def held_out_hashes() -> set[str]:
    """The file hashes of the held-out splits as committed: a log or row naming one of these
    ran a held-out split, whatever its header says."""
    folder = suites_dir()
    return {
        bytes_hash(read_suite(folder / f"{name}.jsonl"))
        for name in HOLDOUTS.values()
        if (folder / f"{name}.jsonl").exists()
    }


def fold(text: str) -> str:
    """Text as a fingerprint sees it: compatibility-normalised (NFKC), without invisible format
    characters (zero-width spaces and joiners, BOM, direction marks) or punctuation, case-folded,
    whitespace collapsed: `Who  wrote Dune?\u200b` and `who wrote dune` are one question."""
    kept = (
        " " if unicodedata.category(c).startswith(("P", "Z")) else c
        for c in unicodedata.normalize("NFKC", text)
        if unicodedata.category(c) not in ("Cf", "Cc", "Mn") or c in "\n\t"
    )
    return " ".join("".join(kept).casefold().split())


def _fingerprint(task: Task) -> str:
    """What makes a task the same task whatever its id, file or category: its folded question
    and any planted text (dev and holdout share a question with and without an injection)."""
    plants = fold(task.injection.model_dump_json()) if task.injection else ""
    return f"{fold(task.question)}|{plants}"


# Named suites and their held-out splits; a held-out split loads only with holdout=True.
HOLDOUTS = {
    "dev": "holdout",
    "public": "public_holdout",
    "fresh": "fresh_holdout",
    "public2": "public2_holdout",
    "fresh2": "fresh2_holdout",
}


def resolve_suite(suite: str, holdout: bool = False) -> Path:
    """`dev`, `public`, another committed suite by name (`public_slice`), or a path; with holdout=True, the named suite's held-out split (`dev`'s
    is `holdout.jsonl`, `public`'s `public_holdout.jsonl`, `public2`'s `public2_holdout.jsonl`;
    `fresh` and `fresh2` are held-out splits only). No held-out split ever loads without holdout=True, by name or by
    path. Named suites are read from the project's `experiments/suite/` (`wikiqa.project`)."""
    folder = suites_dir()
    held = {folder / f"{name}.jsonl" for name in HOLDOUTS.values()}
    if holdout:
        by_split = {split: split for split in HOLDOUTS.values()}
        name = HOLDOUTS.get(suite) or by_split.get(suite)
        if name is None:
            raise TaskError(
                "--holdout runs a named suite's held-out split (dev, public or fresh); "
                "do not pass a task file with it"
            )
        return folder / f"{name}.jsonl"
    # a bare name is a committed suite (dev, public, public_slice, ...); anything else a path
    bare = suite.isidentifier() and (folder / f"{suite}.jsonl").exists()
    named = suite in HOLDOUTS or suite in HOLDOUTS.values() or bare
    path = folder / f"{suite}.jsonl" if named else Path(suite)
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as err:  # a symlink loop (RuntimeError before Python 3.13)
        raise TaskError(f"{suite}: cannot read task file: {err}") from None
    if any(resolved == h.resolve() for h in held):
        raise TaskError("the held-out suite loads only with --holdout (run it once, at the end)")
    if named and not path.exists() and suite in HOLDOUTS:
        raise TaskError(f"{suite} is a held-out split only: run it with --holdout")
    if not path.exists():
        raise TaskError(f"{suite}: no such suite (use dev, public, --holdout, or a task file path)")
    return path


def sample(tasks: list[Task], limit: int | None) -> list[Task]:
    """`limit` tasks drawn across the suite's categories rather than its first lines: a suite
    file is grouped by category, so its first ten tasks may hold no unanswerable one and could
    not test an abstention lever. Every category gets one task while `limit` allows (the
    largest first), then seats go by Webster's rule (in proportion to each category's size);
    each category gives its tasks in file order, and the sample keeps file order. Deterministic:
    the same suite and limit give the same tasks, so a limited run can be resumed or repeated."""
    if limit is None or limit >= len(tasks):
        return list(tasks)
    sizes: dict[str, int] = {}
    for task in tasks:
        sizes[task.category] = sizes.get(task.category, 0) + 1
    seats = dict.fromkeys(sizes, 0)
    by_size = sorted(sizes, key=lambda c: -sizes[c])  # stable: ties keep file order
    for category in by_size[:limit]:
        seats[category] = 1
    for _ in range(limit - sum(seats.values())):
        open_ = [c for c in by_size if seats[c] < sizes[c]]
        chosen = max(open_, key=lambda c: sizes[c] / (2 * seats[c] + 1))
        seats[chosen] += 1
    taken = dict.fromkeys(sizes, 0)
    picked = []
    for task in tasks:
        if taken[task.category] < seats[task.category]:
            taken[task.category] += 1
            picked.append(task)
    return picked
