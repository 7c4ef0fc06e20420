"""`score`: the one grading function. A run calls it once its trials are in, a resume calls it on
every trial (the logged ones and the new), and `wikiqa regrade` calls it on a finished run.

Verdicts are never read from a file: each call grades the logged results again with this
checkout's graders. A judge's verdicts cost nothing the second time: its calls go through the
response cache (`CachingModel`), keyed by the judge's spec, its prompt and the graded text, so
regrading a run whose graders and answers did not change makes no judge call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from wikiqa.evals.graders import decision_of, error_grades, grade
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.running.records import TrialRecord
from wikiqa.evals.tasks.task import Task
from wikiqa.models import ModelUnavailable

__all__ = ["JudgeFor", "Scored", "grade", "score"]

Key = tuple[str, int]
JudgeFor = Callable[[int], Judge]  # the judge for a trial number (its own cache namespace)


class Scored:
    """Every trial of a run with this pass's grades, and what the judge was asked."""

    def __init__(self) -> None:
        self.records: dict[Key, TrialRecord] = {}
        self.judge_calls = 0


def score(
    trials: Mapping[Key, TrialRecord],
    tasks: Mapping[str, Task],
    judge: JudgeFor | None = None,
    concurrency: int = 4,
) -> Scored:
    """Grade every trial in `trials` (a run log's) against its task. A trial lost to
    infrastructure is graded `error`; a judge unreachable after its retries leaves that trial's
    grades `error` with `judge_error` set (regraded next time, never counted as the agent's).
    A trial whose task is not in `tasks` is a mistake, said at once."""
    missing = sorted({task_id for task_id, _ in trials} - set(tasks))
    if missing:
        raise ValueError(f"the run log holds trials of tasks its suite lacks: {missing[:3]}")
    scored = Scored()

    def one(key: Key) -> tuple[Key, TrialRecord, int]:
        record, task = trials[key], tasks[key[0]]
        asked = judge(record.trial) if judge is not None else None
        update: dict[str, object]
        try:
            graded = grade(task, record.result, asked)
            update = {"grades": graded.grades, "decision": graded.decision, "judge_error": None}
        except ModelUnavailable as err:  # the judge, after its retries: not the agent's doing
            cause = f"judge unavailable: {err}"
            update = {
                "grades": error_grades(task, cause),
                "decision": decision_of(record.result),
                "judge_error": cause,
            }
        return key, record.model_copy(update=update), asked.calls if asked is not None else 0

    keys = sorted(trials)
    workers = max(1, min(concurrency, len(keys))) if judge is not None else 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for key, record, calls in pool.map(one, keys):
            scored.records[key] = record
            scored.judge_calls += calls
    return scored
