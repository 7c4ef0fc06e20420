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
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from wikiqa.config import remember_secrets
from wikiqa.evals.running.cache import CAP_FIELD, ResponseCache
from wikiqa.inputs import (
    GZIP_MAGIC,
    InputError,
    MiB,
    inflate,
    loads,
    parse_jsonl,
    read_bounded,
    validate,
)
from wikiqa.models import ModelTurn
from wikiqa.secrets import scrub

LIMIT = 128 * MiB  # on disk and inflated: 30x today's few megabytes, and bounded


class RepliesError(InputError):
    """A replies file is missing, not gzip, or malformed; the message names the file and line."""


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    value: str


def export_replies(cache: ResponseCache, out: Path) -> int:
    """Write the cache's entries to `out` (gzip JSON lines, sorted by key), all but the
    extractive answerer's; the count written."""
    remember_secrets()  # a key only a `.env` holds is scrubbed too
    entries = sorted((k, v) for k, v in cache.items() if not _free(v))
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")  # a failed export leaves the old file whole
    with partial.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for key, value in entries:
            line = json.dumps({"key": key, "value": scrub(value)}, ensure_ascii=False)
            gz.write((line + "\n").encode("utf-8"))
    partial.replace(out)
    return len(entries)


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
    try:
        data = read_bounded(path, LIMIT, "replies file")
        if data[:2] != GZIP_MAGIC:
            raise RepliesError(f"{path}: not a gzip replies file")
        data = inflate(data, path, LIMIT, "replies file")
    except InputError as err:  # over a limit, not a regular file, corrupt gzip
        raise RepliesError(str(err)) from None
    except FileNotFoundError:
        raise RepliesError(f"{path}: no such replies file") from None
    except OSError as err:
        raise RepliesError(f"{path}: cannot read replies file: {err.strerror or err}") from None
    entries = []
    for lineno, obj in parse_jsonl(data, path, RepliesError):
        entry = validate(Entry, obj, f"{path}:{lineno}", RepliesError)
        try:  # what the cache serves on a hit: a model turn (and the cap it was made with)
            turn = loads(entry.value, f"{path}:{lineno}: value", RepliesError)
            if not isinstance(turn, dict):
                raise ValueError("not a JSON object")
            turn.pop(CAP_FIELD, None)
            ModelTurn.model_validate(turn)
        except RepliesError:
            raise
        except (ValueError, ValidationError) as err:
            first = str(err).splitlines()[0]
            raise RepliesError(
                f"{path}:{lineno}: value is not a cached model turn ({first})"
            ) from None
        entries.append(entry)
    return entries


def import_replies(cache: ResponseCache, path: Path) -> tuple[int, int]:
    """Add the entries of `path` the cache lacks: (added, already there). The whole file is
    read and checked before anything is written."""
    return add_replies(cache, read_replies(path))


def add_replies(cache: ResponseCache, entries: list[Entry]) -> tuple[int, int]:
    """Add the `entries` (of `read_replies`) the cache lacks: (added, already there)."""
    added = 0
    for entry in entries:
        if cache.get(entry.key) is None:
            cache.put(entry.key, entry.value)
            added += 1
    return added, len(entries) - added
