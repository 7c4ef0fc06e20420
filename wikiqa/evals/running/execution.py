"""What executors and the runner share: the executor's interface, the runner as an executor
sees it, and the record of a trial whose worker was lost. Apart from `executors`, so the Ray
executor (imported by it, lazily) can use them without a cycle."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from wikiqa.agent import AgentResult, Refusal
from wikiqa.evals.graders import decision_of, error_grades
from wikiqa.evals.running.cache import Cache
from wikiqa.evals.running.records import RunConfig, TrialRecord
from wikiqa.evals.tasks.task import Task

if TYPE_CHECKING:
    from wikiqa.models import Model
    from wikiqa.sources import WikiSource
    from wikiqa.sources.cassette import CassetteRecorder

Todo = Sequence[tuple[Task, int]]


class ExecutorError(RuntimeError):
    """The executor cannot run trials: Ray missing, the cluster unreachable, a host failing."""


class TrialRunner(Protocol):
    """What an executor needs of the runner (the runner itself; a Protocol, so this module
    does not import it)."""

    config: RunConfig
    model: Model
    cache: Cache | None
    source: WikiSource
    recorder: CassetteRecorder | None  # the run's cassette (None: not recording)

    def run_trial(self, task: Task, trial: int) -> TrialRecord: ...

    def tally(self, model_calls: int, cached_calls: int, judge_calls: int) -> None: ...


class Executor(Protocol):
    def run(self, runner: TrialRunner, todo: Todo) -> Iterator[TrialRecord]:
        """Every pair in `todo` run once, yielded as it finishes (in any order)."""
        ...


def lost_trial(task: Task, trial: int, cause: str, node: str | None = None) -> TrialRecord:
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
    return TrialRecord(
        task_id=task.id,
        trial=trial,
        attempts=0,
        decision=decision_of(result),
        result=result,
        grades=error_grades(task, reason),
        node=node,
    )
