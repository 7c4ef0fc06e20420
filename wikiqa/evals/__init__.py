"""The eval harness: tasks in, graded trials out, and the numbers that say whether a change helped.

One room per stage, each importing only the rooms below it (an import-linter layers contract):
- `labels` | `drills` | `importers`: human labels (grader validation, the confidence fit,
  undecided answers at human rates); prompt-injection and misinformation drills; public sets
  turned into task lines;
- `climb`: the change log and `record(outcome, policy)`, the one owner of the run record;
- `running`: tasks x trials through the agent, logged, graded, cached, written as parquet;
- `analysis`: reducers, the summary and its rendering, intervals and paired tests, SimpleQA
  outcomes, confidence, comparisons, the CI gate;
- `graders`: one function per dimension, the judges, gold-answer aliases;
- `tasks`: the task-line schema, the suites, the deterministic asserts;
- `paths`: where results go and which commit wrote them.
"""

from wikiqa.evals.analysis import COLUMNS, Summary, render, summarize
from wikiqa.evals.climb import (
    HoldoutRefused,
    InfrastructureFailure,
    NothingNew,
    Policy,
    evaluate,
    record,
)
from wikiqa.evals.graders import Grade, Judge, SelfJudging, grade
from wikiqa.evals.paths import git_sha, results_dir, scratch_dir
from wikiqa.evals.running import (
    META_COLUMNS,
    ExecutorError,
    RunConfig,
    RunLog,
    RunLogError,
    RunMeta,
    Runner,
    RunOutcome,
    TrialRecord,
    find_log,
    log_path,
    run_eval,
)
from wikiqa.evals.tasks import (
    CATEGORIES,
    DIMENSIONS,
    Task,
    TaskError,
    load_tasks,
    resolve_suite,
    suite_hash,
)
from wikiqa.project import suites_dir

__all__ = [
    "CATEGORIES",
    "COLUMNS",
    "DIMENSIONS",
    "META_COLUMNS",
    "ExecutorError",
    "Grade",
    "HoldoutRefused",
    "InfrastructureFailure",
    "Judge",
    "NothingNew",
    "Policy",
    "RunConfig",
    "RunLog",
    "RunLogError",
    "RunMeta",
    "RunOutcome",
    "Runner",
    "SelfJudging",
    "Summary",
    "Task",
    "TaskError",
    "TrialRecord",
    "evaluate",
    "find_log",
    "git_sha",
    "grade",
    "load_tasks",
    "log_path",
    "record",
    "render",
    "resolve_suite",
    "results_dir",
    "run_eval",
    "scratch_dir",
    "suite_hash",
    "suites_dir",
    "summarize",
]
