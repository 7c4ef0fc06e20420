"""Merge several runs' cassettes into one frozen source, so a whole climb replays on one text.

A conflict is one thing answered two ways: an article (resolved title and depth) seen at two
revisions or texts, a title fetched to two different answers, a search (query and limit) that
returned two hit lists. A merge with conflicts is refused, naming them, unless `prefer` says
which answer wins: `latest` (the answer seen last, runs ordered by when their cassettes were
started) or `earliest`. Either way the merged cassette holds one answer per call and one version
per article, so its replay is the same for every step of the climb.
"""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from wikiqa.secrets import scrub
from wikiqa.sources.cassette_files import (
    CASSETTE_FORMAT,
    Cassette,
    CassetteError,
    Header,
    article_line,
    canonical,
    header_line,
)
from wikiqa.sources.protocol import normalize_title

Prefer = Literal["latest", "earliest"]
PREFERENCES: tuple[Prefer, ...] = ("latest", "earliest")
T = TypeVar("T")


class MergeConflict(CassetteError):
    """The cassettes answered some call differently, and no `prefer` was given."""


def _pick(seen: list[T], prefer: Prefer | None, what: str, conflicts: list[str]) -> T:
    distinct = list(dict.fromkeys(seen))
    if len(distinct) > 1:
        conflicts.append(what)
    return seen[-1] if prefer == "latest" else seen[0]


def merge(cassettes: list[Cassette], prefer: Prefer | None = None) -> list[dict[str, Any]]:
    """The merged cassette's lines (header first); MergeConflict lists what conflicts."""
    if not cassettes:
        raise CassetteError("nothing to merge: name at least one run or cassette")
    ordered = sorted(cassettes, key=lambda c: c.header.created_at)  # stable: ties keep order
    conflicts: list[str] = []
    # Articles: one version per (title, depth).
    versions: dict[tuple[str, str], list[str]] = {}
    articles: dict[str, Any] = {}
    for c in ordered:
        for ident, article in c.articles.items():
            versions.setdefault((normalize_title(article.title), article.depth), []).append(ident)
            articles.setdefault(ident, article)
    chosen: dict[str, str] = {}
    for (title, depth), idents in versions.items():
        keep = _pick(
            [_content(articles[i]) for i in idents],
            prefer,
            f"article {title!r} ({depth})",
            conflicts,
        )
        winner = next(i for i in (reversed(idents) if prefer == "latest" else idents)
                      if _content(articles[i]) == keep)  # fmt: skip
        chosen |= dict.fromkeys(idents, winner)
    # Fetches and searches: one answer per call.
    fetches: dict[tuple[str, str], tuple[list[str | None], str]] = {}
    searches: dict[tuple[str, int], list[str]] = {}
    for c in ordered:
        for f in c.fetches:
            answer = chosen[f.article] if f.article is not None else None
            fetches.setdefault((normalize_title(f.title), f.depth), ([], f.title))[0].append(answer)
        for s in c.searches:
            hits = canonical([h.model_dump(mode="json") for h in s.hits])
            searches.setdefault((s.query, s.limit), []).append(hits)
    fetch_lines = []
    for (_, depth), (answers, title) in fetches.items():
        answer = _pick(answers, prefer, f"fetch {title!r} ({depth})", conflicts)
        fetch_lines.append({"fetch": {"title": title, "depth": depth, "article": answer}})
    search_lines = []
    for (query, limit), hit_lists in searches.items():
        hits = _pick(hit_lists, prefer, f"search {query!r} (limit {limit})", conflicts)
        search_lines.append({"search": {"query": query, "limit": limit, "hits": json.loads(hits)}})
    if conflicts and prefer is None:
        shown = "; ".join(conflicts[:5]) + (
            f"; and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
        )
        raise MergeConflict(
            f"{len(conflicts)} calls were answered differently across the cassettes ({shown}); "
            "pass --prefer latest or --prefer earliest to choose"
        )
    used = set(filter(None, (line["fetch"]["article"] for line in fetch_lines)))
    header = Header(
        format=CASSETTE_FORMAT,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        merged_from=[c.header.run_id or c.path.name for c in ordered],
        suite_hashes=sorted({h for c in ordered for h in c.header.suite_hashes}),
        suite=_common([c.header.suite for c in ordered]),
        source="merged",
        prefer=prefer,
        conflicts=len(conflicts),
    )
    return [
        header_line(header),
        *(article_line(articles[i]) for i in dict.fromkeys(chosen.values()) if i in used),
        *fetch_lines,
        *search_lines,
    ]


def _content(article: Any) -> tuple[Any, str]:
    return (article.revision_id, article.text)


def _common(values: list[str | None]) -> str | None:
    distinct = set(values)
    return values[0] if len(distinct) == 1 else None


def write_merged(lines: list[dict[str, Any]], out: Path) -> Path:
    """Write the merged cassette; an existing file is never overwritten (nothing written is
    lost). Written beside the final name, then renamed: no reader sees half a file, and a failed
    write leaves no temporary file. A name
    ending in `.gz` is compressed, any other is plain JSON lines."""
    if out.exists():
        raise CassetteError(f"{out}: already exists; choose another --out (nothing was written)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    text = "".join(scrub(json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)
    data = text.encode()
    try:
        tmp.write_bytes(gzip.compress(data, mtime=0) if out.name.endswith(".gz") else data)
        os.replace(tmp, out)
    except OSError as err:  # a full disk: no half file left behind, and the error names `out`
        tmp.unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror, str(out)) from err
    return out
