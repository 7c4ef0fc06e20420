"""Where results are written, and which commit wrote them: the bottom of `evals/`, so the
records, the gate and the change log all find the same folders without importing each other."""

from __future__ import annotations

import subprocess
from pathlib import Path

from wikiqa.config import Settings
from wikiqa.project import ProjectNotFound, project_root


def results_dir() -> Path:
    """`WIKIQA_RESULTS` if set (tests and notebook checks write elsewhere), else the project's
    results/."""
    return Settings().results_dir()


def scratch_dir() -> Path:
    """Where exploratory runs go (git-ignored): ad hoc evals and unrecorded experiment runs stay
    out of the committed climb unless recorded on purpose."""
    return results_dir() / "scratch"


def git_sha(root: Path | None = None) -> str:
    """The commit of the project (`root`, else the project root) the run came from, `-dirty`
    when a tracked file was changed or an untracked one (not ignored) exists: a new step's
    notebook, not yet committed, is part of what the run measured. `unknown` outside a git
    checkout or a project. The climb's own record (`results/`) does not count: recording one
    run must not mark the next run of the same commit dirty."""
    if root is None:
        try:
            root = project_root()
        except ProjectNotFound:
            return "unknown"

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=normal", "--", ".", ":!results")
        return git("rev-parse", "--short", "HEAD") + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
