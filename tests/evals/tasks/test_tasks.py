from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from wikiqa.evals import CATEGORIES, TaskError, load_tasks, resolve_suite, suites_dir
from wikiqa.evals.tasks import asserts
from wikiqa.sources import SnapshotSource

GOOD = {
    "id": "t1",
    "category": "factual",
    "question": "Who developed FLOW-MATIC?",
    "dimensions": ["faithfulness", "correctness", "completeness", "attribution", "calibration"],
    "reference_answer": "Grace Hopper.",
    "expected_sources": ["Grace Hopper"],
    "should_refuse": False,
    "asserts": ["icontains:Hopper", "not-icontains:Backus"],
}


def write(tmp_path: Path, *lines: str | bytes) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(
        b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines)
    )
    return path


def test_a_good_file_loads(tmp_path: Path) -> None:
    tasks = load_tasks(write(tmp_path, json.dumps(GOOD), "", json.dumps(GOOD | {"id": "t2"})))
    assert [t.id for t in tasks] == ["t1", "t2"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"tasks\.jsonl:2: invalid JSON: Expecting property name"),
        ("[1, 2]", r"tasks\.jsonl:2: expected a JSON object, got list"),
        (
            json.dumps(GOOD | {"category": "trivia"}),
            r"tasks\.jsonl:2: category: Input should be 'factual'",
        ),
        (
            json.dumps(GOOD | {"should_refuse": "maybe"}),
            r"tasks\.jsonl:2: should_refuse: Input should be a valid boolean",
        ),
        (
            json.dumps(GOOD | {"dimensions": ["faithfulness", "vibes"]}),
            r"tasks\.jsonl:2: dimensions\.1: Input should be",
        ),
        (
            json.dumps(GOOD | {"reference_answer": None}),
            r"correctness/completeness need a reference_answer",
        ),
        (json.dumps(GOOD | {"expected_sources": []}), r"attribution needs expected_sources"),
        (json.dumps(GOOD | {"asserts": ["regex:("]}), r"bad regular expression"),
        (json.dumps(GOOD | {"asserts": ["contains:"]}), r"needs a value after ':'"),
        (  # a typo no longer loads and quietly fails closed (issue 25)
            json.dumps(GOOD | {"asserts": ["icontain:Backus", "bogus-op:Zebra"]}),
            r"tasks\.jsonl:2: unknown assert op 'icontain' \(known: contains, ",
        ),
        (json.dumps(GOOD | {"surprise": 1}), r"surprise: Extra inputs are not permitted"),
        (
            json.dumps(GOOD | {"category": "unanswerable"}),
            r"unanswerable tasks must have should_refuse: true",
        ),
        (json.dumps(GOOD | {"category": "injection"}), r"injection tasks \(and only they\)"),
        (
            json.dumps(GOOD | {"category": "multi_hop"}),
            r"multi_hop tasks need at least 2 expected_sources",
        ),
        (json.dumps(GOOD | {"id": "Bad Id"}), r"id: String should match pattern"),
        (
            json.dumps(GOOD | {"question": "x" * 1001}),
            r"question: String should have at most 1000 characters",
        ),
        (json.dumps(GOOD), r"tasks\.jsonl:2: duplicate task id 't1' \(first on line 1\)"),
        (b"\xff\xfe{}", r"tasks\.jsonl:2: not UTF-8"),
    ],
)
def test_malformed_lines_fail_with_file_line_and_reason(
    tmp_path: Path, line: str | bytes, message: str
) -> None:
    with pytest.raises(TaskError, match=message):
        load_tasks(write(tmp_path, json.dumps(GOOD), line))


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="no tasks"):
        load_tasks(write(tmp_path, "", "  "))
    with pytest.raises(TaskError, match="cannot read task file"):
        load_tasks(tmp_path / "nope.jsonl")


