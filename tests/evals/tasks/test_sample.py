"""`LIMIT N` draws across the suite's categories, not its first N lines."""

from __future__ import annotations

from collections import Counter

from wikiqa.evals.tasks import load_tasks, resolve_suite, sample


def test_ten_dev_tasks_hold_every_category_and_an_unanswerable_one() -> None:
    tasks = load_tasks(resolve_suite("dev"))
    assert Counter(t.category for t in tasks[:10]) == {"factual": 8, "multi_hop": 2}  # the file
    drawn = sample(tasks, 10)
    counts = Counter(t.category for t in drawn)
    assert len(drawn) == 10 and set(counts) == {t.category for t in tasks}
    assert counts["factual"] == 2 and counts["unanswerable"] == 1
    assert any(t.should_refuse for t in drawn)
    assert [t.id for t in drawn] == [t.id for t in tasks if t in drawn]  # file order kept


def test_a_large_category_gets_seats_in_proportion() -> None:
    tasks = load_tasks(resolve_suite("public"))  # 200 factual, 144 unanswerable, 38 multi-hop
    counts = Counter(t.category for t in sample(tasks, 40))
    assert sum(counts.values()) == 40 and len(counts) == 6
    assert counts["factual"] == 14 and counts["unanswerable"] == 10 and counts["multi_hop"] == 3


def test_the_draw_is_deterministic_and_a_limit_past_the_suite_is_the_suite() -> None:
    tasks = load_tasks(resolve_suite("dev"))
    assert [t.id for t in sample(tasks, 7)] == [t.id for t in sample(tasks, 7)]
    assert sample(tasks, None) == tasks and sample(tasks, 500) == tasks
    three = sample(tasks, 3)  # fewer seats than categories: the largest categories first
    assert [t.category for t in three] == ["factual", "multi_hop", "disambiguation"]
