"""SimpleQA's outcomes beside the five dimensions: correct, incorrect, not attempted.

Read off each answerable task's majority correctness verdict: pass is correct, fail incorrect,
n/a (the agent refused) not attempted, and what the offline tier could not decide is counted
apart as undecided rather than guessed. "Correct given attempted" divides by the decided
attempts; the F-score is the harmonic mean of it and the correct rate (Wei et al. 2024).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel


class Outcomes(BaseModel):
    tasks: int
    correct: int
    incorrect: int
    not_attempted: int
    undecided: int

    def rate(self, count: int) -> float | None:
        return round(count / self.tasks, 4) if self.tasks else None

    @property
    def correct_given_attempted(self) -> float | None:
        attempted = self.correct + self.incorrect
        return round(self.correct / attempted, 4) if attempted else None

    @property
    def f_score(self) -> float | None:
        correct, given = self.rate(self.correct), self.correct_given_attempted
        if not correct or not given:
            return 0.0 if correct is not None and given is not None else None
        return round(2 * correct * given / (correct + given), 4)

    def text(self) -> str:
        def pct(count: int) -> str:
            rate = self.rate(count)
            return "-" if rate is None else f"{count} ({rate:.0%})"

        given, f = self.correct_given_attempted, self.f_score
        return (
            f"SimpleQA outcomes ({self.tasks} answerable tasks): correct {pct(self.correct)}, "
            f"incorrect {pct(self.incorrect)}, not attempted {pct(self.not_attempted)}, "
            f"undecided {pct(self.undecided)} · correct given attempted "
            f"{'n/a' if given is None else f'{given:.3f}'} · F {'n/a' if f is None else f'{f:.3f}'}"
        )


def outcomes(correctness_verdicts: Iterable[str]) -> Outcomes:
    """From the majority correctness verdict of each answerable task (errors left out)."""
    verdicts = [v for v in correctness_verdicts if v != "error"]
    return Outcomes(
        tasks=len(verdicts),
        correct=verdicts.count("pass"),
        incorrect=verdicts.count("fail"),
        not_attempted=verdicts.count("n/a"),
        undecided=verdicts.count("needs_judge"),
    )
