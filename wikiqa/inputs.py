"""Files a user names: bounded reads, and validation errors worded for a file:line message.

A path from the command line can be `/dev/zero`, a FIFO or a multi-gigabyte mistake; reading it
whole dies with MemoryError far from the cause, and opening a FIFO nobody writes to waits
forever. Every file the CLI and the benches are pointed at is read through `read_bounded`, which
opens without blocking, refuses anything but a regular file (the process's own standard input
excepted, so `--suite /dev/stdin` still reads a pipe), stops one byte past the limit and says
which file and which limit.

What is read is bounded too: a gzip file is inflated only up to a cap (`inflate`: a megabyte can
inflate to gigabytes), JSON is refused past `MAX_DEPTH` levels of nesting (`loads`: `[` a hundred
thousand times is a RecursionError in `json.loads`, and deep data breaks every recursive consumer
after it), and a file of lines is read a line at a time, each line capped (`read_lines`: a
sparse file of one endless line costs the cap, not its size). Parquet files are `parquets`'.
Every refusal is an `InputError` (or the caller's subclass) whose message names the file.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

RecordT = TypeVar("RecordT", bound=BaseModel)

MiB = 1024 * 1024
MAX_DEPTH = 64  # levels of JSON nesting: every file here nests a handful; 64 is far above any
GZIP_MAGIC = b"\x1f\x8b"


class InputError(ValueError):
    """A user's file cannot be read or parsed; the message names the file (and the line)."""


class TooLarge(InputError):
    """A file is larger than the limit its reader allows."""


class NotRegular(TooLarge):
    """A FIFO, device, socket or directory: its size cannot be known before reading it, so it is
    refused like a file over the limit (and every `except TooLarge` already reports it)."""


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK:
          "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}  # fmt: skip


def _is_stdin(info: os.stat_result) -> bool:
    try:
        return os.path.samestat(info, os.fstat(0))
    except OSError:
        return False


def open_regular(path: Path | str, what: str = "file") -> int:
    """A blocking read descriptor on `path`, or NotRegular. Opened with O_NONBLOCK, so a FIFO
    with no writer cannot hang the open; the flag is cleared once the file is known to be
    regular (or our own stdin, which the user chose to pipe)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) and not _is_stdin(info):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise NotRegular(f"{path}: {what} is {kind}, not a regular file; refusing to read it")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(path: Path | str, limit: int, what: str = "file") -> bytes:
    """The bytes of `path`, or TooLarge if there are more than `limit` (from the file's size, when
    it has one, before reading a byte), NotRegular if it is not a regular file (OSError passes
    through)."""
    with os.fdopen(open_regular(path, what), "rb") as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:  # known too large: read nothing
            raise TooLarge(
                f"{path}: {what} is larger than {limit // MiB} MiB; refusing to read it all"
            )
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"{path}: {what} is larger than {limit // MiB} MiB; refusing to read it all")
    return data


def open_append(path: Path | str) -> int:
    """A descriptor appending to `path` (created if missing), never through a symbolic link: a
    results folder handed over may hold `journal.jsonl -> ~/.bashrc`, and appending to it would
    write there. A link is an OSError saying so, naming the file."""
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                       0o644)  # fmt: skip
    except OSError as err:
        if err.errno != errno.ELOOP:
            raise
        raise OSError(
            err.errno, "a symbolic link; refusing to write through it", str(path)
        ) from None


def read_text_bounded(path: Path | str, limit: int, what: str = "file") -> str:
    """`read_bounded` as UTF-8 text; any problem is a ValueError naming the file."""
    try:
        return read_bounded(path, limit, what).decode("utf-8")
    except TooLarge:
        raise
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot read {what}: {err}") from err


def first_problem(err: ValidationError) -> str:
    """`where: what` of a pydantic error's first problem, `(+N more)` if there are others: the
    tail of every `file:line: ...` message about a record that does not fit its schema."""
    problem = err.errors()[0]
    where = ".".join(str(p) for p in problem["loc"])
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    message = problem["msg"].removeprefix("Value error, ")  # a validator's own words, as raised
    return f"{where + ': ' if where else ''}{message}{more}"


def read_text(path: Path | str, limit: int, what: str = "file") -> str:
    """The UTF-8 text of a user's file, bounded; every failure an InputError naming the file."""
    try:
        return read_bounded(path, limit, what).decode("utf-8")
    except TooLarge as err:
        raise InputError(str(err)) from None
    except FileNotFoundError:
        raise InputError(f"{path}: cannot read {what}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: cannot read {what}: is a directory, expected a file") from None
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: cannot read {what}: not UTF-8 (byte {err.start})") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read {what}: {err.strerror or err}") from None


