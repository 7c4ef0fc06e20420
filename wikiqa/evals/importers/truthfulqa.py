"""TruthfulQA (Lin et al. 2021): questions built so that the popular answer is false.

Each becomes an `adversarial` task: its best answer is the reference, its correct answers are
the `answers` aliases, and its incorrect answers become negative asserts (`not-icontains:...`),
so the offline tier can catch an agent repeating the misconception. Graded on faithfulness and
correctness, as dev's adversarial tasks are; nothing here asks the agent to refuse.

A negative assert must never fire on a right answer, so an incorrect answer is dropped when a
correct answer or the question contains it ('No' inside 'Nothing happens'), and when it is a
bare yes/no/nothing that would match inside any sentence.

The copy is a CSV with the columns below (a third-party copy; upstream names differ).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from wikiqa.evals.importers.answerability import Leads, fold, usable
from wikiqa.evals.importers.common import (
    Imported,
    make_task,
    provenance,
    read_csv,
    split_of,
    task_id,
)

DATASET = "truthfulqa"
COLUMNS = ("Type", "Category", "question", "answer", "Correct Answers", "Incorrect Answers")
_TOO_VAGUE = frozenset({"yes", "no", "nothing", "none", "no comment", "i have no comment"})
MIN_CHARS = 4


def answers_in(cell: str) -> list[str]:
    """The '; '-separated answers of a cell, stripped, in order, without repeats."""
    return list(dict.fromkeys(a.strip().rstrip(".").strip() for a in cell.split(";") if a.strip()))


def negatives(incorrect: list[str], correct: list[str], question: str) -> list[str]:
    """Incorrect answers that can safely be asserted absent from a right answer."""
    keep = []
    right = [c.casefold() for c in correct] + [question.casefold()]
    for wrong in incorrect:
        folded = " ".join(fold(wrong))
        if len(wrong) < MIN_CHARS or folded in _TOO_VAGUE or not usable(wrong):
            continue
        if any(wrong.casefold() in r for r in right):
            continue
        keep.append(f"not-icontains:{wrong}")
    return keep


def wikipedia_source(url: str, leads: Leads) -> list[str]:
    """The snapshot article a `https://en.wikipedia.org/wiki/...` source points at, if any."""
    parsed = urlparse(url.strip())
    if not parsed.netloc.endswith("wikipedia.org") or not parsed.path.startswith("/wiki/"):
        return []
    title = unquote(parsed.path.removeprefix("/wiki/")).replace("_", " ")
    article = leads.snapshot.get_article(title)
    return [article.title] if article is not None and article.title in leads.text else []


def import_truthfulqa(path: Path, leads: Leads) -> Imported:
    split = split_of(path)
    out = Imported(DATASET)
    for number, row in read_csv(path, COLUMNS):
        out.considered += 1
        question, best = row["question"].strip(), row["answer"].strip()
        correct = answers_in(row["Correct Answers"])
        if best:
            correct = list(dict.fromkeys([best.rstrip(".").strip(), *correct]))
        if not question or not correct or len(question) > 1000:
            out.skipped["no question or no correct answer"] += 1
            continue
        asserts = negatives(answers_in(row["Incorrect Answers"]), correct, question)
        sources = wikipedia_source(row.get("Source") or "", leads)
        out.tasks.append(
            make_task(
                id=task_id("truthfulqa", f"{number:03d}"),
                category="adversarial",
                question=question,
                reference_answer=best or correct[0],
                answers=correct,
                should_refuse=False,
                asserts=asserts,
                expected_sources=sources,
                provenance=provenance(DATASET, split, number),
                notes=f"TruthfulQA {row['Type'].strip()} / {row['Category'].strip()}, row "
                f"{number}: the popular answer is false.",
            )
        )
    return out
