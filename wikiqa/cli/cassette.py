"""`wikiqa cassette info|diff|merge`: read, compare and merge what runs' sources answered.

`diff RUN_A RUN_B` lists the articles both runs fetched at different revisions, with the changed
sentences, and the searches whose hits changed; `merge RUN... --out FILE` makes one frozen source
of several runs' cassettes (replay it with `--source cassette:FILE`); `info` counts a cassette's
records. Runs are named by run id (looked up under the results folder and its scratch area) or
by a cassette file's path.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

from wikiqa.cli.common import CliError
from wikiqa.config import Settings
from wikiqa.sources.cassette_files import Cassette, CassetteError, find_cassette, read_cassette
from wikiqa.terminal import echo


def _folders(out: Path | None) -> Iterator[Path]:
    """`--out`, then the results folder, found only when reached: a cassette named by its path
    needs no project."""
    if out is not None:
        yield out
    yield Settings().results_dir()


def _open(ref: str, out: Path | None) -> Cassette:
    try:
        return read_cassette(find_cassette(ref, _folders(out)))
    except CassetteError as err:
        raise CliError(str(err)) from err


def cmd_info(args: argparse.Namespace) -> int:
    c = _open(args.run, args.out)
    figures = {
        "path": str(c.path),
        "header": c.header.model_dump(mode="json", exclude_none=True),
        "articles": len(c.articles),
        "fetches": len(c.fetches),
        "searches": len(c.searches),
        "bytes": c.path.stat().st_size,
        "cassette_hash": c.sha256,
    }
    if args.json:
        echo(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            echo(f"{key:>13}  {value}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from wikiqa.sources.cassette_drift import drift, render_drift

    result = drift(_open(args.run_a, args.out), _open(args.run_b, args.out))
    echo(result.model_dump_json(indent=2) if args.json else render_drift(result))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from wikiqa.sources.cassette_merge import merge, write_merged

    cassettes = [_open(ref, args.results) for ref in args.runs]
    try:
        lines = merge(cassettes, args.prefer)
        write_merged(lines, args.out)
        merged = read_cassette(args.out)
    except CassetteError as err:
        raise CliError(str(err)) from err
    except OSError as err:  # the folder cannot be written (full, read-only, not a folder)
        raise CliError(
            f"{args.out}: cannot write the merged cassette: {err.strerror or err}"
        ) from err
    echo(
        f"{args.out}: {len(merged.articles)} articles, {len(merged.fetches)} fetches, "
        f"{len(merged.searches)} searches from {len(cassettes)} cassettes "
        f"({lines[0].get('conflicts', 0)} conflicts resolved); replay with "
        f"--source cassette:{args.out}"
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cassette = sub.add_parser("cassette", help="read, diff and merge runs' cassettes")
    actions = cassette.add_subparsers(dest="cassette_command", required=True, metavar="ACTION")
    results_help = "results directory the run ids live in (default: results/)"

    info = actions.add_parser("info", help="what a run's cassette holds, and its hash")
    info.add_argument("run", metavar="RUN", help="run id or cassette path")
    info.add_argument("--out", type=Path, help=results_help)
    info.add_argument("--json", action="store_true")
    info.set_defaults(func=cmd_info)

    diff = actions.add_parser(
        "diff", help="articles two runs saw at different revisions, searches with other hits"
    )
    diff.add_argument("run_a", metavar="RUN_A", help="run id or cassette path (the baseline)")
    diff.add_argument("run_b", metavar="RUN_B", help="run id or cassette path (the change)")
    diff.add_argument("--out", type=Path, help=results_help)
    diff.add_argument("--json", action="store_true")
    diff.set_defaults(func=cmd_diff)

    merge = actions.add_parser("merge", help="one frozen source from several runs' cassettes")
    merge.add_argument("runs", nargs="+", metavar="RUN", help="run ids or cassette paths")
    merge.add_argument("--out", type=Path, required=True, help="cassette file to write (new)")
    merge.add_argument(
        "--prefer",
        choices=["latest", "earliest"],
        help="which answer wins where the cassettes differ (default: refuse to merge)",
    )
    merge.add_argument("--results", type=Path, help=results_help)
    merge.set_defaults(func=cmd_merge)
