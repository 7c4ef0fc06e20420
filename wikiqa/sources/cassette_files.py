"""The cassette file: what a source answered during one run, as gzip-compressed JSON lines.

A cassette is written beside its run's parquet (`runs/RUN_ID.cassette.jsonl.gz`) by
`CassetteRecorder`, replayed by `CassetteSource` and compared or merged by `cassette_drift` and
`cassette_merge`. Lines, in the order they happened:

    {"format": "wikiqa-cassette/1", "run_id": ..., "suite_hashes": [...], ...}   the header
    {"article": {Article}, "id": "<16 hex>"}          one copy per distinct article content
    {"fetch": {"title": asked, "depth": "lead", "article": id | null}}   null: no such article
    {"search": {"query": ..., "limit": 5, "hits": [SearchHit, ...]}}

An article's `id` hashes its content (title, text, revision, url, infobox...; not the fetch
time), so one revision is stored once however often it is fetched; a fetch line names it. The id
is checked when a cassette is read: an article line whose content does not hash to its id is
refused, naming the file and line. So the ids are the content, and the cassette's hash, which is
over them, changes with any article's text: a rewritten article cannot keep its old id and pass
for the run that recorded it. The id is taken after the article is scrubbed of secrets (the
text the line holds), so a scrubbed article still matches its id. A
fetch or search line is written once per distinct answer. Compressed, because the JSON around
an article (its URL, provenance, the snippets of every search) is as large as its text: gzip,
flushed after every line, keeps a cassette below the sum of its distinct article texts, and
`zcat` still reads it (a merged cassette may also be plain `.jsonl`). The cassette's hash (`content_hash`)
is over the set of distinct records, not the file's bytes: two runs that were answered alike get
the same hash whatever order their threads wrote in.

Every malformed input is a `CassetteError` naming the file and line: a line that is not JSON, a
record of no known kind, an article whose id is not its content's hash, a fetch naming an article
the file does not hold, and a last line cut short (a run killed mid-write: resuming the run repairs it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import to_json

from wikiqa.inputs import (
    GZIP_MAGIC,
    InputError,
    MiB,
    first_problem,
    inflate,
    loads,
    read_bounded,
)
from wikiqa.outputs import check_run_id, write_atomic
from wikiqa.secrets import scrub, scrub_data
from wikiqa.sources.protocol import normalize_title
from wikiqa.sources.records import Article, Depth, SearchHit

CASSETTE_FORMAT = "wikiqa-cassette/1"
CASSETTE_SUFFIX = ".cassette.jsonl.gz"
MAX_CASSETTE_BYTES = 128 * MiB  # on disk and inflated: today's run records a few megabytes


class CassetteError(InputError):
    """A cassette is missing, malformed or of another suite (the message names file and line)."""


class Header(BaseModel):
    """The first line: which run (or runs, when merged) it recorded, and of which suite."""

    model_config = ConfigDict(extra="allow")

    format: str
    created_at: str
    run_id: str | None = None
    merged_from: list[str] = Field(default_factory=list)
    suite: str | None = None
    suite_hashes: list[str] = Field(default_factory=list)
    source: str | None = None
    source_hash: str | None = None


class Fetch(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str
    depth: Depth = "lead"
    article: str | None  # an article line's id; None: the source had no such article


class Search(BaseModel):
    model_config = ConfigDict(frozen=True)

    query: str
    limit: int
    hits: list[SearchHit]


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def article_id(article: Article) -> str:
    """The content hash of an article: one revision's text is one id, whenever it was fetched."""
    return _article_id(article.model_dump(mode="json"))


def _article_id(data: dict[str, Any]) -> str:
    provenance = {k: v for k, v in data["provenance"].items() if k != "fetched_at"}
    # `canonical`'s bytes, by pydantic-core's serializer (a fraction of the time): the same for
    # an article's data, which holds strings, integers, booleans and nulls but never a float
    # (the two spell some floats differently, so searches keep `canonical`), in dicts nested
    # one deep (provenance, infobox).
    flat = {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in data.items()}
    body = to_json(dict(sorted((flat | {"provenance": dict(sorted(provenance.items()))}).items())))
    return hashlib.sha256(body).hexdigest()[:16]


def fetch_key(fetch: Fetch) -> str:
    return f"f\t{normalize_title(fetch.title)}\t{fetch.depth}\t{fetch.article}"


def search_key(search: Search) -> str:
    return f"s\t{search.query}\t{search.limit}\t{_digest(canonical(_hits(search)))}"


def _hits(search: Search) -> list[dict[str, Any]]:
    return [h.model_dump(mode="json") for h in search.hits]


