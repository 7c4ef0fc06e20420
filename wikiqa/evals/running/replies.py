"""The response cache as a file that travels with the repository: `wikiqa replies export|import`.

Why: a step whose lever acts after the model's last call (abstention) or only where another
step's does not (strict support, trimming) costs minutes instead of hours because its calls are
served from the response cache, and the cache lives in `WIKIQA_HOME`, on one machine. A session
on a new machine would pay those hours again. Exported (one JSON line per entry, sorted, gzip
without a timestamp, so the same cache gives the same bytes) and committed, then imported on the
new machine, the replies are there again. Import only adds: an entry the local cache already
holds is kept as it is.

Entries are model replies keyed by a hash of the request; they are scrubbed on export like
everything else that leaves a run, so no secret reaches the file.

A replies file may be someone else's: its replies answer every call whose request they name,
with no model call made. So an imported entry is stored marked with the sha256 of the file it
came from (`cache.IMPORTED_FIELD`), and the caching model counts the calls such entries answer;
the mark is dropped again on export, so the exported bytes do not depend on where a reply was
made. The file is read only if it is a regular file, never through a symbolic link, and the
export is written to a new temporary file beside its name (created exclusively: a planted
`.partial` link is never followed) and renamed over it.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

from wikiqa.config import remember_secrets
from wikiqa.evals.running.cache import CAP_FIELD, IMPORTED_FIELD, ResponseCache
from wikiqa.inputs import (
    GZIP_MAGIC,
    InputError,
    MiB,
    TooLarge,
    inflate,
    loads,
    parse_jsonl,
    validate,
)
from wikiqa.models import ModelTurn
from wikiqa.secrets import scrub

LIMIT = 128 * MiB  # on disk and inflated: 30x today's few megabytes, and bounded


class RepliesError(ValueError):
    """A replies file is missing, not gzip, or malformed; the message names the file and line."""


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    value: str


def export_replies(cache: ResponseCache, out: Path) -> int:
    """Write the cache's entries to `out` (gzip JSON lines, sorted by key), all but the
    extractive answerer's; the count written. A symbolic link at `out` is refused."""
    remember_secrets()  # a key only a `.env` holds is scrubbed too
    entries = sorted((k, _unmarked(v)) for k, v in cache.items() if not _free(v))
    if out.is_symlink():
        raise RepliesError(f"{out}: is a symbolic link; refusing to write through it")
    out.parent.mkdir(parents=True, exist_ok=True)
    # a failed export leaves the old file whole; mkstemp creates its file exclusively
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    partial = Path(name)
    try:
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            for key, value in entries:
                line = json.dumps({"key": key, "value": scrub(value)}, ensure_ascii=False)
                gz.write((line + "\n").encode("utf-8"))
        os.chmod(partial, 0o644)  # mkstemp's 0600: the file is meant to be committed
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return len(entries)


def _unmarked(value: str) -> str:
    """A cached value without the imported mark (see the module docstring)."""
    if IMPORTED_FIELD not in value:
        return value
    try:
        data = json.loads(value)
    except ValueError:
        return value
    if not isinstance(data, dict) or IMPORTED_FIELD not in data:
        return value
    data.pop(IMPORTED_FIELD)
    return json.dumps(data, ensure_ascii=False)


def _free(value: str) -> bool:
    """A reply of the extractive answerer: deterministic and computed in milliseconds, so it
    is not worth carrying (every offline run adds thousands, which would swamp the file)."""
    try:
        model = json.loads(value).get("model")
    except (ValueError, AttributeError):
        return False
    return isinstance(model, str) and model.split(":", 1)[0] == "extractive"


def read_replies(path: Path) -> list[Entry]:
    """The entries of a replies file, every problem named with the file and line."""
    return _read(path)[0]


def _raw(path: Path) -> bytes:
    """The file's bytes: a regular file only, opened without following a symbolic link (and
    without blocking on a FIFO), bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise RepliesError(f"{path}: no such replies file") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RepliesError(f"{path}: is a symbolic link; refusing to read through it") from None
        raise RepliesError(f"{path}: cannot read the replies file ({err.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise RepliesError(f"{path}: not a regular file; refusing to read it")
    if info.st_size > LIMIT:
        os.close(fd)
        raise RepliesError(f"{path}: more than {LIMIT // MiB} MiB; refusing to read it")
    with os.fdopen(fd, "rb") as handle:
        os.set_blocking(fd, True)
        raw = handle.read(LIMIT + 1)
    if len(raw) > LIMIT:
        raise RepliesError(f"{path}: more than {LIMIT // MiB} MiB")
    return raw


def _read(path: Path) -> tuple[list[Entry], str]:
    """The entries of a replies file and the sha256 of its bytes."""
    raw = _raw(path)
    if not raw.startswith(GZIP_MAGIC):
        raise RepliesError(f"{path}: not a gzip replies file")
    try:  # inflated a megabyte at a time, stopped at the cap: a bomb costs the cap
        data = inflate(raw, path, LIMIT, "replies file")
    except (InputError, TooLarge) as err:
        raise RepliesError(str(err)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RepliesError(f"{path}: not UTF-8 ({err.reason})") from None
    entries = []
    for lineno, obj in parse_jsonl(text, path, RepliesError):
        entry = validate(Entry, obj, f"{path}:{lineno}", RepliesError)
        try:  # what the cache serves on a hit: a model turn (and the cap it was made with)
            turn = loads(entry.value, f"{path}:{lineno}: value", RepliesError)
            if not isinstance(turn, dict):
                raise ValueError("not a JSON object")
            turn.pop(CAP_FIELD, None)
            turn.pop(IMPORTED_FIELD, None)
            ModelTurn.model_validate(turn)
        except (ValueError, ValidationError) as err:
            first = str(err).splitlines()[0]
            raise RepliesError(
                f"{path}:{lineno}: value is not a cached model turn ({first})"
            ) from None
        entries.append(entry)
    return entries, hashlib.sha256(raw).hexdigest()


class Imported(NamedTuple):
    """What `import_replies` did: entries added, entries the cache already held (kept as they
    were), and the sha256 of the file the added ones are marked with."""

    added: int
    kept: int
    sha256: str


def import_replies(cache: ResponseCache, path: Path) -> Imported:
    """Add the entries of `path` the cache lacks, each marked as imported from this file (its
    sha256). The whole file is read and checked before anything is written."""
    entries, sha256 = _read(path)
    remember_secrets()  # stored values are scrubbed (`ResponseCache.put`), a `.env` key too
    added = 0
    for entry in entries:
        if cache.get(entry.key) is None:
            value = json.loads(entry.value) | {IMPORTED_FIELD: sha256}
            cache.put(entry.key, json.dumps(value, ensure_ascii=False))
            added += 1
    return Imported(added, len(entries) - added, sha256)
