"""SelfAware (Yin et al. 2023): questions nobody can answer, beside ones that have answers.

The unanswerable half (from Quora and HowStuffWorks: "What is the true purpose of god?") is what
calibration needs at scale: the agent must refuse them, whatever it retrieves. They become
`unanswerable` tasks, graded like the dev suite's (faithfulness + calibration). The answerable
half (from SQuAD, HotpotQA and TriviaQA) is handled like NQ-open: `factual` when the snapshot
states an alias in an article the question is about, `retrieval_gap` when only live Wikipedia
could.

The file is one JSON document: `{"license": ..., "example": [{"question_id", "question",
"answer": [...] | null, "answerable": bool, "source"}, ...]}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wikiqa.evals.importers.answerability import Leads, open_task
from wikiqa.evals.importers.common import (
    Imported,
    field_of,
    make_task,
    provenance,
    read_json,
    strings,
    task_id,
)
from wikiqa.inputs import InputError

DATASET = "selfaware"
SPLIT = "all"  # SelfAware has one split; SOURCES.md keeps a seeded half of it


def _examples(path: Path) -> list[Any]:
    data = read_json(path)
    examples = data.get("example") if isinstance(data, dict) else None
    if not isinstance(examples, list):
        raise InputError(f"{path}: expected an object with an 'example' list")
    return examples


def import_selfaware(path: Path, leads: Leads) -> Imported:
    out = Imported(DATASET)
    seen: set[int] = set()
    for index, record in enumerate(_examples(path)):
        where = f"example {index + 1}"  # one JSON document: name the item, not a line
        if not isinstance(record, dict):
            raise InputError(f"{path}: {where}: expected a JSON object")
        qid = field_of(path, where, record, "question_id", int)
        question = field_of(path, where, record, "question", str).strip()
        answerable = field_of(path, where, record, "answerable", bool)
        out.considered += 1
        if qid in seen:
            raise InputError(f"{path}: {where}: duplicate question_id {qid}")
        seen.add(qid)
        if not question or len(question) > 1000:
            out.skipped["question empty or too long"] += 1
            continue
        tid, origin = task_id("selfaware", f"{qid:04d}"), provenance(DATASET, SPLIT, qid)
        if not answerable:
            out.tasks.append(
                make_task(
                    id=tid,
                    category="unanswerable",
                    question=question,
                    should_refuse=True,
                    expected_sources=[],
                    provenance=origin,
                    notes=f"SelfAware unanswerable ({record.get('source')}): no source, "
                    "Wikipedia included, can settle it.",
                )
            )
            continue
        aliases = strings(path, where, record, "answer") if record.get("answer") else []
        open_task(
            leads, out, id=tid, question=question, aliases=aliases, origin=origin,
            note=f"SelfAware answerable, from {record.get('source')}",
        )  # fmt: skip
    return out
