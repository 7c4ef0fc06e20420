"""Local-model specs for a run: `local` (SmolLM2, shipped in the `local` extra), `local:<name>`
(a catalogued model: `local:qwen`) or `local:<gguf>` (any GGUF file) mean "start the local
model's server and use it".

The process that first calls such a model starts one llama.cpp server on its own loopback and
shares it among its threads: under the local executor that is this process; under Ray it is each
node's host actor, so there is one server per node. Wherever it runs, the model's spec is the
canonical one a default `wikiqa local-model serve` gives (`openai:<alias>@http://127.0.0.1:8080/v1`),
so the run's recorded model, and the response cache's keys, do not depend on which node served a
trial or on which port was free there.
"""

from __future__ import annotations

import atexit
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from wikiqa.evals.running.cache import output_cap
from wikiqa.models import CallOptions, Message, Model, ModelTurn, ToolSpec
from wikiqa.models import local as local_model
from wikiqa.models.local import MODELS
from wikiqa.registry import is_served as is_served  # where every spec kind is named
from wikiqa.registry import open_model

_lock = threading.Lock()
# gguf path ("" for the shipped default) -> the server started for it (process, spec, key)
_servers: dict[str, local_model.Served] = {}
# gguf path -> the lock a call to its server holds: llama.cpp's server answers one call at a
# time, so callers wait their turn here, not inside a request whose timeout is running
_turns: dict[str, threading.Lock] = {}


def join_options(spec: str, options: str) -> str:
    """An `openai:` spec with more `k=v` options after its `;`: a given one replaces the spec's
    own of that name (`local:qwen;tool_choice=auto` overrides the catalogue's `required`)."""
    if not options:
        return spec
    base, _, mine = spec.partition(";")
    merged: dict[str, str] = {}
    for item in filter(None, [*mine.split(","), *options.split(",")]):
        key, _, value = item.partition("=")
        merged.pop(key, None)
        merged[key] = value
    return f"{base};{','.join(f'{k}={v}' for k, v in merged.items())}"


def _gguf(spec: str) -> Path | None:
    """The GGUF file a spec names: a catalogued model by name (assembled on first use), or a
    path; None for the shipped default."""
    name = spec.partition(";")[0].partition(":")[2]
    if not name:
        return None
    if name in MODELS:
        return local_model.gguf_for(name, progress=False)
    return Path(name).expanduser().resolve()


def canonical_spec(spec: str) -> str:
    """The spec recorded for a served model: the default port, whatever port served it, with
    the catalogue's options and then the spec's own (`local:qwen;short_quote=1`)."""
    return join_options(_canonical(spec), spec.partition(";")[2])


def _canonical(spec: str) -> str:
    """The default server's spec for the model. A catalogued model is named by its catalogue
    alias without touching its file: the driver of a cluster run need not hold the model."""
    name = spec.partition(";")[0].partition(":")[2]
    if name in MODELS:
        return local_model.spec("127.0.0.1", local_model.PORT, MODELS[name].alias)
    gguf = None if not name else Path(name).expanduser().resolve()
    if gguf is None:
        try:  # the driver need not have the `local` extra to name the shipped model
            name = local_model.alias(local_model.default_gguf())
        except local_model.LocalModelError:
            name = local_model.ALIAS
    else:
        name = local_model.alias(gguf)
    return local_model.spec("127.0.0.1", local_model.PORT, name)


class ServedModel:
    """A local-model spec as a model: its server starts on the first call (or `start`), once per
    process and model file; calls go to that server through the ordinary `openai:` provider,
    with this spec's own options (`local:qwen;tool_choice=auto`)."""

    def __init__(
        self,
        spec: str,
        *,
        max_tokens: int | None = None,
        timeout: float | None = None,
        threads: int | None = None,
    ) -> None:
        """`max_tokens` and `timeout`: each call's (None: the settings'); `threads`: the
        server's llama.cpp threads, if this process starts it (None: the setting)."""
        if not is_served(spec):
            raise ValueError(f"{spec!r} is not a local-model spec (local or local:<gguf>)")
        self.given = spec
        self._spec = canonical_spec(spec)
        self._max_tokens, self._timeout = max_tokens, timeout
        self.threads = threads
        # a bad option (an unknown lever) is said now, not mid-run
        self._client = open_model(self._spec, max_tokens=max_tokens, timeout=timeout)
        self._model: tuple[local_model.Served, Model] | None = None  # (its server, the model)

    @property
    def spec(self) -> str:
        return self._spec

    @property
    def max_tokens(self) -> int | None:
        """The output-token cap its calls are made with, known before the
        server starts: the run records it, and the response cache checks it."""
        return output_cap(self._client)

    def start(self) -> Model:
        """This process's server for the model (started now if it is not yet running)."""
        return self._started()[0]

    def _started(self) -> tuple[Model, threading.Lock]:
        """The model on this process's server, and the lock its calls take turns by."""
        gguf = _gguf(self.given)
        key = str(gguf or "")
        with _lock:
            running = _servers.get(key)
            if running is None or running.process.poll() is not None:
                if gguf is not None and not gguf.is_file():
                    raise local_model.LocalModelError(f"{gguf}: no such model file")
                if not _servers:
                    atexit.register(stop_all)
                _servers[key] = running = local_model.start(gguf, threads=self.threads)
            if self._model is None or self._model[0] is not running:  # one client per server
                spec = join_options(running.spec, self.given.partition(";")[2])
                # the server's own key, never the user's OPENAI_API_KEY
                self._model = (
                    running,
                    open_model(
                        spec,
                        api_key=running.key,
                        max_tokens=self._max_tokens,
                        timeout=self._timeout,
                    ),
                )
            return self._model[1], _turns.setdefault(key, threading.Lock())

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        """One call, once no other thread of this process is calling the same server (the
        threads of `wikiqa serve`, a regrade's judge): each call's timeout then covers its own
        answer, never a queue inside the server."""
        model, turn = self._started()
        with turn:
            return model(system, messages, tools, options)


def stop_all() -> None:
    """Stop every server this process started (the end of a run, or of a host actor)."""
    with _lock:
        for process, _, _ in _servers.values():
            process.terminate()
        for process, _, _ in _servers.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        _servers.clear()


def open_run_model(
    spec: str,
    max_tokens: int | None = None,
    timeout: float | None = None,
    threads: int | None = None,
) -> Model:
    """A run's model from its spec: a local-model spec is served; any other goes to the
    registry. `max_tokens`, `timeout`: each call's (a run's options; None: the settings');
    `threads`: a served model's server's (None: the setting)."""
    if is_served(spec):
        return ServedModel(spec, max_tokens=max_tokens, timeout=timeout, threads=threads)
    return open_model(spec, max_tokens=max_tokens, timeout=timeout)
