"""What executors and the runner share: the executor's interface and the record of a trial whose
worker was lost. Apart from `executors`, so the Ray executor (imported by it, lazily) can use
them without a cycle."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from wikiqa.agent import AgentResult, Refusal
from wikiqa.evals.graders import decision_of, error_grades
from wikiqa.evals.running.records import TrialRecord
from wikiqa.evals.running.trial import Finished, Trial
from wikiqa.evals.tasks.task import Task

Todo = Sequence[tuple[Task, int]]


class ExecutorError(RuntimeError):
    """The executor cannot run trials: Ray missing, the cluster unreachable, a host failing."""


class Executor(Protocol):
    def map(self, trial: Trial, todo: Todo) -> Iterator[Finished]:
        """`trial` called once on every pair in `todo`, each result yielded as it finishes (in
        any order; a pair whose worker was lost and retried may come twice)."""
        ...


def lost_trial(task: Task, trial: int, cause: str, node: str | None = None) -> Finished:
    """A trial whose worker died past its retries: an infrastructure error (rerun on resume),
    never a grade."""
    reason = f"The trial's worker was lost: {cause}"
    result = AgentResult(
        question=task.question,
        output=Refusal(reason=reason, reason_code="model_unavailable"),
        infrastructure_error=True,
        needs_human_review=True,
        confidence=0.0,
        model="?",
        source="?",
        prompt_hash="?",
    )
    record = TrialRecord(
        task_id=task.id,
        trial=trial,
        attempts=0,
        decision=decision_of(result),
        result=result,
        grades=error_grades(task, reason),
        node=node,
    )
    return Finished(record, 0, 0, [])
