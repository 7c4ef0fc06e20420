"""Merge several runs' cassettes into one frozen source, so a whole climb replays on one text.

A conflict is one thing answered two ways: an article (resolved title and depth) seen at two
revisions or texts, a title fetched to two different answers, a search (query and limit) that
returned two hit lists. A merge with conflicts is refused, naming them, unless `prefer` says
which answer wins: `latest` (the answer seen last, runs ordered by when their cassettes were
started) or `earliest`. Either way the merged cassette holds one answer per call and one version
per article, so its replay is the same for every step of the climb. A conflict names what was
answered two ways and the two cassettes that answered it, so the message says where to look.

Nothing is written before the merge is known to be whole: the conflicts are found first, the
file is written under a temporary name beside the target, read back as a cassette, and only then
linked to its name. An existing file or symbolic link at the target is never replaced or written
through.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from wikiqa.secrets import scrub
from wikiqa.sources.cassette_files import (
    CASSETTE_FORMAT,
    Cassette,
    CassetteError,
    Header,
    article_id,
    article_line,
    canonical,
    header_line,
    read_cassette,
)
from wikiqa.sources.protocol import normalize_title

Prefer = Literal["latest", "earliest"]
PREFERENCES: tuple[Prefer, ...] = ("latest", "earliest")
T = TypeVar("T")


class MergeConflict(CassetteError):
    """The cassettes answered some call differently, and no `prefer` was given."""


def _pick(seen: list[tuple[T, Path]], prefer: Prefer | None, what: str, conflicts: list[str]) -> T:
    """The answer `prefer` chooses among `seen` (answer, cassette) pairs; answered two ways, a
    conflict naming `what` and the first two cassettes that disagree."""
    first, where = seen[0]
    other = next((path for value, path in seen if value != first), None)
    if other is not None:
        conflicts.append(f"{what} differs between {where} and {other}")
    return seen[-1][0] if prefer == "latest" else first


def _checked(cassette: Cassette) -> None:
    """Every article held under the hash of its content (a cassette read from a file is checked
    as it is read; one built in memory is checked here)."""
    for ident, article in cassette.articles.items():
        if article_id(article) != ident:
            raise CassetteError(
                f"{cassette.path}: article {article.title!r} does not hash to its id {ident}; "
                "refusing to merge it (nothing was written)"
            )


def merge(cassettes: list[Cassette], prefer: Prefer | None = None) -> list[dict[str, Any]]:
    """The merged cassette's lines (header first); MergeConflict lists what conflicts."""
    if not cassettes:
        raise CassetteError("nothing to merge: name at least one run or cassette")
    for c in cassettes:
        _checked(c)
    ordered = sorted(cassettes, key=lambda c: c.header.created_at)  # stable: ties keep order
    conflicts: list[str] = []
    # Articles: one version per (title, depth).
    versions: dict[tuple[str, str], list[tuple[str, Path]]] = {}
    articles: dict[str, Any] = {}
    for c in ordered:
        for ident, article in c.articles.items():
            key = (normalize_title(article.title), article.depth)
            versions.setdefault(key, []).append((ident, c.path))
            articles.setdefault(ident, article)
    chosen: dict[str, str] = {}
    for (title, depth), seen in versions.items():
        idents = [ident for ident, _ in seen]
        keep = _pick(
            [(_content(articles[i]), path) for i, path in seen],
            prefer,
            f"article {title!r} ({depth})",
            conflicts,
        )
        winner = next(i for i in (reversed(idents) if prefer == "latest" else idents)
                      if _content(articles[i]) == keep)  # fmt: skip
        chosen |= dict.fromkeys(idents, winner)
    # Fetches and searches: one answer per call.
    fetches: dict[tuple[str, str], tuple[list[tuple[str | None, Path]], str]] = {}
    searches: dict[tuple[str, int], list[tuple[str, Path]]] = {}
    for c in ordered:
        for f in c.fetches:
            answer = chosen[f.article] if f.article is not None else None
            key = (normalize_title(f.title), f.depth)
            fetches.setdefault(key, ([], f.title))[0].append((answer, c.path))
        for s in c.searches:
            hits = canonical([h.model_dump(mode="json") for h in s.hits])
            searches.setdefault((s.query, s.limit), []).append((hits, c.path))
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
            "pass --prefer latest or --prefer earliest to choose (nothing was written)"
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
    """Write the merged cassette; an existing file (or symbolic link) is never overwritten or
    written through (nothing written is lost). Written under a temporary name beside the final
    one, read back as a cassette, then linked to its name: no reader sees half a file, and a
    merge that would not load leaves nothing behind. A name ending in `.gz` is compressed, any
    other is plain JSON lines."""
    _refuse_existing(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(scrub(json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)
    data = text.encode()
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(gzip.compress(data, mtime=0) if out.name.endswith(".gz") else data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600: a merged cassette is meant to be shared
        try:
            read_cassette(tmp)
        except CassetteError as err:
            raise CassetteError(
                f"{out}: the merged cassette does not read back ({err}); nothing was written"
            ) from None
        _place(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _refuse_existing(out: Path) -> None:
    if out.is_symlink():
        raise CassetteError(
            f"{out}: is a symbolic link; refusing to write through it (nothing was written)"
        )
    if out.exists():
        raise CassetteError(f"{out}: already exists; choose another --out (nothing was written)")


def _place(tmp: Path, out: Path) -> None:
    """Give the written file its name without replacing anything made there meanwhile: a hard
    link fails on any existing name, a link included (a rename where links are not supported)."""
    try:
        os.link(tmp, out, follow_symlinks=False)
    except FileExistsError:
        _refuse_existing(out)
        raise CassetteError(f"{out}: already exists (nothing was written)") from None
    except OSError:  # a file system without hard links
        _refuse_existing(out)
        os.replace(tmp, out)