def test_holdout_loads_only_when_asked() -> None:
    assert resolve_suite("dev") == suites_dir() / "dev.jsonl"
    assert resolve_suite("dev", holdout=True) == suites_dir() / "holdout.jsonl"
    for sneaky in ["holdout", str(suites_dir() / "holdout.jsonl")]:
        with pytest.raises(TaskError, match="loads only with --holdout"):
            resolve_suite(sneaky)
    with pytest.raises(TaskError, match="no such suite"):
        resolve_suite("nope.jsonl")


@pytest.mark.parametrize(
    ("spec", "output", "expected"),
    [
        ("equals:Paris", "Paris", True),
        ("equals:Paris", "Paris.", False),
        ("contains:Everest", "Mount Everest", True),
        ("contains:everest", "Mount Everest", False),
        ("icontains:everest", "Mount  EVEREST", True),
        ("not-contains:K2", "Mount Everest", True),
        ("not-icontains:k2", "It is K2", False),
        ("regex:\\b19\\d\\d\\b", "in 1953", True),
        ("not-regex:(?i)mars", "on Mars", False),
        ("is-json", '{"a": 1}', True),
        ("is-json", "{a: 1}", False),
        ("icontains:Earth's", "Earth’s highest", True),  # quote marks are normalised
        ("is-sql-ish:SELECT", "SELECT 1", False),  # unknown ops fail closed
    ],
)
def test_assert_vocabulary(spec: str, output: str, expected: bool) -> None:
    assert asserts.check(spec, output)[0] is expected


def test_unknown_ops_say_they_failed_closed() -> None:
    assert asserts.check("frobnicate:x", "x") == (
        False,
        "unknown assert op 'frobnicate' (fails closed)",
    )


# -- the committed suites ---------------------------------------------------------------------


@pytest.mark.parametrize(("name", "floor"), [("dev", 6), ("holdout", 2)])
def test_suites_cover_every_category(name: str, floor: int) -> None:
    tasks = load_tasks(suites_dir() / f"{name}.jsonl")
    counts = {c: sum(t.category == c for t in tasks) for c in CATEGORIES}
    for category, count in counts.items():
        wanted = 2 if category == "injection" else floor  # injection is a small marked slice
        assert count >= wanted, (category, count)
    assert 2 <= counts["injection"] <= 3
    assert all(
        t.notes and t.notes.startswith("INJECTION") for t in tasks if t.category == "injection"
    )


@pytest.mark.parametrize("name", ["dev", "holdout"])
def test_suite_tasks_are_decidable_against_the_snapshot(
    name: str, snapshot: SnapshotSource
) -> None:
    texts = {title: snapshot.get_article(title).text for title in snapshot.titles()}  # type: ignore[union-attr]
    for task in load_tasks(suites_dir() / f"{name}.jsonl"):
        sources = [snapshot.get_article(t) for t in task.expected_sources]
        assert all(
            a is not None and a.title == t
            for a, t in zip(sources, task.expected_sources, strict=True)
        ), task.id
        lead = " ".join(a.text for a in sources if a is not None)
        key_points = [s for s in task.asserts if not asserts.is_negative(s)]
        if task.reference_answer:  # the reference itself passes its own asserts
            assert all(asserts.check(s, task.reference_answer)[0] for s in task.asserts), task.id
        if task.category in {"factual", "multi_hop", "disambiguation", "adversarial", "injection"}:
            assert all(asserts.check(s, lead)[0] for s in key_points), task.id  # from snapshot text
        if task.category == "retrieval_gap":
            assert not any(asserts.check(s, lead)[0] for s in key_points), (
                task.id
            )  # not in the lead
        if task.category == "unanswerable":
            patterns = [re.compile(rf"\b{re.escape(w)}\b", re.IGNORECASE) for w in task.absent]
            assert patterns, task.id
            assert not [t for t, x in texts.items() if all(p.search(x) for p in patterns)], task.id
        if task.injection:
            for plant in task.injection.plants:
                original = snapshot.get_article(plant.title)
                assert original is not None
                assert not any(
                    c.casefold() in original.text.casefold() for c in task.injection.canaries
                )
