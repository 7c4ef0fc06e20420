"""Files a user names: bounded reads, and validation errors worded for a file:line message.

A path from the command line can be `/dev/zero`, a FIFO or a multi-gigabyte mistake; reading it
whole dies with MemoryError far from the cause. Every file the CLI is pointed at is read through
`read_bounded`, which stops one byte past the limit and says which file and which limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

RecordT = TypeVar("RecordT", bound=BaseModel)

MiB = 1024 * 1024


class TooLarge(ValueError):
    """A file is larger than the limit its reader allows."""


def read_bounded(path: Path | str, limit: int, what: str = "file") -> bytes:
    """The bytes of `path`, or TooLarge if there are more than `limit` (OSError passes through)."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"{path}: {what} is larger than {limit // MiB} MiB; refusing to read it all")
    return data


def first_problem(err: ValidationError) -> str:
    """`where: what` of a pydantic error's first problem, `(+N more)` if there are others: the
    tail of every `file:line: ...` message about a record that does not fit its schema."""
    problem = err.errors()[0]
    where = ".".join(str(p) for p in problem["loc"])
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{where + ': ' if where else ''}{problem['msg']}{more}"


def read_jsonl(path: Path | str, record: type[RecordT], what: str, limit: int) -> list[RecordT]:
    """One `record` per non-blank JSON line of a user's file; any problem is a ValueError that
    names the file (and the line)."""
    try:
        text = read_bounded(path, limit, what).decode("utf-8")
    except (OSError, UnicodeDecodeError, TooLarge) as err:
        raise ValueError(f"{path}: cannot read {what}: {err}") from err
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(record.model_validate_json(line))
            except ValidationError as err:
                raise ValueError(f"{path}:{lineno}: {first_problem(err)}") from err
    return records
