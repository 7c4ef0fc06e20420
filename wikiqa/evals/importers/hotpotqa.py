"""HotpotQA (Yang et al. 2018), dev questions: answers that need two articles put together.

The simplified copy has no supporting facts, only `{"question", "answer", "type"}` in one JSON
list, so the two articles are found in the snapshot. A question becomes `multi_hop` when

- an article the question is about states the answer (see `answerability`), and
- another snapshot article is named in the question, by its proper name (not a common noun
  such as 'Country', not a piece of a longer name such as 'Wales' in 'New South Wales'), and
  the two are connected: one lead names the other, or BM25 ranks the named one in the top k.

Both articles are the task's `expected_sources` (attribution wants all of them). Yes/no answers
are left out: an alias check cannot decide them. So are answers the question itself contains
(a comparison's "Who is older, A or B?"): every article about A "states" A.
"""

from __future__ import annotations

from pathlib import Path

from wikiqa.evals.importers.answerability import Decision, Leads, fold, gap, padded
from wikiqa.evals.importers.common import (
    Imported,
    field_of,
    make_task,
    provenance,
    read_json,
    split_of,
    task_id,
)
from wikiqa.inputs import InputError
from wikiqa.sources import base_title

DATASET = "hotpotqa"


def linked(leads: Leads, a: str, b: str) -> bool:
    """Does either article's lead name the other?"""
    return padded(fold(base_title(b))) in leads.folded(a) or (
        padded(fold(base_title(a))) in leads.folded(b)
    )


def bridge(leads: Leads, question: str, decision: Decision) -> str | None:
    """The second article: named in the question by its proper name, tied to the answer's."""
    ranked = set(leads.ranked(question))
    for title in decision.named:
        if title in decision.sources or not leads.is_name(title):
            continue
        if title in ranked or any(linked(leads, s, title) for s in decision.sources):
            return title
    return None


def import_hotpotqa(path: Path, leads: Leads) -> Imported:
    split = split_of(path)
    records = read_json(path)
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a JSON list of questions")
    out = Imported(DATASET)
    for index, record in enumerate(records):
        where = f"item {index}"  # one JSON list: name the item (0-based, its original id)
        if not isinstance(record, dict):
            raise InputError(f"{path}: {where}: expected a JSON object")
        question = field_of(path, where, record, "question", str).strip()
        answer = field_of(path, where, record, "answer", str).strip().strip('"').strip()
        kind = record.get("type", "?")
        out.considered += 1
        if answer.casefold() in {"yes", "no"}:
            out.skipped["yes/no answer"] += 1
            continue
        if not question or not answer or len(question) > 1000:
            out.skipped["question or answer empty or too long"] += 1
            continue
        decision = leads.decide(question, [answer])
        common = {
            "id": task_id("hotpotqa", split, f"{index:04d}"), "question": question,
            "answers": [answer], "reference_answer": answer, "should_refuse": False,
            "provenance": provenance(DATASET, split, index),
        }  # fmt: skip
        note = f"HotpotQA {split} ({kind}), item {index}"
        if decision.echoed:
            out.skipped["answer named in the question"] += 1
        elif decision.stated:
            second = bridge(leads, question, decision)
            if second is None:
                out.skipped["stated, but no second article"] += 1
                continue
            first = decision.evidence[0]
            out.tasks.append(
                make_task(
                    **common,
                    category="multi_hop",
                    expected_sources=[first.title, second],
                    notes=f"{note}; {first.title!r} states {first.alias!r}, and the question "
                    f"names {second!r}.",
                )
            )
        else:
            about = gap(leads, question, decision, [answer])
            if isinstance(about, str):
                out.skipped[about] += 1
            else:
                out.tasks.append(
                    make_task(
                        **common,
                        category="retrieval_gap",
                        expected_sources=about,
                        notes=f"{note}; no snapshot lead states the answer, though the "
                        f"question names {about[0]!r}: answerable live only.",
                    )
                )
    return out
