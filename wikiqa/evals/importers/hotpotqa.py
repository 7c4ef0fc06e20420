"""HotpotQA (Yang et al. 2018), dev questions: answers that need two articles put together.

The full dev file gives each question its `supporting_facts` (`[[title, sentence], ...]`): those
titles are the dataset's own evidence of which articles a question is about (`answerability`'s
`dataset` rule). The simplified copy has none, only `{"question", "answer", "type"}` in one
JSON list, so the two articles are then found in the snapshot. A question becomes `multi_hop`
when

- an article the question is about states the answer (see `answerability`), and
- a second snapshot article is a supporting title, or is named in the question by its proper
  name (not a common noun such as 'Country', not a piece of a longer name such as 'Wales' in
  'New South Wales') and connected to the first: one lead names the other.

No ranker takes part: a suite chosen by what BM25 finds cannot measure retrieval.

Both articles are the task's `expected_sources` (attribution wants all of them). Yes/no answers
are left out: an alias check cannot decide them. So are answers the question itself contains
(a comparison's "Who is older, A or B?"): every article about A "states" A.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wikiqa.evals.importers.answerability import HOW, Decision, Leads, fold, gap, padded
from wikiqa.evals.importers.common import (
    Imported,
    at,
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


def bridge(
    leads: Leads, question: str, decision: Decision, supporting: Sequence[str] = ()
) -> str | None:
    """The second article: one of the dataset's supporting titles, or one named in the
    question by its proper name and tied to the answer's (one lead names the other)."""
    for title in supporting:
        if title in leads.text and title not in decision.sources:
            return title
    for title in decision.named:
        if title in decision.sources or not leads.is_name(title):
            continue
        if any(linked(leads, s, title) for s in decision.sources):
            return title
    return None


def supporting_titles(path: Path, where: str, record: dict[str, Any]) -> list[str]:
    """The titles of HotpotQA's `supporting_facts` (`[[title, sentence], ...]`), when the copy
    carries them; the simplified copy does not."""
    facts = record.get("supporting_facts")
    if facts is None:
        return []
    if not isinstance(facts, list) or not all(
        isinstance(f, list) and f and isinstance(f[0], str) for f in facts
    ):
        raise InputError(f"{at(path, where)}: 'supporting_facts' must be [[title, n], ...]")
    return list(dict.fromkeys(f[0].strip() for f in facts if f[0].strip()))


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
        supporting = supporting_titles(path, where, record)
        decision = leads.decide(question, [answer], supporting)
        common = {
            "id": task_id("hotpotqa", split, f"{index:04d}"), "question": question,
            "answers": [answer], "reference_answer": answer, "should_refuse": False,
            "provenance": provenance(DATASET, split, index),
        }  # fmt: skip
        note = f"HotpotQA {split} ({kind}), item {index}"
        if decision.echoed:
            out.skipped["answer named in the question"] += 1
        elif decision.stated:
            second = bridge(leads, question, decision, supporting)
            if second is None:
                out.skipped["stated, but no second article"] += 1
                continue
            first = decision.evidence[0]
            how = HOW[first.rule].format(shared=first.shared)
            tie = "is a supporting title" if second in supporting else "is named in the question"
            out.add(
                make_task(
                    **common,
                    category="multi_hop",
                    expected_sources=[first.title, second],
                    notes=f"{note}; {first.title!r} ({how}) states {first.alias!r}, and "
                    f"{second!r} {tie}.",
                ),
                first.rule,
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
