"""Data files shipped inside installed distributions (the snapshot, the local model's GGUF).

Found through package metadata, so the package itself is never imported: neither the snapshot's
package nor the local model's can be imported here (their `__init__`s need other runtimes).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

__all__ = ["package_file"]


def package_file(package: str, relative: str, version: str | None = None) -> Path:
    """A data file shipped inside an installed distribution, found through its metadata so the
    package itself is never imported (neither the snapshot's nor the local model's can be)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError as err:
        raise LookupError(f"{package} is not installed") from err
    if version is not None and dist.version != version:
        raise LookupError(f"{package} is {dist.version}, but results are pinned to {version}")
    for file in dist.files or []:
        if str(file) == relative:
            return Path(str(dist.locate_file(file)))
    raise LookupError(f"{package} {dist.version} does not ship {relative}")
