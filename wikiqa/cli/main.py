"""The `wikiqa` parser and entry point: wires the command groups together and maps errors to exits.

Each group module registers its own subcommands; this module only fixes their order in `--help`.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence

from wikiqa.cli.ask import register as register_ask
from wikiqa.cli.cassette import register as register_cassette
from wikiqa.cli.common import EXIT_NOT_FOUND, EXIT_UNAVAILABLE, EXIT_USAGE, CliError
from wikiqa.cli.compare import register as register_compare
from wikiqa.cli.confidence import register as register_confidence
from wikiqa.cli.evals import register as register_evals
from wikiqa.cli.experiment import register as register_experiment
from wikiqa.cli.local import register as register_local
from wikiqa.cli.outcomes import register as register_outcomes
from wikiqa.cli.regrade import register as register_regrade
from wikiqa.cli.replies import register as register_replies
from wikiqa.cli.snapshot import register as register_snapshot
from wikiqa.cli.suite import register as register_suite
from wikiqa.cli.validate import register as register_validate
from wikiqa.cli.wiki import register as register_wiki
from wikiqa.inputs import InputError
from wikiqa.project import ProjectNotFound
from wikiqa.secrets import scrubbed_output
from wikiqa.sources import SourceError, SourceUnavailable
from wikiqa.terminal import echo


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wikiqa", description="Wikipedia-grounded question answering and its evals."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # The order here is the order `wikiqa --help` lists the commands in.
    register_wiki(sub)  # search, article
    register_ask(sub)  # ask, serve
    register_evals(sub)  # eval, check, convert-journal
    register_regrade(sub)  # regrade
    register_suite(sub)  # suite import, suite build
    register_validate(sub)  # validate
    register_compare(sub)  # compare, power
    register_confidence(sub)  # confidence fit, check
    register_outcomes(sub)  # outcomes
    register_experiment(sub)  # experiment run
    register_local(sub)  # local-model serve
    register_snapshot(sub)  # snapshot info, snapshot record
    register_cassette(sub)  # cassette info, diff, merge
    register_replies(sub)  # replies export, import
    _own_usage(parser)
    return parser


def _own_usage(parser: argparse.ArgumentParser) -> None:
    """Each command remembers its own parser, so an argument it does not take (`wikiqa ask ...
    --modle`) is reported with that command's usage, not the top-level one (argparse passes a
    subcommand's leftovers up to the top-level parser, which knows nothing of its options)."""
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        for child in getattr(action, "choices", {}).values():
            child.set_defaults(usage_parser=child)
            _own_usage(child)


def main(argv: Sequence[str] | None = None) -> int:
    # Everything the CLI prints or logs (results, traces, errors, uvicorn's log) is scrubbed of
    # keys on the way out: error text from a model API may quote one (wikiqa.secrets).
    with scrubbed_output():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    bad = _not_utf8(argv)
    if bad:
        _error(bad)
        return EXIT_USAGE
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "usage_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        code: int = args.func(args)
    except CliError as err:
        _error(str(err))
        return err.code
    except ProjectNotFound as err:  # a command that reads suites or results, run outside a project
        print(f"wikiqa: error: {err}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except SourceUnavailable as err:
        _error(f"Wikipedia unavailable: {err}")
        return EXIT_UNAVAILABLE
    except SourceError as err:  # a source that cannot run (dense retrieval without its extra)
        _error(str(err))
        return EXIT_NOT_FOUND
    except BrokenPipeError:  # `wikiqa search ... | head`
        return 0
    except InputError as err:  # a file handed over that cannot be read as what it should be
        _error(str(err))
        return EXIT_NOT_FOUND
    except OSError as err:  # a full disk, a folder not writable: the system's words, the file
        where = f"{err.filename}: " if err.filename else ""
        _error(f"{where}{err.strerror or err}")
        return EXIT_NOT_FOUND
    except sqlite3.Error as err:  # the response cache or the snapshot index, on a full disk
        _error(f"cannot use the cache or index database: {err}")
        return EXIT_NOT_FOUND
    return code


def _not_utf8(argv: Sequence[str]) -> str | None:
    """What is wrong with the first argument that is not UTF-8 text, or None. Python hands such
    bytes over as lone surrogates, which pass every check until they reach a file written as
    UTF-8 (a run log, a parquet) and fail there; every argument may end up in one."""
    for at, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as err:
            raw = arg.encode("utf-8", "surrogateescape")[:40]
            option = f" of {argv[at - 1]}" if at and argv[at - 1].startswith("-") else ""
            return (
                f"argument {at + 1}{option} is not UTF-8 text ({raw!r}, byte {err.start}); "
                "every argument must be"
            )
    return None


def _error(message: str) -> None:
    """The one line a failed command prints: its message on one line, escaped for the terminal
    (it may quote a file's name or contents)."""
    echo("wikiqa: error: " + " ".join(message.splitlines()), file=sys.stderr)
