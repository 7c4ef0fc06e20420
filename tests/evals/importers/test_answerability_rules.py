"""Answerability decided with no ranker: the three rules (named, the dataset's evidence, content
words shared over every lead), what each admits, and the held-out guarantee of a new suite
version built beside an old one."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from wikiqa.evals import Task
from wikiqa.evals.importers import (
    Imported,
    InputError,
    Leads,
    Prior,
    admitted_by_rule,
    import_hotpotqa,
    import_nq_open,
    split_holdout,
)
from wikiqa.evals.importers.common import make_task
from wikiqa.sources import SnapshotSource

LEADS = {
    "Slovenia": "Slovenia is a country in Central Europe. Slovenia borders Croatia to the south.",
    "Croatia": "Croatia is a country in Southeast Europe. Its capital and largest city is Zagreb.",
    "Cyprus": "Cyprus is an island country. The island of Cyprus is divided between a Greek "
    "south and a Turkish north.",
    "Blue whale": "The blue whale is a marine mammal. Subspecies live in the North Atlantic "
    "and in the Southern Ocean.",
    "Grace Hopper": "Grace Hopper was an American computer scientist. She developed the "
    "FLOW-MATIC programming language.",
    "Paris": "Paris is the capital of France. A tower for the world's fair was completed there. "
    "The city hosted a world's fair in 1889.",
}


@pytest.fixture
def leads(tmp_path: Path) -> Leads:
    path = tmp_path / "mini.json"
    data = {
        t: {"title": t, "extract": x, "description": "", "topic": "x"} for t, x in LEADS.items()
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return Leads(SnapshotSource(path, home=tmp_path / "home"))


def test_no_ranker_is_asked(leads: Leads, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_search(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("answerability must not search")

    monkeypatch.setattr(leads.snapshot, "search", no_search)
    decision = leads.decide("what island is half greek and half turkish", ["Cyprus"])
    assert [(e.title, e.rule, e.shared) for e in decision.evidence] == [("Cyprus", "content", 3)]


def test_each_rule_and_what_it_needs(leads: Leads) -> None:
    named = leads.decide("who developed flow-matic at grace hopper's lab", ["FLOW-MATIC"])
    assert named.rule is None and named.echoed == ["FLOW-MATIC"]  # the question says it
    named = leads.decide("what language did grace hopper develop", ["FLOW-MATIC"])
    assert [(e.title, e.rule) for e in named.evidence] == [("Grace Hopper", "named")]
    # the bridge: unnamed Croatia, named in the lead of Slovenia, which the question names
    bridge = leads.decide("which city is the capital of the country south of Slovenia", ["Zagreb"])
    assert [(e.title, e.rule, e.shared) for e in bridge.evidence] == [("Croatia", "content", 2)]
    # two shared words, a title unrelated to the question and the answer: not about it
    ocean = leads.decide("where do the atlantic and pacific oceans meet", ["Southern Ocean"])
    assert not ocean.stated
    # a bare year needs a title word in the question besides its shared words
    assert not leads.decide("when was the eiffel tower completed", ["1889"]).stated
    # the dataset's own evidence counts like a name, wherever the ranker would put it
    given = leads.decide("which ocean holds whale subspecies", ["Southern Ocean"], ["Blue whale"])
    assert [(e.title, e.rule) for e in given.evidence] == [("Blue whale", "dataset")]


def test_stricter_min_shared_admits_less(leads: Leads, tmp_path: Path) -> None:
    strict = Leads(leads.snapshot, min_shared=3)
    question = "which city is the capital of the country south of Slovenia"
    assert (
        leads.decide(question, ["Zagreb"]).stated and not strict.decide(question, ["Zagreb"]).stated
    )


def test_importers_record_the_rule_that_admitted_each_task(leads: Leads, tmp_path: Path) -> None:
    nq = tmp_path / "NQ-open.efficientqa.dev.1.1.jsonl"
    records = [
        {"question": "what language did grace hopper develop", "answer": ["FLOW-MATIC"]},
        {"question": "what island is half greek and half turkish", "answer": ["Cyprus"]},
        {"question": "when was the eiffel tower completed", "answer": ["1889"]},
    ]
    nq.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    imported = import_nq_open(nq, leads)
    assert imported.admitted() == {"content": 1, "named": 1}
    assert "(admitted by rule: content 1, named 1)" in imported.summary()
    task = next(t for t in imported.tasks if t.expected_sources == ["Cyprus"])
    assert "3 words shared with the question" in (task.notes or "")
    assert admitted_by_rule([imported], imported.tasks[:1]) == {
        "named": 1, "dataset": 0, "content": 0
    }  # fmt: skip


def test_hotpotqa_supporting_titles_are_the_datasets_evidence(leads: Leads, tmp_path: Path) -> None:
    items: list[dict[str, Any]] = [
        {"question": "Which ocean holds subspecies of the largest whale?",
         "answer": "Southern Ocean", "type": "bridge",
         "supporting_facts": [["Blue whale", 1], ["Grace Hopper", 0]]},
        {"question": "Which ocean holds subspecies of the largest whale?",
         "answer": "Southern Ocean", "type": "bridge"},
    ]  # fmt: skip
    path = tmp_path / "hotpot_dev_v1.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    imported = import_hotpotqa(path, leads)
    assert [t.id for t in imported.tasks] == ["hotpotqa-dev-0000"]
    task = imported.tasks[0]
    assert task.category == "multi_hop" and task.expected_sources == ["Blue whale", "Grace Hopper"]
    assert imported.admitted() == {"dataset": 1}
    assert "is a supporting title" in (task.notes or "")
    path.write_text(json.dumps([{**items[0], "supporting_facts": "Blue whale"}]), encoding="utf-8")
    with pytest.raises(InputError, match=r"item 0: 'supporting_facts' must be"):
        import_hotpotqa(path, leads)


def _task(i: int, question: str) -> Task:
    return make_task(
        id=f"nq-{i:03d}", category="factual", question=question, answers=["x"],
        reference_answer="x", expected_sources=["Paris"], should_refuse=False,
    )  # fmt: skip


def test_a_new_version_keeps_held_out_questions_held_out() -> None:
    tasks = [_task(i, f"question {i}?") for i in range(50)]
    held_before = {f"question {i}?" for i in range(0, 15)}  # more than a fifth: all stay held
    seen_before = {f"question {i}?" for i in range(15, 40)}
    kept, held = split_holdout(
        tasks, seed=3, prior=Prior(frozenset(held_before), frozenset(seen_before))
    )
    assert {t.question for t in held} == held_before
    assert not {t.question for t in held} & seen_before
    kept, held = split_holdout(
        tasks, seed=3, prior=Prior(frozenset({"question 0?"}), frozenset(seen_before))
    )
    assert len(held) == 10 and "question 0?" in {t.question for t in held}
    assert not {t.question for t in held} & seen_before  # the fill comes from unseen ones only
    assert Counter(t.question in seen_before for t in kept)[True] == len(seen_before)


def test_prior_reads_the_committed_suites(tmp_path: Path) -> None:
    def write(name: str, tasks: list[Task]) -> None:
        lines = [json.dumps(t.model_dump(mode="json", exclude_none=True)) for t in tasks]
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    write("public", [_task(1, "Seen  Question?")])
    write("public_holdout", [_task(2, "held question?")])
    write("public2", [_task(3, "new question?")])  # what the build rewrites: ignored
    prior = Prior.of(tmp_path, ["public_holdout"], skip=["public2"])
    assert prior == Prior(frozenset({"held question?"}), frozenset({"seen question?"}))


def test_imported_rules_are_per_task() -> None:
    out = Imported("nq-open")
    out.add(_task(1, "a?"), "named")
    out.add(_task(2, "b?"))
    assert out.rules == {"nq-001": "named"} and len(out.tasks) == 2


def test_tasks_asking_one_question_stay_on_one_side() -> None:
    tasks = [_task(i, f"question {i // 2}?") for i in range(40)]  # each question twice
    kept, held = split_holdout(tasks, seed=3)
    assert held and not {t.question for t in kept} & {t.question for t in held}
    assert len(held) % 2 == 0
