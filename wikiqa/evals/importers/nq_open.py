"""NQ-open (Lee et al. 2019; the EfficientQA dev and test splits): real search-engine questions
with short gold answers, the closest public match to what the agent is asked.

One JSON object a line: `{"question": ..., "answer": [aliases, ...]}` (the test split adds
prediction columns, which we ignore: only the original annotations are gold). A question
becomes `factual` when the snapshot states an alias in an article it is about, `retrieval_gap`
when it names a snapshot article whose lead lacks the answer, and is left out otherwise.
"""

from __future__ import annotations

from pathlib import Path

from wikiqa.evals.importers.answerability import Leads, open_task
from wikiqa.evals.importers.common import (
    Imported,
    benchmark_lines,
    field_of,
    provenance,
    split_of,
    strings,
    task_id,
)

DATASET = "nq-open"


def import_nq_open(path: Path, leads: Leads) -> Imported:
    split = split_of(path)
    out = Imported(DATASET)
    for lineno, record in benchmark_lines(path):
        question = field_of(path, lineno, record, "question", str).strip()
        aliases = strings(path, lineno, record, "answer")
        out.considered += 1
        if not question or len(question) > 1000:
            out.skipped["question empty or too long"] += 1
            continue
        open_task(
            leads,
            out,
            id=task_id("nq", split, f"{lineno:04d}"),
            question=question,
            aliases=aliases,
            origin=provenance(DATASET, split, lineno),
            note=f"NQ-open {split}, line {lineno}",
        )
    return out
