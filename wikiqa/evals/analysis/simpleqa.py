"""SimpleQA's outcomes beside the five dimensions: correct, incorrect, not attempted.

Read off each answerable task's majority correctness verdict: pass is correct, fail incorrect,
n/a (the agent refused) not attempted, and what the offline tier could not decide is counted
apart as undecided rather than guessed. "Correct given attempted" divides by the decided
attempts; the F-score is the harmonic mean of it and the correct rate (Wei et al. 2024).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, Field

from wikiqa.inputs import loads

# The correctness grader's undecided reasons (their opening words), by a short name: they are
# not alike (humans call most "in passing" answers correct, few "no alias" ones; see
# `wikiqa.evals.labels.undecided`), so the outcomes count them apart.
REASONS = {
    "no alias stated": "no alias stated",
    "states an alias in passing": "alias in passing",
    "states an alias but denies nothing": "premise not denied",
    "states an alias, but not every key point": "key point missing",
    "the task has no answers aliases": "task has no aliases",
}


def reason_of(detail: object) -> str:
    """The short name of an undecided correctness grade's reason, from its detail (a dict or
    its JSON); "other" if unknown."""
    if isinstance(detail, str):
        try:
            detail = loads(detail, "detail") if detail else None
        except ValueError:  # not JSON, or too deep: a reason this cannot name
            detail = None
    text = str(detail.get("reason", "")) if isinstance(detail, Mapping) else ""
    return next((name for start, name in REASONS.items() if text.startswith(start)), "other")


class Outcomes(BaseModel):
    tasks: int
    correct: int
    incorrect: int
    not_attempted: int
    undecided: int
    undecided_reasons: dict[str, int] = Field(default_factory=dict)

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
        why = ", ".join(f"{reason} {n}" for reason, n in self.undecided_reasons.items())
        return (
            f"SimpleQA outcomes ({self.tasks} answerable tasks): correct {pct(self.correct)}, "
            f"incorrect {pct(self.incorrect)}, not attempted {pct(self.not_attempted)}, "
            f"undecided {pct(self.undecided)}{f' ({why})' if why else ''} · correct given attempted "
            f"{'n/a' if given is None else f'{given:.3f}'} · F {'n/a' if f is None else f'{f:.3f}'}"
        )


def outcomes(
    correctness_verdicts: Iterable[str], undecided_reasons: Mapping[str, int] | None = None
) -> Outcomes:
    """From the majority correctness verdict of each answerable task (errors left out), and the
    undecided ones counted by reason (most first), when known."""
    verdicts = [v for v in correctness_verdicts if v != "error"]
    reasons = sorted((undecided_reasons or {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return Outcomes(
        tasks=len(verdicts),
        correct=verdicts.count("pass"),
        incorrect=verdicts.count("fail"),
        not_attempted=verdicts.count("n/a"),
        undecided=verdicts.count("needs_judge"),
        undecided_reasons=dict(reasons),
    )
