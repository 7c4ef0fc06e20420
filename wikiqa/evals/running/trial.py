"""One trial of a run as a function: `Trial(config, ...)(task, t) -> Finished`.

The one piece of code that runs a trial, whatever runs it: the local executor calls it on its
threads, Ray's workers call the copy they were shipped (`shipped`). A call runs the agent once
(again on an infrastructure error), on a fresh collecting cassette recorder, and returns the
ungraded record with what it cost and what its source answered; the run's driver appends the
record to the log, the source's answers to the run's cassette, and sums the counts. A trial
function holds no state of a run: it can be pickled, and called from any thread or process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from wikiqa.agent import Agent
from wikiqa.config import Settings
from wikiqa.evals.graders import decision_of
from wikiqa.evals.running.cache import Cache, CachingModel
from wikiqa.evals.running.cassettes import replaying
from wikiqa.evals.running.records import RunConfig, TrialRecord
from wikiqa.evals.running.served import open_run_model
from wikiqa.evals.tasks.task import Task
from wikiqa.models import Model
from wikiqa.registry import open_source
from wikiqa.sources import InjectionSource, WikiSource
from wikiqa.sources.cassette import CassetteRecorder, CassetteSource

__all__ = ["Finished", "Trial"]


class Finished(NamedTuple):
    """A trial's result, as an executor hands it back to the run's driver."""

    record: TrialRecord
    model_calls: int  # calls that reached the model (cache misses)
    cached_calls: int  # calls the response cache answered
    cassette: list[dict[str, Any]]  # what the trial's source answered ([]: not recording)


# What a process opened for a shipped trial function, by its configuration (and the shipped
# cassette): one model and one source per process, shared by its threads, whatever it runs.
_lock = threading.Lock()
_opened: dict[str, tuple[Model, WikiSource]] = {}


@dataclass(frozen=True)
class Trial:
    """Runs one (task, trial) of the run `config` describes.

    `model` and `source` are the driver's open ones (the local executor, and a test's scripted
    model); None: opened from the config's specs once per process, on first call. `cache` is
    the response cache the model's calls go through (None: none). With `record_cassette`, each
    call collects what the source answered and returns it."""

    config: RunConfig
    record_cassette: bool = True
    model: Model | None = None
    source: WikiSource | None = None
    cache: Cache | None = None
    sleep: Callable[[float], None] = time.sleep
    server_threads: int | None = None  # a served model's llama.cpp threads (None: the setting)

    def shipped(self, cache: Cache | None) -> Trial:
        """This function as another process gets it: the specs, not the open model or source
        (each process opens its own), with `cache` (the driver's, reached remotely). A replayed
        cassette goes as it was read: its file is on the driver's disk only. What the run
        leaves to the settings (the output-token cap, the timeout, a server's threads) is
        filled in with this process's: another node's settings may differ, and a run's model
        is called alike wherever its trials run."""
        settings = Settings()
        config = self.config.model_copy(
            update={
                "max_tokens": self.config.max_tokens or settings.model_max_tokens,
                "timeout": self.config.timeout or settings.model_timeout,
            }
        )
        return replace(
            self, config=config, model=None, cache=cache, sleep=time.sleep,
            source=self.source if isinstance(self.source, CassetteSource) else None,
            server_threads=self.server_threads or settings.server_threads,
        )  # fmt: skip

    def opened(self) -> tuple[Model, WikiSource]:
        """The model and the source this call runs against (opened now, once per process)."""
        if self.model is not None and self.source is not None:
            return self.model, self.source
        shipped = getattr(self.source, "sha256", None)
        key = self.config.model_dump_json() + repr((shipped, self.server_threads))
        with _lock:
            if key not in _opened:
                config = self.config
                model = self.model or open_run_model(
                    config.model, config.max_tokens, config.timeout, self.server_threads
                )
                source = self.source or open_source(config.source, (config.out,))
                _opened[key] = (model, source)
            return _opened[key]

    def __call__(self, task: Task, trial: int) -> Finished:
        """One trial through the agent, retried on infrastructure errors (a replayed cassette's
        misses are final: not retried); ungraded (grading is `score`'s, once the trials are
        logged). Plants go above the recorder, so the cassette holds what the source itself
        answered and a replay plants them again."""
        model, source = self.opened()
        collector = CassetteRecorder(source) if self.record_cassette else None
        reading: WikiSource = collector or source
        if task.injection is not None:
            reading = InjectionSource(reading, task.injection.plants)
        calling = model if self.cache is None else CachingModel(model, self.cache, f"trial={trial}")
        allowed = 1 if replaying(source) else self.config.infra_attempts
        attempts = 0
        while True:
            attempts += 1
            result = Agent(calling, reading, self.config.agent).ask(task.question)
            if not result.infrastructure_error or attempts >= allowed:
                break
            self.sleep(self.config.infra_backoff * 2 ** (attempts - 1))
        if isinstance(calling, CachingModel):
            calls, hits, imported = calling.calls, calling.hits, dict(calling.imported_files)
        else:
            calls, hits, imported = result.usage.model_calls, 0, {}
        record = TrialRecord(
            imported=imported,
            task_id=task.id,
            trial=trial,
            attempts=attempts,
            decision=decision_of(result),
            result=result,
            grades=[],
        )
        return Finished(record, calls, hits, collector.take() if collector else [])
