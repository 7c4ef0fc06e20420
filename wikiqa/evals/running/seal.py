"""Who made a run log: this machine's seal, or the repository's history.

A log's chain (`runlog`) is a checksum anyone can recompute; the seal is an HMAC of each line's
chain keyed by a secret only this machine's `WIKIQA_HOME` holds, so a log edited by hand, with
its chain recomputed, no longer carries it. A clone trusts what its own history holds: the
lines of a log that HEAD holds byte for byte (`committed_lines`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import subprocess
from pathlib import Path

from wikiqa.inputs import InputError, TooLarge, inflate, read_bounded

KEY_FILE = "seal.key"
LIMIT = 1024 * 1024 * 1024


class SealError(ValueError):
    """The sealing key cannot be used as it is (the message says how to mend it)."""


def seal_key() -> bytes:
    """This machine's sealing key, `WIKIQA_HOME/seal.key`: 32 random bytes, made on first use
    readable by its owner only. A key file that is a link, not a regular file, or readable by
    others is refused: it would seal logs someone else can forge."""
    from wikiqa.config import Settings

    path = Settings().cache_dir() / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
        raise SealError(
            f"{path}: the sealing key must be a regular file readable by its owner only "
            "(chmod 600 it, or remove it to make a new one)"
        )
    key = read_bounded(path, 4096, "sealing key")
    if len(key) < 32:
        raise SealError(f"{path}: the sealing key is cut short; remove it to make a new one")
    return key


def seal(key: bytes, chain: str) -> str:
    return hmac.new(key, chain.encode(), hashlib.sha256).hexdigest()[:32]


def committed_lines(path: Path) -> int | None:
    """How many whole lines of `path` the repository's HEAD holds as they are now (HEAD's
    file must be a byte prefix of this one), or None: not in a repository, not committed, or
    changed since."""
    from wikiqa.project import project_root

    root = project_root()
    try:
        relative = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    try:
        found = subprocess.run(
            ["git", "-C", str(root), "cat-file", "blob", f"HEAD:{relative.as_posix()}"],
            capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if found.returncode != 0 or not found.stdout:
        return None
    head = found.stdout
    try:
        now = read_bounded(path, LIMIT, "run log")
    except (OSError, TooLarge):
        return None
    if not now.startswith(head):
        return None
    try:
        text = inflate(head, path, LIMIT) if path.name.endswith(".gz") else head
    except InputError:
        return None
    return text.count(b"\n")
