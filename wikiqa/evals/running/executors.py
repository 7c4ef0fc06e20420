"""Where a run's trials execute: the runner hands an executor its (task, trial) pairs and gets
finished trial records back as they complete; it alone writes the journal and the parquet.

- `local` (the default): a thread pool in this process. Ray is never imported.
- `ray`, `ray://<host>:<port>`, `ray:<address>`: trials run as Ray tasks across a cluster
  (`ray_executor`, imported only when asked for; it needs the `ray` extra).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed

from wikiqa.evals.running.execution import Executor, ExecutorError, Todo, TrialRunner
from wikiqa.evals.running.records import TrialRecord
from wikiqa.evals.running.served import stop_all

__all__ = ["Executor", "ExecutorError", "LocalExecutor", "open_executor"]


class LocalExecutor:
    """Bounded concurrency in this process: a thread pool (the agent's work is I/O and SQLite)."""

    def run(self, runner: TrialRunner, todo: Todo) -> Iterator[TrialRecord]:
        try:
            with ThreadPoolExecutor(max_workers=runner.config.concurrency) as pool:
                futures = [pool.submit(runner.run_trial, task, t) for task, t in todo]
                try:
                    for future in as_completed(futures):
                        yield future.result()
                except BaseException:  # the consumer stopped (Ctrl-C, an error): drop the rest
                    for f in futures:
                        f.cancel()
                    raise
        finally:
            stop_all()  # a local-model server this run started


def open_executor(spec: str) -> Executor:
    """The executor a spec names (RunConfig checks the spelling)."""
    if spec == "local":
        return LocalExecutor()
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ExecutorError(
            f"--executor {spec} needs Ray: install the `ray` extra (pip install -e '.[ray]')"
        ) from None
    from wikiqa.evals.running.ray_executor import RayExecutor

    return RayExecutor.from_spec(spec)
