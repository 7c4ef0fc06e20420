"""One writer at a time: a lock per run, and one per results folder for what every run shares.

`run_lock` is held while a run runs or resumes, so two resumes of one run cannot interleave their
trials in one log or one cassette. `folder_lock` is held while a change-log row is decided and
written, and around a held-out run from its run-once check to its row, so two records cannot be
paired with the same earlier row and two held-out runs cannot both pass the check. A lock held by
another process is refused at once, with a message saying which: a run waiting hours behind
another is rarely what its author meant.

Locks are `flock`s on files under `OUT/.locks/`, opened without following symlinks; the kernel
drops them when their process dies, so a killed run leaves no stale lock.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wikiqa.outputs import check_run_id, inside

__all__ = ["Busy", "folder_lock", "run_lock"]


class Busy(RuntimeError):
    """Another process holds the lock; the message says what it is doing."""


@contextmanager
def _flock(out: Path, name: str, what: str) -> Iterator[None]:
    folder = inside(out / ".locks", out)
    folder.mkdir(parents=True, exist_ok=True)
    path = inside(folder / name, out)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"{what} is in use by another process; wait for it to finish") from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def run_lock(out: Path, run_id: str) -> Iterator[None]:
    """Held while run `run_id` runs or resumes under `out`."""
    with _flock(out, f"run-{check_run_id(run_id)}.lock", f"run {run_id}"):
        yield


@contextmanager
def folder_lock(out: Path) -> Iterator[None]:
    """Held while the change log of `out` (and a held-out run's record) is decided and written."""
    with _flock(out, "results.lock", f"the results folder {out}"):
        yield
