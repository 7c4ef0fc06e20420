"""The eval harness: tasks in, graded trials out, and the numbers that say whether a change helped.

- `tasks` (+ `asserts`): the task-line schema, suites and the deterministic asserts;
- `graders/`: one module per dimension (faithfulness, correctness + completeness, attribution,
  calibration) and the injection check; `judge`: the LLM judges for what code cannot decide;
- `runner`: tasks x trials through the agent, graded; `runs` (config, metadata, records),
  `journal` (resume), `cache` (model responses), `frame` (the long results table, parquet);
- `report`: majority votes and the category x dimension table; `gate`: the CI regression gate;
  `changelog`: one row per recorded run;
- `validation`: graders against human labels; `attacks`: prompt-injection drills.
"""

from wikiqa.evals.analysis.summary import COLUMNS, Summary, render, summarize
from wikiqa.evals.graders import Grade, grade
from wikiqa.evals.graders.judge import Judge, SelfJudging
from wikiqa.evals.running.journal import Journal, journal_dir
from wikiqa.evals.running.records import (
    META_COLUMNS,
    REPO_RESULTS,
    HoldoutRefused,
    InfrastructureFailure,
    RunConfig,
    RunMeta,
    RunOutcome,
    TrialRecord,
    git_sha,
    results_dir,
    scratch_dir,
)
from wikiqa.evals.running.runner import Runner, run_eval
from wikiqa.evals.tasks.task import (
    CATEGORIES,
    DIMENSIONS,
    SUITES,
    Task,
    TaskError,
    load_tasks,
    resolve_suite,
    suite_hash,
)

__all__ = [
    "CATEGORIES",
    "COLUMNS",
    "DIMENSIONS",
    "META_COLUMNS",
    "REPO_RESULTS",
    "SUITES",
    "Grade",
    "HoldoutRefused",
    "InfrastructureFailure",
    "Journal",
    "Judge",
    "RunConfig",
    "RunMeta",
    "RunOutcome",
    "Runner",
    "SelfJudging",
    "Summary",
    "Task",
    "TaskError",
    "TrialRecord",
    "git_sha",
    "grade",
    "journal_dir",
    "load_tasks",
    "render",
    "resolve_suite",
    "results_dir",
    "run_eval",
    "scratch_dir",
    "suite_hash",
    "summarize",
]
