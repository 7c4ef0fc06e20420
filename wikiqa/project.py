"""The project a command works in: the folder holding its suites, experiments and results.

Found the way git and pytest find theirs, so an installed (non-editable) `wikiqa` works on any
checkout and a researcher can point it at their own folder:

1. `WIKIQA_ROOT`, when set: it must name an existing directory;
2. else the nearest folder, from the working directory upward, whose `pyproject.toml` has a
   `[tool.wikiqa]` table (a `pyproject.toml` without one is passed over: it belongs to some other
   project, perhaps one nested inside this one).

A project's layout is fixed: `experiments/` (step notebooks, labels), `experiments/suite/` (the
named suites: `dev`, `public` and their held-out splits) and `results/` (the committed climb;
`WIKIQA_RESULTS` overrides where runs go). Only what reads or writes those needs a project:
`wikiqa ask` on the snapshot runs from any folder. When none is found, `ProjectNotFound` says in
one line how to name one. Files shipped inside the package (`wikiqa/data/`) are package data and
are found beside the code, never here.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

__all__ = [
    "MARKER",
    "ROOT_ENV",
    "ProjectNotFound",
    "experiments_dir",
    "project_root",
    "relative_to_root",
    "repo_results",
    "suites_dir",
]

ROOT_ENV = "WIKIQA_ROOT"
MARKER = "pyproject.toml"
MAX_MARKER_BYTES = 1 << 20  # a pyproject.toml is a few kB; a bigger one is not read whole
NOT_FOUND = (
    "no wikiqa project here: cd into a project whose pyproject.toml has a [tool.wikiqa] table, "
    f"or set {ROOT_ENV}"
)


class ProjectNotFound(Exception):
    """No project root could be found (or `WIKIQA_ROOT` names none); the message is one line."""


def project_root(start: Path | None = None) -> Path:
    """The project's folder: `WIKIQA_ROOT` if set, else the nearest folder from `start` (the
    working directory) upward whose pyproject.toml has a `[tool.wikiqa]` table."""
    named = os.environ.get(ROOT_ENV, "")
    if named:
        root = Path(named).expanduser()
        if not root.is_dir():
            raise ProjectNotFound(f"{ROOT_ENV}={named}: not a directory")
        return root.resolve()
    here = (start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _declares_project(folder / MARKER):
            return folder
    raise ProjectNotFound(NOT_FOUND)


def _declares_project(pyproject: Path) -> bool:
    """Whether `pyproject` is a regular file with a `[tool.wikiqa]` table. One that cannot be
    read as TOML stops the search with its name: it may well be the project meant."""
    if not pyproject.is_file():
        return False
    try:
        with pyproject.open("rb") as file:
            raw = file.read(MAX_MARKER_BYTES + 1)
    except OSError:
        return False
    if len(raw) > MAX_MARKER_BYTES:
        raise ProjectNotFound(f"{pyproject}: over {MAX_MARKER_BYTES >> 20} MiB, not read")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ProjectNotFound(f"{pyproject}: not valid TOML ({reason})") from None
    tool = data.get("tool")
    return isinstance(tool, dict) and isinstance(tool.get("wikiqa"), dict)


def relative_to_root(path: Path) -> Path | None:
    """`path` relative to the project root, or None when it lies outside it or there is no
    project: for showing and committing paths without any machine's absolute prefix."""
    try:
        return path.resolve().relative_to(project_root())
    except (ProjectNotFound, ValueError):
        return None


def experiments_dir() -> Path:
    """The step notebooks and the hand labels: `experiments/`."""
    return project_root() / "experiments"


def suites_dir() -> Path:
    """The named suites (`dev`, `public`, ...) and their held-out splits: `experiments/suite/`."""
    return experiments_dir() / "suite"


def repo_results() -> Path:
    """The project's own results folder, `results/`: the committed climb and the gate's
    baseline, whatever `WIKIQA_RESULTS` says about where new runs go."""
    return project_root() / "results"
