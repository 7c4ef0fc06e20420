"""The committed second version of the public suite (`public2`, its held-out split and
`fresh2_holdout`), built with no ranker: its held-out guarantee against every suite before it,
its recipe's floors, and where each answerable task's admission is written down."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from wikiqa.evals import CATEGORIES, TaskError, load_tasks, resolve_suite, suites_dir
from wikiqa.evals.importers import LICENCES, OUTPUTS
from wikiqa.evals.tasks.task import HOLDOUTS, refuse_held_out

FOLDER = suites_dir()


def asked(name: str) -> set[str]:
    return {" ".join(t.question.casefold().split()) for t in load_tasks(FOLDER / f"{name}.jsonl")}


def test_the_new_held_out_splits_load_only_with_holdout() -> None:
    assert resolve_suite("public2") == FOLDER / "public2.jsonl"
    assert resolve_suite("public2", holdout=True) == FOLDER / "public2_holdout.jsonl"
    assert resolve_suite("fresh2", holdout=True) == FOLDER / "fresh2_holdout.jsonl"
    for sneaky in ["public2_holdout", "fresh2_holdout", str(FOLDER / "public2_holdout.jsonl")]:
        with pytest.raises(TaskError, match="loads only with --holdout"):
            resolve_suite(sneaky)
    with pytest.raises(TaskError, match="held-out split only"):
        resolve_suite("fresh2")


def test_held_out_questions_stay_out_of_development(tmp_path: Path) -> None:
    held_before = asked("public_holdout") | asked("fresh_holdout") | asked("holdout")
    seen_before = asked("public") | asked("dev") | asked("public_slice")
    assert not asked("public2") & held_before  # no old held-out question is developed on
    assert not asked("public2_holdout") & seen_before  # nothing looked at is held out
    assert not asked("public2") & asked("public2_holdout")
    assert not asked("fresh2_holdout") & (held_before | seen_before | asked("public2"))
    # a copy of a new held-out task under another name is refused like an old one
    copy = tmp_path / "mine.jsonl"
    copy.write_bytes((FOLDER / "public2_holdout.jsonl").read_bytes())
    with pytest.raises(TaskError, match="ask held-out questions"):
        refuse_held_out(load_tasks(copy), copy)
    assert set(OUTPUTS.values()) - {"public2"} <= set(HOLDOUTS.values())


def test_the_rebuilt_suite_meets_its_recipe() -> None:
    public = load_tasks(FOLDER / "public2.jsonl")
    holdout = load_tasks(FOLDER / "public2_holdout.jsonl")
    counts: Counter[str] = Counter(t.category for t in public + holdout)
    floors = {"factual": 200, "unanswerable": 150, "adversarial": 60, "injection": 50}
    assert all(counts[c] >= n for c, n in floors.items()), counts
    assert set(counts) <= set(CATEGORIES)
    for task in public + holdout:
        assert task.provenance is not None
        assert task.provenance.licence == LICENCES[task.provenance.dataset]
        if task.category in ("factual", "multi_hop") and task.injection is None:
            # the rule that admitted it, in its notes; never a ranker's rank
            notes = task.notes or ""
            assert "BM25" not in notes
            assert any(
                why in notes
                for why in ("named in the question", "the dataset's evidence", "words shared")
            ), task.id
