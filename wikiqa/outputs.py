"""Writes that stay where they were aimed: inside the output folder, never through a symlink,
whole or not at all.

A results folder can come from someone else (a clone, a colleague's run): any file in it may be
a symlink planted to redirect a write (`journal.jsonl -> ../../Makefile`). So every writer here
refuses a symlink at the target and at every folder between the output root and the target,
opens with `O_NOFOLLOW`, and writes a whole file to a temporary name and renames it, so a full
disk or a kill leaves the old file as it was. An append writes one line in one call and, if the
write comes up short, cuts the file back to where it was.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

__all__ = [
    "RUN_ID",
    "UnsafeWrite",
    "append_line",
    "check_run_id",
    "inside",
    "write_atomic",
]

# A run id names files, so it never names a path: letters, digits, dot, dash and underscore,
# starting with a letter or digit (never `.` or `..`).
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class UnsafeWrite(OSError):
    """A write that would leave its folder or follow a symlink; the message names the path."""


def check_run_id(run_id: str) -> str:
    """`run_id` if it may name a run's files, else ValueError saying why."""
    if not RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise ValueError(
            f"{run_id!r} is not a run id: letters, digits, '.', '-' and '_' only, never a path"
        )
    return run_id


def inside(path: Path, root: Path) -> Path:
    """`path` if it lies under `root` with no symlink on the way from `root`, the last component
    included; else UnsafeWrite. Folders missing on the way are fine: the writer creates them."""
    root = root.absolute()
    target = Path(os.path.normpath(path.absolute()))
    try:
        rest = target.relative_to(Path(os.path.normpath(root)))
    except ValueError:
        raise UnsafeWrite(f"{path}: outside the output folder {root}") from None
    current = Path(os.path.normpath(root))
    for part in rest.parts:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(info.st_mode):
            raise UnsafeWrite(f"{current}: a symlink; refusing to write through it")
    return target


def write_atomic(path: Path, data: bytes, root: Path, mode: int = 0o644) -> Path:
    """Write `data` to `path` under `root` whole: a temporary file beside it, flushed, then
    renamed over it. A failure removes the temporary file and leaves `path` as it was."""
    target = inside(path, root)
    target.parent.mkdir(parents=True, exist_ok=True)
    inside(target, root)  # the folders just made are real folders, not planted links
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    os.close(fd)
    try:
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return target


def append_line(
    path: Path, line: bytes, root: Path, mode: int = 0o644, newline: bool = True
) -> None:
    """Append one line (ending in a newline, unless `newline` is False: a gzip member holding
    one) to `path` under `root`, in one write. A write that cannot complete (a full disk) cuts
    the file back to its old length and raises."""
    if newline and not line.endswith(b"\n"):
        raise ValueError("append_line writes whole lines")
    target = inside(path, root)
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(target, flags, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeWrite(f"{target}: not a regular file; refusing to append to it")
        size = os.fstat(fd).st_size
        try:
            view = memoryview(line)
            while view:  # a short write is retried: the next one says why (no space, too large)
                view = view[os.write(fd, view) :]
        except OSError as err:
            os.ftruncate(fd, size)
            raise OSError(err.errno, err.strerror, str(target)) from err
    finally:
        os.close(fd)
