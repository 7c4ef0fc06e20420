"""Retrieval figures: did the search find the expected article, did the agent read the answer, and
at which stage did each failing answerable trial lose it.

Per trial (`trial_retrieval`, columns of the results table, read from the agent's result alone):

    expected_rank   the 1-based rank of the first expected source among the hits of the agent's
                    first search (the loop's own, with the question), None when none is there
    expected_found  an expected source among the hits of any search of the trial
    gold_read       a sentence of the text the agent read (the articles it fetched, as it saw
                    them) states a gold alias

Per run (`retrieval_figures`), over the trials of answerable tasks (factual and multi_hop tasks
with gold aliases; infrastructure errors left out): recall@1/3/5 of the expected article, the
share with the gold read, and each trial that did not end correct put down to the first stage
that lost the answer:

    not_retrieved       no search found an expected article, and nothing read states the gold
    retrieved_not_read  a search found one, but nothing the agent read states the gold
    read_not_answered   the gold was in what it read, and it refused
    answered_wrong      the gold was in what it read, and its answer was graded incorrect

A trial whose correctness the offline tier left to a judge is counted apart (`undecided`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from wikiqa.agent.result import AgentResult
from wikiqa.evals.graders.aliases import stated
from wikiqa.evals.tasks.task import Task
from wikiqa.sources import normalize_title
from wikiqa.text import sentences

__all__ = [
    "CAUSES",
    "RECALL_AT",
    "RetrievalFigures",
    "answerable",
    "retrieval_figures",
    "trial_retrieval",
]

RECALL_AT = (1, 3, 5)
CAUSES = ("not_retrieved", "retrieved_not_read", "read_not_answered", "answered_wrong")
COLUMNS = ("expected_rank", "expected_found", "gold_read")


def answerable(task: Task) -> bool:
    """A task whose answer a retriever can find: it has gold aliases and expected sources, and
    should be answered (injection tasks left out: their text is altered on purpose)."""
    return (
        task.category in ("factual", "multi_hop")
        and bool(task.answers)
        and bool(task.expected_sources)
        and not task.should_refuse
    )


def searches(result: AgentResult) -> list[list[str]]:
    """The hits of each search of a trial, in order."""
    return [
        [str(h) for h in e.detail.get("hits", [])]
        for e in result.trace
        if e.kind == "search" and isinstance(e.detail.get("hits"), list)
    ]


def gold_in(texts: Iterable[str], aliases: Sequence[str]) -> bool:
    """Does a sentence of any text state a gold alias?"""
    return any(stated(s, list(aliases)) for text in texts for s in sentences(text))


def trial_retrieval(task: Task, result: AgentResult) -> dict[str, Any]:
    """The trial's retrieval columns (see the module docstring); None for other tasks."""
    if not answerable(task):
        return dict.fromkeys(COLUMNS)
    expected = {normalize_title(t) for t in task.expected_sources}
    found = searches(result)
    first = found[0] if found else []
    rank = next((i for i, t in enumerate(first, 1) if normalize_title(t) in expected), None)
    return {
        "expected_rank": rank,
        "expected_found": any(normalize_title(t) in expected for hits in found for t in hits),
        "gold_read": gold_in((r.text for r in result.retrieved), task.answers),
    }


def cause(expected_found: bool, gold_read: bool, refused: bool) -> str:
    """The first stage that lost a trial which did not end correct."""
    if not gold_read:
        return "retrieved_not_read" if expected_found else "not_retrieved"
    return "read_not_answered" if refused else "answered_wrong"


class RetrievalFigures(BaseModel):
    """A run's retrieval figures over the trials of its answerable tasks."""

    trials: int
    recall: dict[int, int]  # k -> trials whose first search ranked an expected article <= k
    gold_read: int
    correct: int
    undecided: int
    lost: dict[str, int]  # cause -> trials

    def share(self, count: int) -> float | None:
        return round(count / self.trials, 4) if self.trials else None

    def text(self) -> str:
        n = self.trials
        recall = " · ".join(f"@{k} {self.recall[k]}/{n}" for k in sorted(self.recall))
        lost = ", ".join(f"{c.replace('_', ' ')} {v}" for c, v in self.lost.items())
        return (
            f"retrieval ({n} answerable trials): expected article in the first search {recall}"
            f" · gold in the text read {self.gold_read}/{n}\n"
            f"not correct, by the stage that lost it: {lost} · undecided {self.undecided}"
        )


def retrieval_figures(trials: Sequence[dict[str, Any]]) -> RetrievalFigures | None:
    """From one record per trial with `expected_rank`, `expected_found`, `gold_read`,
    `outcome` ('answer' or 'refusal'), `correctness` (its verdict) and `infra_error`; None when
    no trial carries retrieval columns (older runs, suites with no answerable task)."""
    rows = [
        t
        for t in trials
        if not t.get("infra_error") and isinstance(t.get("gold_read"), bool | int)
        and t.get("gold_read") == t.get("gold_read")  # NaN: a row of a task not answerable
    ]  # fmt: skip
    if not rows:
        return None
    recall = {k: 0 for k in RECALL_AT}
    lost = dict.fromkeys(CAUSES, 0)
    correct = undecided = gold = 0
    for t in rows:
        rank = t.get("expected_rank")
        for k in RECALL_AT:
            recall[k] += rank is not None and rank == rank and int(rank) <= k
        gold += bool(t["gold_read"])
        verdict = t.get("correctness")
        refused = t.get("outcome") != "answer"
        if verdict == "pass" and not refused:
            correct += 1
        elif verdict == "needs_judge" and not refused:
            undecided += 1
        else:
            lost[cause(bool(t["expected_found"]), bool(t["gold_read"]), refused)] += 1
    return RetrievalFigures(
        trials=len(rows), recall=recall, gold_read=gold, correct=correct, undecided=undecided,
        lost=lost,
    )  # fmt: skip