def record_key(record: dict[str, Any]) -> str:
    """The key of one record as a recorder holds it: an article line's id, or the fetch or
    search key (`Cassette.keys` names the same records so)."""
    if "article" in record:
        return str(record["id"])
    if "fetch" in record:
        return fetch_key(Fetch.model_validate(record["fetch"]))
    return search_key(Search.model_validate(record["search"]))


def content_hash(keys: Iterable[str]) -> str:
    """The cassette's hash: over the sorted set of its records' keys (article ids, fetch and
    search keys), so it names what the source answered, not the order it was written in."""
    return _digest("\n".join(sorted(set(keys))))


@dataclass
class Cassette:
    """A parsed cassette, in file order."""

    path: Path
    header: Header
    articles: dict[str, Article] = field(default_factory=dict)
    fetches: list[Fetch] = field(default_factory=list)
    searches: list[Search] = field(default_factory=list)

    def keys(self) -> list[str]:
        return [*self.articles, *map(fetch_key, self.fetches), *map(search_key, self.searches)]

    @property
    def sha256(self) -> str:
        """`content_hash` of the records (named like a snapshot's, for the run's source_hash)."""
        return content_hash(self.keys())


def header_line(header: Header) -> dict[str, Any]:
    return header.model_dump(mode="json", exclude_none=True)


def article_line(article: Article) -> dict[str, Any]:
    """An article's line: the article, scrubbed of secrets as every written line is, and the id
    of that scrubbed content (`article_id` of what a reader will parse back)."""
    return article_record(article)[0]


def article_record(article: Article) -> tuple[dict[str, Any], str]:
    """An article's line as a record and as the text to write (without its newline), serialized
    and scrubbed once: a recorder writes the text as it is."""
    data = article.model_dump(mode="json")
    text = to_json(data).decode()
    clean = scrub(text)
    if clean != text:
        try:
            data = json.loads(clean)
        except json.JSONDecodeError:  # a mask that cut through JSON syntax: value by value
            data = scrub_data(data)
        clean = json.dumps(data, ensure_ascii=False)
    ident = _article_id(data)
    return {"article": data, "id": ident}, f'{{"article":{clean},"id":"{ident}"}}'


def read_cassette(path: Path | str, *, allow_cut_tail: bool = False) -> Cassette:
    """Parse a cassette; any problem is a CassetteError naming the file and line.

    `allow_cut_tail` (the recorder resuming its own run) skips a last line cut short by a kill
    instead of refusing it; replay never does: a cassette that lost a line would miss calls.
    """
    path = Path(path)
    lines = read_lines(path)
    cassette: Cassette | None = None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        last = lineno == len(lines)  # a well-written file ends with "\n": its last item is ""
        try:
            record = loads(line, f"{path}:{lineno}", CassetteError)
        except json.JSONDecodeError as err:
            if last and allow_cut_tail:
                break
            what = "truncated line (the run was cut off mid-write)" if last else "invalid JSON"
            raise CassetteError(f"{path}:{lineno}: {what}: {err.msg}") from None
        if not isinstance(record, dict):
            raise CassetteError(f"{path}:{lineno}: expected a JSON object")
        if cassette is None:
            cassette = Cassette(path, _header(path, record))
            continue
        _add(cassette, record, f"{path}:{lineno}")
    if cassette is None:
        raise CassetteError(f"{path}:1: empty cassette (no header line)")
    return cassette


def read_lines(path: Path) -> list[str]:
    """The cassette's text split at newlines (gzip or plain), bounded before and after
    decompression; the last item is "" when the file ends with a whole line."""
    try:
        data = read_bounded(path, MAX_CASSETTE_BYTES, "cassette")
        if data[:2] == GZIP_MAGIC:
            data = inflate(data, path, MAX_CASSETTE_BYTES, "cassette")
    except InputError as err:  # over a limit, not a regular file, corrupt gzip
        raise CassetteError(str(err)) from None
    except FileNotFoundError:
        raise CassetteError(f"{path}: no such cassette file") from None
    except OSError as err:
        raise CassetteError(f"{path}: cannot read cassette: {err.strerror or err}") from None
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines, start=1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as err:
            if lineno == len(lines):
                break  # a line cut mid-character: reported as a truncated line
            raise CassetteError(f"{path}:{lineno}: not UTF-8 (byte {err.start})") from None
    return [raw.decode("utf-8", errors="replace") for raw in lines]


