"""`wikiqa snapshot info` and `wikiqa snapshot record`: inspect and freeze offline snapshots
(`info --dense` also builds the dense retrieval index, once).

Recording is how a suite's articles get pinned, so evals run offline and reproducibly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wikiqa.cli.common import EXIT_UNAVAILABLE, CliError, wiki_source
from wikiqa.inputs import MiB, TooLarge, read_bounded
from wikiqa.sources import SnapshotError, SourceUnavailable
from wikiqa.terminal import echo


def cmd_snapshot_info(args: argparse.Namespace) -> int:
    from wikiqa.sources import SnapshotSource
    from wikiqa.sources.dense import DenseError

    try:
        source = SnapshotSource(args.path)
        info = source.info()
        if args.dense:
            from wikiqa.sources.ranked import dense_index

            index = dense_index(source)
            echo(f"dense index: {index.path} ({len(index.titles)} leads)", file=sys.stderr)
    except (SnapshotError, DenseError) as err:
        raise CliError(str(err)) from err
    if args.json:
        echo(info.model_dump_json(indent=2))
    else:
        for key, value in info.model_dump().items():
            if value is not None:  # the package snapshot was never recorded from anywhere
                echo(f"{key:>13}: {value}")
    return 0


def _read_titles(path: Path) -> list[str]:
    try:
        text = read_bounded(path, 16 * MiB, "title list").decode("utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except (OSError, TooLarge) as err:
        raise CliError(f"{path}: cannot read title list: {err}") from None
    except UnicodeDecodeError as err:
        raise CliError(f"{path}: not UTF-8 (byte {err.start})") from None
    titles = [line.strip() for line in text.splitlines()]
    return [t for t in titles if t and not t.startswith("#")]


def cmd_snapshot_record(args: argparse.Namespace) -> int:
    from wikiqa.sources import RecordingSource

    titles = _read_titles(args.titles)
    try:
        recorder = RecordingSource(wiki_source(args.source), args.out)
    except SnapshotError as err:
        raise CliError(str(err)) from err
    missing = []
    for title in titles:
        if recorder.has(title, args.depth):
            continue
        try:
            article = recorder.get_article(title, args.depth)
        except SourceUnavailable as err:
            raise CliError(
                f"{err}; {recorder.recorded} articles are saved in {args.out}, "
                "rerun the same command to continue",
                EXIT_UNAVAILABLE,
            ) from err
        if article is None:
            missing.append(title)
        echo(f"{'missing' if article is None else 'ok':>7}  {title}", file=sys.stderr)
    echo(f"{args.out}: {recorder.recorded} articles recorded")
    if missing:
        raise CliError(f"{len(missing)} titles not found: {', '.join(missing)}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    snapshot = sub.add_parser("snapshot", help="inspect or record snapshots")
    snap_sub = snapshot.add_subparsers(dest="snapshot_command", required=True, metavar="ACTION")
    info = snap_sub.add_parser("info", help="provenance, article count and content hash")
    info.add_argument("path", nargs="?", type=Path, help="snapshot file (default: the pinned one)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.add_argument(
        "--dense",
        action="store_true",
        help="also open its dense index, building it first if needed (the dense extra)",
    )
    info.set_defaults(func=cmd_snapshot_info)
    record = snap_sub.add_parser("record", help="freeze the articles a suite needs")
    record.add_argument("--titles", type=Path, required=True, help="file with one title a line")
    record.add_argument("--out", type=Path, required=True, help="snapshot file to write")
    record.add_argument(
        "--source",
        default="live",
        help="where to fetch the articles: live (default), live:<host>, snapshot, or a snapshot "
        "file path",
    )
    record.add_argument("--depth", choices=["lead", "full"], default="lead")
    record.set_defaults(func=cmd_snapshot_record)
