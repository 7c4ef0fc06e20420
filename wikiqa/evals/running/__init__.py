"""Running a suite: tasks x trials through the agent, logged, graded, written as one parquet.

`runner` (the run and its outcome), `trial` (one trial as a picklable function, the same code
wherever it runs), `executors` (where trials run, a map of that function: threads here, or Ray
across machines: `ray_executor` places trials, `ray_cluster` joins or starts the cluster,
`served` local-model servers), `records` (the plain shapes of a run: config, metadata, one
trial's record), `runlog` (the one record of a run), `scoring` (grading it), `locks`, `cache`
(model responses), `frame` (the long results table). It summarises what it ran (`analysis`),
and never renders or records it (`climb`).
"""

from wikiqa.evals.running.cache import CachingModel, ResponseCache
from wikiqa.evals.running.executors import ExecutorError, LocalExecutor, open_executor
from wikiqa.evals.running.frame import to_frame, write_parquet
from wikiqa.evals.running.passes import RunOutcome
from wikiqa.evals.running.records import META_COLUMNS, RunConfig, RunMeta, TrialRecord
from wikiqa.evals.running.runlog import RunLog, RunLogError, find_log, log_path
from wikiqa.evals.running.runner import Runner, run_eval

__all__ = [
    "META_COLUMNS",
    "CachingModel",
    "ExecutorError",
    "LocalExecutor",
    "ResponseCache",
    "RunConfig",
    "RunLog",
    "RunLogError",
    "RunMeta",
    "RunOutcome",
    "Runner",
    "TrialRecord",
    "find_log",
    "log_path",
    "open_executor",
    "run_eval",
    "to_frame",
    "write_parquet",
]