def _header(path: Path, record: dict[str, Any]) -> Header:
    if record.get("format") != CASSETTE_FORMAT:
        raise CassetteError(
            f'{path}:1: not a cassette (expected a first line with "format": "{CASSETTE_FORMAT}")'
        )
    try:
        return Header.model_validate(record)
    except ValidationError as err:
        raise CassetteError(f"{path}:1: {first_problem(err)}") from None


def _add(cassette: Cassette, record: dict[str, Any], where: str) -> None:
    try:
        if "article" in record and "id" in record:
            article = Article.model_validate(record["article"])
            ident = str(record["id"])
            if article_id(article) != ident:
                raise CassetteError(
                    f"{where}: article {article.title!r} does not hash to its id {ident} "
                    "(its content was changed after it was recorded); refusing the cassette"
                )
            cassette.articles[ident] = article
        elif "fetch" in record:
            fetch = Fetch.model_validate(record["fetch"])
            if fetch.article is not None and fetch.article not in cassette.articles:
                raise CassetteError(f"{where}: fetch names article {fetch.article}, not above it")
            cassette.fetches.append(fetch)
        elif "search" in record:
            cassette.searches.append(Search.model_validate(record["search"]))
        else:
            raise CassetteError(f"{where}: not a cassette record (article, fetch or search)")
    except ValidationError as err:
        raise CassetteError(f"{where}: {first_problem(err)}") from None


def cassette_of(parquet: Path) -> Path:
    """The cassette beside a run's parquet: runs/RUN_ID.parquet -> runs/RUN_ID.cassette.jsonl."""
    return parquet.with_name(parquet.name.removesuffix(".parquet") + CASSETTE_SUFFIX)


def find_cassette(ref: str, results: Iterable[Path]) -> Path:
    """A cassette by path, or by run id: under each results folder's runs/ and its scratch
    area's (as `wikiqa.experiment.find_run` looks for parquets), then where the index of
    recorded cassettes says the run wrote it (`remember_cassette`), whatever folder that was."""
    path = Path(ref)
    if path.suffix or "/" in ref:
        if not path.exists():  # a FIFO or device is found, and refused as such when read
            raise CassetteError(f"{ref}: no such cassette file")
        return path
    looked = []
    for base in results:
        for folder in (base / "runs", base / "scratch" / "runs"):
            candidate = folder / f"{ref}{CASSETTE_SUFFIX}"
            if candidate.is_file():
                return candidate
            looked.append(str(folder))
    indexed, why = _indexed(ref)
    if indexed is not None:
        return indexed
    raise CassetteError(
        f"no cassette for run {ref!r} under {', '.join(dict.fromkeys(looked))}"
        + (f" ({why})" if why else "")
    )


# The index of recorded cassettes: one small file per run under the cache directory, naming
# the absolute path its cassette was written to, so `cassette:RUN_ID` finds a run recorded with
# any --out. An entry is trusted no further than the lookup by folder: it must name a regular
# file (not a link) called RUN_ID.cassette.jsonl.gz, which is then read like any cassette.
INDEX_FOLDER = "cassettes"
MAX_INDEX_ENTRY = 4096


def _index() -> Path:
    from wikiqa.config import Settings

    return Settings().home.expanduser() / INDEX_FOLDER


def remember_cassette(run_id: str, path: Path) -> None:
    """Note in the index where run `run_id` records its cassette. Best effort: a cache folder
    that cannot be written costs only the lookup from another folder, never the run."""
    folder = _index()
    with contextlib.suppress(OSError, ValueError):
        write_atomic(folder / check_run_id(run_id), str(path.absolute()).encode(), folder)


def _indexed(run_id: str) -> tuple[Path | None, str | None]:
    """The cassette the index names for `run_id`, or (None, why not, when there is an entry)."""
    try:
        entry = _index() / check_run_id(run_id)
        if not stat.S_ISREG(os.lstat(entry).st_mode):
            return None, f"the cassette index entry {entry} is not a regular file"
        named = Path(read_bounded(entry, MAX_INDEX_ENTRY, "cassette index entry").decode())
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as err:  # unreadable, too large, not UTF-8, not a run id
        return None, f"the cassette index entry for it is unreadable: {err}"
    if not named.is_absolute() or named.name != f"{run_id}{CASSETTE_SUFFIX}":
        return None, f"the cassette index names {str(named)!r}, not a cassette of this run"
    try:
        info = os.lstat(named)
    except (OSError, ValueError):  # gone, or a name no file can have
        return None, f"it was recorded at {named}, which is gone"
    if not stat.S_ISREG(info.st_mode):
        return None, f"it was recorded at {named}, which is now not a regular file"
    return named, None
