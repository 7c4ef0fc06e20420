"""The two halves of the hand labels: one to write a judge's prompt against, one held out.

A judge prompt written while reading the labels it is then scored on measures the writer, not
the judge. So every labelled example belongs, by a fixed hash of its file and id, to `tune` or
`holdout`; the split was committed before any judge prompt was written, and the rule never
changes (a new label file splits the same way). `wikiqa validate --half holdout` reports on the
held-out half only; tune a prompt on `--half tune`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

Half = Literal["tune", "holdout"]
HALVES: tuple[Half, ...] = ("tune", "holdout")
SALT = "wikiqa-judge-split-v1"  # fixed: changing it would reshuffle what was held out


def half_of(label_file: Path | str, example_id: str) -> Half:
    """The half an example belongs to: by its file's name (not its folder) and its id."""
    key = f"{SALT}/{Path(label_file).name}/{example_id}"
    return "holdout" if hashlib.sha256(key.encode()).digest()[0] & 1 else "tune"


# The tasks of a suite split the same way, for the confidence fit: weights are fitted on the
# `fit` half's answers, and checked on human labels of the `check` half's, which the fit never
# saw (by task, so no trial of a checked question is fitted on).
TaskHalf = Literal["fit", "check"]
TASK_HALVES: tuple[TaskHalf, ...] = ("fit", "check")
TASK_SALT = "wikiqa-confidence-split-v1"  # fixed, as SALT is


def task_half(task_id: str) -> TaskHalf:
    """The half a task belongs to, by its id alone (whatever suite or run it is in)."""
    key = f"{TASK_SALT}/{task_id}"
    return "check" if hashlib.sha256(key.encode()).digest()[0] & 1 else "fit"
