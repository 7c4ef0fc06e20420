"""`wikiqa search` and `wikiqa article`: look Wikipedia up directly, without the agent.

Useful to see what the agent's tools would see for a query or a title, from any source.
"""

from __future__ import annotations

import argparse
import json

from wikiqa.cli.common import SOURCE_HELP, CliError, positive_int, wiki_source
from wikiqa.sources import Article, SearchHit
from wikiqa.terminal import echo


def _print_hits(hits: list[SearchHit]) -> None:
    if not hits:
        echo("no results")
    for rank, hit in enumerate(hits, start=1):
        echo(f"{rank:>2}  {hit.score:>8.3f}  {hit.title}")
        echo(f"              {hit.snippet}")


def _print_article(article: Article) -> None:
    prov = article.provenance
    where = (
        f"snapshot {prov.snapshot_name} sha256:{(prov.snapshot_sha256 or '')[:12]}"
        if prov.source == "snapshot"
        else f"live {prov.host} revision {article.revision_id} fetched {prov.fetched_at}"
    )
    echo(article.title)
    echo(article.url)
    echo(f"source: {where} · depth: {article.depth}" + (" · injected" if prov.injected else ""))
    if article.is_disambiguation:
        echo("(disambiguation page)")
    echo()
    echo(article.text)
    if article.infobox:
        echo()
        for key, value in article.infobox.items():
            echo(f"  {key}: {value}")


def cmd_search(args: argparse.Namespace) -> int:
    hits = wiki_source(args.source).search(args.query, args.limit)
    if args.json:
        echo(json.dumps([h.model_dump() for h in hits], ensure_ascii=False, indent=2))
    else:
        _print_hits(hits)
    return 0


def cmd_article(args: argparse.Namespace) -> int:
    article = wiki_source(args.source).get_article(args.title, args.depth)
    if article is None:
        raise CliError(f"no article titled {args.title!r} in source {args.source!r}")
    if args.json:
        echo(article.model_dump_json(indent=2))
    else:
        _print_article(article)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = sub.add_parser("search", help="search Wikipedia")
    search.add_argument("query")
    search.add_argument("--limit", type=positive_int, default=5)
    search.add_argument("--json", action="store_true", help="print JSON")
    search.add_argument("--source", default="snapshot", help=SOURCE_HELP)
    search.set_defaults(func=cmd_search)

    article = sub.add_parser("article", help="print one article")
    article.add_argument("title")
    article.add_argument("--depth", choices=["lead", "full"], default="lead")
    article.add_argument("--json", action="store_true", help="print JSON")
    article.add_argument("--source", default="snapshot", help=SOURCE_HELP)
    article.set_defaults(func=cmd_article)
