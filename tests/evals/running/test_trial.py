"""The trial function: one picklable callable runs a trial wherever it is called, the same code
under both executors. Shipped to another process (specs only: it opens its own model and source),
it gives the record and the cassette entries it gives here."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from wikiqa.evals import RunConfig
from wikiqa.evals.running.execution import lost_trial
from wikiqa.evals.running.executors import LocalExecutor
from wikiqa.evals.running.served import open_run_model
from wikiqa.evals.running.trial import Finished, Trial
from wikiqa.evals.tasks.task import Task, parse_tasks, read_suite, resolve_suite
from wikiqa.registry import open_source


def dev_tasks(n: int) -> list[Task]:
    path = resolve_suite("dev", False)
    return parse_tasks(read_suite(path), path)[:n]


def same(a: Finished, b: Finished) -> None:
    """The same trial: its answer, decision, attempts and calls, and what its source answered
    (latencies differ by design)."""
    assert a.record.result.output == b.record.result.output
    assert (a.record.task_id, a.record.trial, a.record.decision, a.record.attempts) == (
        b.record.task_id, b.record.trial, b.record.decision, b.record.attempts,
    )  # fmt: skip
    assert (a.model_calls, a.cached_calls) == (b.model_calls, b.cached_calls)
    assert a.cassette == b.cassette and a.cassette


def local_trial(tmp_path: Path) -> Trial:
    config = RunConfig(trials=1, cache=False, out=tmp_path)
    return Trial(config, model=open_run_model(config.model), source=open_source(config.source))


def test_a_shipped_trial_function_pickles_and_gives_the_same_record(tmp_path: Path) -> None:
    here = local_trial(tmp_path)
    shipped = here.shipped(None)
    assert shipped.model is None and shipped.source is None  # specs only: opened where called
    copy = pickle.loads(pickle.dumps(shipped))
    for task in dev_tasks(3):
        same(here(task, 0), copy(task, 0))


@pytest.mark.slow
def test_a_trial_function_runs_in_a_fresh_process_to_the_same_record(tmp_path: Path) -> None:
    here = local_trial(tmp_path)
    task = dev_tasks(1)[0]
    (tmp_path / "trial.pickle").write_bytes(pickle.dumps((here.shipped(None), task)))
    code = (
        "import pickle, sys; fn, task = pickle.loads(open(sys.argv[1], 'rb').read()); "
        "sys.stdout.buffer.write(pickle.dumps(fn(task, 0)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "trial.pickle")],
        capture_output=True, check=True, env=os.environ.copy(),
    )  # fmt: skip
    same(here(task, 0), pickle.loads(done.stdout))


def test_the_local_executor_maps_the_trial_function_over_the_pairs(tmp_path: Path) -> None:
    trial = local_trial(tmp_path)
    todo = [(task, t) for task in dev_tasks(2) for t in range(2)]
    done = list(LocalExecutor().map(trial, todo))
    assert sorted((d.record.task_id, d.record.trial) for d in done) == sorted(
        (task.id, t) for task, t in todo
    )
    assert all(isinstance(d, Finished) and d.record.node is None for d in done)


def test_a_lost_worker_is_an_infrastructure_error_that_cost_nothing() -> None:
    lost = lost_trial(dev_tasks(1)[0], 1, "node died")
    assert lost.record.failed and (lost.model_calls, lost.cached_calls, lost.cassette) == (0, 0, [])
