"""Running a suite: tasks x trials through the agent, graded, journaled, written as one parquet.

`runner` (the run), `records` (the plain shapes of a run: config, metadata, one trial's record),
`journal` (resume), `cache` (model responses), `frame` (the long results table).
"""

from wikiqa.evals.running.cache import CachingModel, ResponseCache
from wikiqa.evals.running.frame import to_frame, write_parquet
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

__all__ = [
    "META_COLUMNS",
    "REPO_RESULTS",
    "CachingModel",
    "HoldoutRefused",
    "InfrastructureFailure",
    "Journal",
    "ResponseCache",
    "RunConfig",
    "RunMeta",
    "RunOutcome",
    "Runner",
    "TrialRecord",
    "git_sha",
    "journal_dir",
    "results_dir",
    "run_eval",
    "scratch_dir",
    "to_frame",
    "write_parquet",
]
