"""`wikiqa replies export|import`: the response cache as a committed file (see
`wikiqa.evals.running.replies` for why). Import is always asked for by name: a replies file
answers model calls without a model, so nothing imports one on its own."""

from __future__ import annotations

import argparse
from pathlib import Path

from wikiqa.cli.common import CliError
from wikiqa.terminal import echo

NAME = "replies.jsonl.gz"  # in the results folder (WIKIQA_RESULTS, default results/)


def _file(given: Path | None) -> Path:
    from wikiqa.config import Settings

    return given if given is not None else Settings().results_dir() / NAME


def cmd_export(args: argparse.Namespace) -> int:
    from wikiqa.evals.running.cache import ResponseCache, cache_path
    from wikiqa.evals.running.replies import RepliesError, export_replies

    cache = ResponseCache(cache_path())
    try:
        count = export_replies(cache, _file(args.file))
    except RepliesError as err:
        raise CliError(str(err)) from err
    except OSError as err:  # the folder cannot be written (full, read-only, not a folder)
        raise CliError(f"{_file(args.file)}: cannot write it: {err.strerror or err}") from err
    finally:
        cache.close()
    echo(f"{_file(args.file)}: {count} replies from {cache_path()}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from wikiqa.evals.running.cache import ResponseCache, cache_path
    from wikiqa.evals.running.replies import RepliesError, import_replies, read_replies

    try:  # the whole file checked before the cache is even opened: a bad file changes nothing
        read_replies(_file(args.file))
    except RepliesError as err:
        raise CliError(str(err)) from err
    cache = ResponseCache(cache_path())
    try:
        done = import_replies(cache, _file(args.file))
    except RepliesError as err:
        raise CliError(str(err)) from err
    finally:
        cache.close()
    echo(
        f"{cache_path()}: {done.added} replies added from {_file(args.file)} (sha256 "
        f"{done.sha256}), {done.kept} already there; the added ones are marked as imported, "
        "and a run counts the calls they answer"
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replies = sub.add_parser(
        "replies", help="the response cache as a file: export it to commit, import it elsewhere"
    )
    actions = replies.add_subparsers(dest="replies_command", required=True, metavar="ACTION")
    out = actions.add_parser("export", help="write every cached reply to FILE (gzip JSON lines)")
    out.add_argument("file", nargs="?", type=Path, help=f"default: {NAME} in the results folder")
    out.set_defaults(func=cmd_export)
    into = actions.add_parser("import", help="add FILE's replies the cache lacks (never replaces)")
    into.add_argument("file", nargs="?", type=Path, help=f"default: {NAME} in the results folder")
    into.set_defaults(func=cmd_import)