def parse_jsonl(
    data: bytes | str, path: Path | str, error: type[ValueError] = InputError
) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of JSON-lines `data`: the one parser of
    every user's JSONL file. Bytes are decoded line by line, so a bad byte names its line;
    every problem is `error("file:line: ...")`."""
    raw_lines: list[bytes | str] = [
        *(data.split(b"\n") if isinstance(data, bytes) else data.split("\n"))
    ]
    objects: list[tuple[int, dict[str, Any]]] = []
    for lineno, raw in enumerate(raw_lines, start=1):
        try:
            line: str = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as err:
            raise error(f"{path}:{lineno}: not UTF-8 (byte {err.start})") from None
        if not line.strip():
            continue
        try:
            record = loads(line, f"{path}:{lineno}", error)
        except json.JSONDecodeError as err:
            raise error(f"{path}:{lineno}: invalid JSON: {err.msg} (column {err.colno})") from None
        if not isinstance(record, dict):
            kind = type(record).__name__
            raise error(f"{path}:{lineno}: expected a JSON object, got {kind}")
        objects.append((lineno, record))
    return objects


def read_objects(
    path: Path | str, limit: int, what: str = "file", error: type[ValueError] = InputError
) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a user's JSONL file, bounded."""
    try:
        data = read_text(path, limit, what)
    except InputError as err:
        raise error(str(err)) from None
    return parse_jsonl(data, path, error)


def read_jsonl(
    path: Path | str,
    record: type[RecordT],
    what: str,
    limit: int,
    error: type[ValueError] = InputError,
) -> list[RecordT]:
    """One `record` per non-blank JSON line of a user's file; any problem is `error` naming the
    file (and the line)."""
    return [
        validate(record, obj, f"{path}:{lineno}", error)
        for lineno, obj in read_objects(path, limit, what, error)
    ]


def validate(
    record: type[RecordT], obj: dict[str, Any], where: str, error: type[ValueError] = InputError
) -> RecordT:
    """`obj` as a `record`, or `error("where: field: problem")`."""
    try:
        return record.model_validate(obj)
    except ValidationError as err:
        raise error(f"{where}: {first_problem(err)}") from None


