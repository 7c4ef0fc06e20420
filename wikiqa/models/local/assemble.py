"""Join a chunked GGUF's part files into one verified file in the cache, once.

The parts are data files of installed distributions, found through `importlib.metadata` (the
packages are never imported: their code is not ours to run). Assembly streams every part into a
temporary file beside the target, checks each part's size (and its RECORD hash, to name a corrupt
part), then the total size and sha256 pinned in `catalog`, and only then renames it into place.
A marker file beside the GGUF records the sha256 that was checked, so a later call verifies
cheaply (size plus marker) instead of re-reading a gigabyte.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from wikiqa.config import Settings
from wikiqa.models.local.catalog import KnownModel, Part

__all__ = ["AssemblyError", "assemble", "assembled_path", "locate_part", "verified"]

BLOCK = 8 << 20  # bytes read at a time


class AssemblyError(RuntimeError):
    """A part is missing or does not match, or the joined file is not the pinned model."""


Locator = Callable[[Part], tuple[Path, str | None]]


def locate_part(part: Part) -> tuple[Path, str | None]:
    """The part's file on disk and its RECORD sha256 (hex), if the RECORD gives one."""
    try:
        dist = importlib.metadata.distribution(part.package)
    except importlib.metadata.PackageNotFoundError:
        raise AssemblyError(f"{part.package}=={part.version} is not installed") from None
    if dist.version != part.version:
        raise AssemblyError(f"{part.package} is {dist.version}, but {part.version} is pinned")
    for file in dist.files or []:
        if str(file) == part.file:
            digest = None
            if file.hash is not None and file.hash.mode == "sha256":
                raw = base64.urlsafe_b64decode(file.hash.value + "=" * (-len(file.hash.value) % 4))
                digest = raw.hex()
            return Path(str(dist.locate_file(file))), digest
    raise AssemblyError(f"{part.package} {part.version} does not ship {part.file}")


def assembled_path(model: KnownModel, home: Path | None = None) -> Path:
    """Where the assembled GGUF lives: `<WIKIQA_HOME>/models/<filename>`."""
    base = home if home is not None else Settings().cache_dir()
    return base / "models" / model.filename


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def verified(model: KnownModel, home: Path | None = None) -> Path | None:
    """The assembled file if it is there with the pinned size and a marker naming the pinned
    sha256 (written only after a full check), else None. Cheap: reads no model bytes."""
    path = assembled_path(model, home)
    try:
        marker = _marker(path).read_text().strip()
        size = path.stat().st_size
    except OSError:
        return None
    return path if size == model.size and marker == model.sha256 else None


def _part_label(model: KnownModel, index: int, part: Part) -> str:
    return f"{model.name}: part {index} of {len(model.parts)} ({part.package}=={part.version})"


def assemble(
    model: KnownModel,
    home: Path | None = None,
    *,
    locate: Locator = locate_part,
    progress: bool = True,
) -> Path:
    """The model's GGUF in the cache, assembled and verified if it is not there already."""
    if model.size is None or model.sha256 is None:
        raise AssemblyError(f"{model.name} is shipped whole: nothing to assemble")
    done = verified(model, home)
    if done is not None:
        return done
    files: list[tuple[int, Part, Path, str | None]] = []
    for index, part in enumerate(model.parts, 1):
        try:
            path, digest = locate(part)
        except AssemblyError as err:
            raise AssemblyError(
                f"{_part_label(model, index, part)}: {err}; {model.install}"
            ) from err
        size = path.stat().st_size if path.is_file() else -1
        if size < 0:
            raise AssemblyError(f"{_part_label(model, index, part)}: {path} is missing")
        if part.size is not None and size != part.size:
            raise AssemblyError(
                f"{_part_label(model, index, part)}: {path} is {size} bytes, expected {part.size}"
            )
        files.append((index, part, path, digest))
    total = sum(p.stat().st_size for _, _, p, _ in files)
    if total != model.size:
        raise AssemblyError(
            f"{model.name}: the parts add up to {total} bytes, expected {model.size}"
        )
    target = assembled_path(model, home)
    target.parent.mkdir(parents=True, exist_ok=True)
    whole = hashlib.sha256()
    bad: list[str] = []
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with (
            os.fdopen(handle, "wb") as out,
            tqdm(
                total=total, unit="B", unit_scale=True, desc=f"assembling {model.name}",
                disable=not progress,
            ) as bar,
        ):  # fmt: skip
            for index, part, path, digest in files:
                own = hashlib.sha256()
                with path.open("rb") as source:
                    while block := source.read(BLOCK):
                        out.write(block)
                        whole.update(block)
                        own.update(block)
                        bar.update(len(block))
                if digest is not None and own.hexdigest() != digest:
                    bad.append(_part_label(model, index, part))
            out.flush()
            os.fsync(out.fileno())
        if whole.hexdigest() != model.sha256:
            which = (
                f"corrupt against its own RECORD: {'; '.join(bad)}"
                if bad
                else "every part matches its own RECORD, so the packages are not the pinned ones"
            )
            raise AssemblyError(
                f"{model.name}: sha256 of the joined parts is {whole.hexdigest()}, expected "
                f"{model.sha256} ({which})"
            )
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide the model from other users
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _marker(target).write_text(model.sha256 + "\n")
    return target
