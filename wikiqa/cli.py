"""The `wikiqa` command line.

Exit codes: 0 success, 1 not found or bad input, 2 usage error, 3 Wikipedia unavailable.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from wikiqa.config import Settings
from wikiqa.models import Article, SearchHit
from wikiqa.result import AgentResult, Answer, TraceEvent
from wikiqa.snapshot import SnapshotError
from wikiqa.source import SourceUnavailable, WikiSource, open_source

EXIT_NOT_FOUND = 1
EXIT_UNAVAILABLE = 3


class CliError(Exception):
    """A user-facing failure: printed as one line, exits with `code`."""

    def __init__(self, message: str, code: int = EXIT_NOT_FOUND) -> None:
        super().__init__(message)
        self.code = code


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _source(spec: str) -> WikiSource:
    try:
        return open_source(spec)
    except (ValueError, SnapshotError) as err:
        raise CliError(str(err)) from err


def _print_hits(hits: list[SearchHit]) -> None:
    if not hits:
        print("no results")
    for rank, hit in enumerate(hits, start=1):
        print(f"{rank:>2}  {hit.score:>8.3f}  {hit.title}")
        print(f"              {hit.snippet}")


def _print_article(article: Article) -> None:
    prov = article.provenance
    where = (
        f"snapshot {prov.snapshot_name} sha256:{(prov.snapshot_sha256 or '')[:12]}"
        if prov.source == "snapshot"
        else f"live {prov.host} revision {article.revision_id} fetched {prov.fetched_at}"
    )
    print(article.title)
    print(article.url)
    print(f"source: {where} · depth: {article.depth}" + (" · injected" if prov.injected else ""))
    if article.is_disambiguation:
        print("(disambiguation page)")
    print()
    print(article.text)
    if article.infobox:
        print()
        for key, value in article.infobox.items():
            print(f"  {key}: {value}")


def cmd_search(args: argparse.Namespace) -> int:
    hits = _source(args.source).search(args.query, args.limit)
    if args.json:
        print(json.dumps([h.model_dump() for h in hits], ensure_ascii=False, indent=2))
    else:
        _print_hits(hits)
    return 0


def cmd_article(args: argparse.Namespace) -> int:
    article = _source(args.source).get_article(args.title, args.depth)
    if article is None:
        raise CliError(f"no article titled {args.title!r} in source {args.source!r}")
    if args.json:
        print(article.model_dump_json(indent=2))
    else:
        _print_article(article)
    return 0


def cmd_snapshot_info(args: argparse.Namespace) -> int:
    from wikiqa.snapshot import SnapshotSource

    try:
        info = SnapshotSource(args.path).info()
    except SnapshotError as err:
        raise CliError(str(err)) from err
    if args.json:
        print(info.model_dump_json(indent=2))
    else:
        for key, value in info.model_dump().items():
            print(f"{key:>13}: {value}")
    return 0


def _read_titles(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except UnicodeDecodeError as err:
        raise CliError(f"{path}: not UTF-8 (byte {err.start})") from None
    titles = [line.strip() for line in text.splitlines()]
    return [t for t in titles if t and not t.startswith("#")]


def cmd_snapshot_record(args: argparse.Namespace) -> int:
    from wikiqa.recording import RecordingSource

    titles = _read_titles(args.titles)
    try:
        recorder = RecordingSource(_source(args.source), args.out)
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
        print(f"{'missing' if article is None else 'ok':>7}  {title}", file=sys.stderr)
    print(f"{args.out}: {recorder.recorded} articles recorded")
    if missing:
        raise CliError(f"{len(missing)} titles not found: {', '.join(missing)}")
    return 0


def _print_result(result: AgentResult) -> None:
    output = result.output
    if isinstance(output, Answer):
        print(output.text)
        for i, c in enumerate(output.citations, start=1):
            print(f'  [{i}] {c.title}: "{c.quote}"')
            print(f"      {c.url}")
    else:
        print(f"Refused ({output.reason_code}): {output.reason}")
    usage = result.usage
    cost = "n/a" if usage.estimated_cost_usd is None else f"${usage.estimated_cost_usd:.4f} (est.)"
    review = " · needs human review" if result.needs_human_review else ""
    print(
        f"confidence {result.confidence:.2f} · {usage.tool_calls} tool calls · "
        f"{usage.model_calls} model calls · {usage.tokens.total} tokens · cost {cost} · "
        f"{result.latency_ms:.0f} ms{review}"
    )


def cmd_ask(args: argparse.Namespace) -> int:
    from wikiqa.agent import Agent
    from wikiqa.llm import open_model

    try:
        model = open_model(args.model or Settings().model)
    except ValueError as err:
        raise CliError(str(err)) from err
    source = _source(args.source or Settings().source)

    def stream(event: TraceEvent) -> None:
        print(event.line(), file=sys.stderr, flush=True)

    agent = Agent(model, source, budget=args.budget, on_event=stream if args.verbose else None)
    result = agent.ask(args.question)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        _print_result(result)
    return EXIT_UNAVAILABLE if result.infrastructure_error else 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from wikiqa.api import create_app
    from wikiqa.llm import open_model

    settings = Settings()
    try:
        model = open_model(args.model or settings.model)
    except ValueError as err:
        raise CliError(str(err)) from err
    app = create_app(model, _source(args.source or settings.source), settings)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wikiqa", description="Wikipedia-grounded question answering and its evals."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    source_help = "snapshot (default, offline), live, live:<host>, or a snapshot file path"

    search = sub.add_parser("search", help="search Wikipedia")
    search.add_argument("query")
    search.add_argument("--limit", type=_positive_int, default=5)
    search.add_argument("--json", action="store_true", help="print JSON")
    search.add_argument("--source", default="snapshot", help=source_help)
    search.set_defaults(func=cmd_search)

    article = sub.add_parser("article", help="print one article")
    article.add_argument("title")
    article.add_argument("--depth", choices=["lead", "full"], default="lead")
    article.add_argument("--json", action="store_true", help="print JSON")
    article.add_argument("--source", default="snapshot", help=source_help)
    article.set_defaults(func=cmd_article)

    model_help = "extractive (default, offline), anthropic:<model>, openai:<model>@<url>"
    ask = sub.add_parser("ask", help="answer a question from Wikipedia, with citations")
    ask.add_argument("question")
    ask.add_argument("--model", help=model_help + " (env WIKIQA_MODEL)")
    ask.add_argument("--source", help=source_help + " (env WIKIQA_SOURCE)")
    ask.add_argument("--budget", type=_positive_int, default=8, help="tool-call budget")
    ask.add_argument("--json", action="store_true", help="print the whole result as JSON")
    ask.add_argument("-v", "--verbose", action="store_true", help="stream the trace to stderr")
    ask.set_defaults(func=cmd_ask)

    serve = sub.add_parser("serve", help="serve POST /api/ask over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_positive_int, default=8000)
    serve.add_argument("--model", help=model_help + " (env WIKIQA_MODEL)")
    serve.add_argument("--source", help=source_help + " (env WIKIQA_SOURCE)")
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    serve.set_defaults(func=cmd_serve)

    snapshot = sub.add_parser("snapshot", help="inspect or record snapshots")
    snap_sub = snapshot.add_subparsers(dest="snapshot_command", required=True, metavar="ACTION")
    info = snap_sub.add_parser("info", help="provenance, article count and content hash")
    info.add_argument("path", nargs="?", type=Path, help="snapshot file (default: the pinned one)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_snapshot_info)
    record = snap_sub.add_parser("record", help="freeze the articles a suite needs")
    record.add_argument("--titles", type=Path, required=True, help="file with one title a line")
    record.add_argument("--out", type=Path, required=True, help="snapshot file to write")
    record.add_argument("--source", default="live", help=source_help + " (default: live)")
    record.add_argument("--depth", choices=["lead", "full"], default="lead")
    record.set_defaults(func=cmd_snapshot_record)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except CliError as err:
        print(f"wikiqa: error: {err}", file=sys.stderr)
        return err.code
    except SourceUnavailable as err:
        print(f"wikiqa: error: Wikipedia unavailable: {err}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except BrokenPipeError:  # `wikiqa search ... | head`
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