def loads(text: str | bytes, where: str, error: type[ValueError] = InputError) -> Any:
    """`json.loads`, refusing data nested deeper than `MAX_DEPTH` and numbers too long to convert
    as `error("where: ...")`; a syntax error is left to the caller as `json.JSONDecodeError`
    (each file words it its own way: a cut last line, a line and column)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise error(f"{where}: JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise error(f"{where}: invalid JSON: {err}") from None
    opening = (
        text.count("[") + text.count("{")
        if isinstance(text, str)
        else (text.count(b"[") + text.count(b"{"))
    )
    if opening > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):  # few brackets: cannot be deep
        raise error(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether any container in `value` sits more than `limit` levels down (without recursion:
    the point is data too deep to recurse into)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def inflate(data: bytes, path: Path | str, limit: int, what: str = "file") -> bytes:
    """The text of every gzip member in `data`, or TooLarge once it passes `limit` bytes (checked
    as it inflates, so a bomb costs `limit`, not what it would inflate to). A last member cut
    short (a writer killed mid-file, or one still open and sync-flushed) yields what it holds;
    corrupt data is an InputError naming the file and the line it stopped at."""
    return b"".join(inflate_chunks([data], path, limit, what))


def inflate_chunks(
    chunks: Iterable[bytes], path: Path | str, limit: int, what: str = "file"
) -> Iterator[bytes]:
    """`inflate` as a stream: gzip data arriving in `chunks`, inflated a megabyte at a time, so
    neither the compressed file nor what it inflates to is ever held whole."""
    total = lines = 0
    member = zlib.decompressobj(wbits=31)
    for chunk in chunks:
        pending = chunk
        while pending:
            if member.eof:  # the next member of a multi-member file
                member = zlib.decompressobj(wbits=31)
            try:
                out = member.decompress(pending, MiB)
                while not member.eof and not member.unconsumed_tail and len(out) == MiB:
                    total, lines = _counted(out, total, lines, path, limit, what)
                    yield out  # output still held inside zlib: drain it before more input
                    out = member.decompress(b"", MiB)
            except zlib.error as err:
                raise InputError(f"{path}: corrupt gzip data after line {lines}: {err}") from None
            total, lines = _counted(out, total, lines, path, limit, what)
            yield out
            pending = member.unused_data if member.eof else member.unconsumed_tail


def _counted(
    out: bytes, total: int, lines: int, path: Path | str, limit: int, what: str
) -> tuple[int, int]:
    total += len(out)
    if total > limit:
        raise TooLarge(f"{path}: {what} inflates to more than {limit // MiB} MiB; refusing it")
    return total, lines + out.count(b"\n")


def read_chunks(path: Path | str, limit: int, what: str = "file") -> Iterator[bytes]:
    """The bytes of `path` a megabyte at a time, as `read_bounded` reads them whole: TooLarge
    past `limit` (before reading a byte, when the size is known), NotRegular for anything but a
    regular file."""
    with os.fdopen(open_regular(path, what), "rb") as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise TooLarge(
                f"{path}: {what} is larger than {limit // MiB} MiB; refusing to read it all"
            )
        total = 0
        while chunk := handle.read(MiB):
            total += len(chunk)
            if total > limit:
                raise TooLarge(
                    f"{path}: {what} is larger than {limit // MiB} MiB; refusing to read it all"
                )
            yield chunk


def split_lines(
    chunks: Iterable[bytes], path: Path | str, max_line: int, what: str = "file"
) -> Iterator[tuple[bytes, bool]]:
    """Each line of the bytes arriving in `chunks`, without its newline, and whether it ended with
    one (only the last may not). A line longer than `max_line` is TooLarge naming its number:
    a file of one endless line (a sparse file, /dev/zero's bytes) costs `max_line`, not its size."""
    parts: list[bytes] = []
    held = number = 0
    for chunk in chunks:
        pieces = chunk.split(b"\n")
        for piece in pieces[:-1]:
            number += 1
            if held + len(piece) > max_line:
                raise _long_line(path, number, max_line, what)
            yield b"".join([*parts, piece]), True
            parts, held = [], 0
        parts.append(pieces[-1])
        held += len(pieces[-1])
        if held > max_line:
            raise _long_line(path, number + 1, max_line, what)
    if held:
        yield b"".join(parts), False


def _long_line(path: Path | str, number: int, max_line: int, what: str) -> TooLarge:
    return TooLarge(
        f"{path}:{number}: a {what} line longer than {max_line // MiB} MiB; refusing to read it"
    )


def read_lines(
    path: Path | str, limit: int, max_line: int, what: str = "file"
) -> Iterator[tuple[str, bool]]:
    """Each UTF-8 line of a user's file (gzip when its name ends in `.gz`, inflated as it is read)
    and whether it ended with a newline, read a megabyte at a time: the file is never held whole
    and costs at most `max_line`. Over `limit`, a line over `max_line`, bytes that are not UTF-8
    or corrupt gzip: an InputError (TooLarge) naming the file and the line."""
    chunks = read_chunks(path, limit, what)
    if str(path).endswith(".gz"):
        chunks = inflate_chunks(chunks, path, limit, what)
    for number, (line, ended) in enumerate(split_lines(chunks, path, max_line, what), 1):
        try:
            yield line.decode("utf-8"), ended
        except UnicodeDecodeError as err:
            raise InputError(f"{path}:{number}: not UTF-8 (byte {err.start})") from None
