"""What the undecided answers probably are: a run's SimpleQA outcomes with the offline tier's
undecided answers resolved at the rates human labels give for each reason it leaves one undecided.

The offline correctness grader leaves an answer undecided rather than guess, and says why (no
gold alias stated; an alias stated only in passing; a false premise not denied; a key point
missing). Those reasons are not alike: among hand-labelled answers, humans call most "in passing"
answers correct and almost every "no alias stated" answer wrong. Reporting undecided as a lump
hides that, and a climb that turns decided-incorrect answers into undecided ones would look like
progress. `resolve` spreads each reason's undecided tasks at its human-labelled correct rate.

Two ranges are kept: the count's range from the rates' 95% Wilson intervals (every reason at its
low end, then at its high end), and the rate's 95% interval, which adds the sampling of the tasks
(the Wilson interval of the low count's rate, lower end, to the high count's, upper end). An
estimate for runs like the labelled ones: the labels are mostly the extractive answerer's answers
on public tasks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import pandas as pd
from pydantic import BaseModel

from wikiqa.agent import Answer
from wikiqa.evals.analysis.simpleqa import Outcomes, outcomes, reason_of
from wikiqa.evals.analysis.stats import wilson
from wikiqa.evals.analysis.summary import summarize
from wikiqa.evals.graders import correctness_of
from wikiqa.evals.labels.validation import LabelledExample
from wikiqa.evals.tasks.task import Task


class Rate(BaseModel):
    """Of the labelled answers the grader leaves undecided for one reason, how many a human
    called correct."""

    reason: str
    correct: int
    labelled: int

    @property
    def share(self) -> float:
        return self.correct / self.labelled

    @property
    def interval(self) -> tuple[float, float]:
        bounds = wilson(self.correct, self.labelled)
        assert bounds is not None  # a Rate always has labels
        return bounds


def human_rates(examples: Iterable[LabelledExample], tasks: dict[str, Task]) -> dict[str, Rate]:
    """Grade every labelled answer with a human correctness call, as a run's offline tier
    would, and tally the human calls of the undecided ones by reason. A labelled answer whose
    task is in none of `tasks` is an error (the wrong suite), not something to skip."""
    tally: dict[str, Counter[bool]] = {}
    for example in examples:
        verdict = example.labels.get("correctness")
        if verdict not in ("pass", "fail") or not isinstance(example.answer, Answer):
            continue
        task = tasks.get(example.task_id)
        if task is None:
            raise ValueError(f"{example.id}: task {example.task_id} is in none of the suites")
        grade = correctness_of(task, example.answer.text)
        if grade.verdict == "needs_judge":
            tally.setdefault(reason_of(grade.detail), Counter())[verdict == "pass"] += 1
    return {
        reason: Rate(reason=reason, correct=c[True], labelled=c[True] + c[False])
        for reason, c in sorted(tally.items())
    }


def run_outcomes(
    frame: pd.DataFrame, categories: Sequence[str] | None = None
) -> tuple[Outcomes, Counter[str]]:
    """A run's SimpleQA outcomes over its answerable tasks (of `categories`, if given), and
    its undecided tasks counted by the reason of their majority grade: the run report's own
    figures (`report.summarize`), on the chosen categories."""
    rows = frame[frame["category"].isin(list(categories))] if categories else frame
    found = summarize(rows).simpleqa or outcomes([])
    return found, Counter(found.undecided_reasons)


class Estimate(BaseModel):
    """Correct and incorrect tasks with the undecided spread at the human rates; `unresolved`
    counts undecided tasks whose reason no label covers (left out of both)."""

    tasks: int
    correct: float
    correct_range: tuple[float, float]
    incorrect: float
    incorrect_range: tuple[float, float]
    unresolved: int

    def interval(self, span: tuple[float, float]) -> tuple[float, float]:
        """The rate's 95% interval: the count's range widened by the sampling of the tasks."""
        low, high = wilson(span[0], self.tasks), wilson(span[1], self.tasks)
        assert low is not None and high is not None
        return low[0], high[1]

    def text(self) -> str:
        def part(value: float, span: tuple[float, float]) -> str:
            low, high = self.interval(span)
            return (
                f"{value:.1f} tasks (range {span[0]:.1f}-{span[1]:.1f} from the labelled rates' "
                f"95% intervals); {value / self.tasks:.0%} of {self.tasks} (95% interval "
                f"{low:.0%}-{high:.0%}, with the tasks' sampling)"
            )

        left = (
            f"; {self.unresolved} undecided with no labelled rate left out"
            if self.unresolved
            else ""
        )
        return (
            f"resolved at the human rates:\n  correct {part(self.correct, self.correct_range)}"
            f"\n  incorrect {part(self.incorrect, self.incorrect_range)}{left}"
        )


def resolve(decided: Outcomes, reasons: Counter[str], rates: dict[str, Rate]) -> Estimate:
    """Spread each reason's undecided tasks at its labelled correct rate (see the module)."""
    correct = [float(decided.correct)] * 3  # point, low, high
    incorrect = [float(decided.incorrect)] * 3
    unresolved = 0
    for reason, n in reasons.items():
        rate = rates.get(reason)
        if rate is None:
            unresolved += n
            continue
        low, high = rate.interval
        for i, p in enumerate((rate.share, low, high)):
            correct[i] += n * p
        for i, p in enumerate((rate.share, high, low)):
            incorrect[i] += n * (1 - p)
    return Estimate(
        tasks=decided.tasks,
        correct=round(correct[0], 2),
        correct_range=(round(correct[1], 2), round(correct[2], 2)),
        incorrect=round(incorrect[0], 2),
        incorrect_range=(round(incorrect[1], 2), round(incorrect[2], 2)),
        unresolved=unresolved,
    )
