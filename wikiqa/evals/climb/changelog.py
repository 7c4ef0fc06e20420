"""The change log: one typed row per recorded run, in `changelog.jsonl` and as `CHANGELOG.md`.

`read` and `append` are the only reader and writer of the JSON lines (the holdout check reads
through `read` too); the markdown is regenerated from them, so the two never disagree. Rows carry
`kind` (baseline, prompt, retrieval, grader, model, holdout, ...): grader rows recalibrate the
instrument, so scores are not directly comparable across them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from wikiqa.evals.analysis.reduce import COLUMNS
from wikiqa.evals.analysis.stats import count_text
from wikiqa.inputs import InputError, MiB, open_append, read_jsonl
from wikiqa.secrets import scrub

HEADER = """# Change log

One row per recorded run: what changed, what kind of change it was, and the per-dimension pass
rate over the whole suite (passes/applicable after the majority vote across trials, with the 95%
Wilson interval of the rate). The last
column is the paired change in tasks passing everything against the previous row of the same
suite, with its 95% interval and McNemar's p; only a significant one is more than noise. Rows of
kind `grader` recalibrate the instrument; compare scores across them with care. Generated from
`changelog.jsonl` by `wikiqa.evals.climb.changelog`; do not edit by hand.

"""


class Delta(BaseModel):
    """Tasks passing everything against the previous comparable row: the paired difference with
    its interval and McNemar's p (`analysis.compare`'s row for `tasks`)."""

    vs: str
    vs_experiment: str
    tasks: dict[str, Any]
    note: str | None = None  # why the row compared with is not the suite's last row


class ChangelogRow(BaseModel):
    """One recorded run, as the climb reads it (older rows may lack the later fields)."""

    date: str
    run_id: str
    experiment: str
    change: str
    kind: str
    holdout: bool
    suite: str
    suite_hash: str
    model: str
    judge: str | None
    source: str
    source_hash: str | None
    prompt_hash: str
    git_sha: str
    trials: int
    parameters: str | None = None
    dimensions: dict[str, tuple[int, int]]
    tasks_pass: tuple[int, int] | None
    pass_at_1: float
    needs_judge: int
    errors: int
    parquet: str
    delta: Delta | None = None
    delta_note: str | None = None  # why there is no delta, when there is none
    cassette_hash: str | None = None  # what the source answered (runs/RUN_ID.cassette.jsonl.gz)


MAX_CHANGELOG_BYTES = 64 * MiB


def read(out: Path) -> list[ChangelogRow]:
    """Every row of `out/changelog.jsonl`, in order (none when the file is absent); a bad line,
    or a change log that is a symbolic link, is an error naming the file (and line)."""
    path = out / "changelog.jsonl"
    if path.is_symlink():  # appended to by every recorded run: never through a link
        raise InputError(f"{path}: change log is a symbolic link; refusing it")
    if not path.exists():
        return []
    return read_jsonl(path, ChangelogRow, "change log", MAX_CHANGELOG_BYTES)


def append(out: Path, row: ChangelogRow) -> None:
    """Append one row to the JSON lines and regenerate the markdown beside them."""
    out.mkdir(parents=True, exist_ok=True)
    line = scrub(row.model_dump_json()) + "\n"
    fd = open_append(out / "changelog.jsonl")  # never through a planted symbolic link
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
    render_markdown(out)


def delta_text(r: ChangelogRow) -> str:
    d = r.delta.tasks if r.delta is not None else None
    if not d:
        return f"- ({r.delta_note})" if r.delta_note else "-"
    mark = " **significant**" if d["significant"] else ""
    return (
        f"{d['diff']:+.3f} [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}] vs "
        f"{r.delta.vs_experiment if r.delta else ''}, p={d['mcnemar_p']:.2f}{mark}"
        + (f" {r.delta.note}" if r.delta and r.delta.note else "")
    )


def render_markdown(out: Path) -> Path:
    rows = read(out)
    head = ["date", "experiment", "change", "kind", "suite", "model", "trials", *COLUMNS,
            "tasks pass-all", "Δ tasks vs previous [95% CI]"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        dims = r.dimensions
        cells = [count_text(*dims[d]) if d in dims else "-" for d in COLUMNS]
        tasks_text = count_text(*r.tasks_pass) if r.tasks_pass else "-"
        fields = [r.date, r.experiment, r.change or "-", r.kind, r.suite, r.model, str(r.trials)]
        lines.append("| " + " | ".join([*fields, *cells, tasks_text, delta_text(r)]) + " |")
    path = out / "CHANGELOG.md"
    tmp = path.with_name(path.name + ".tmp")  # replaced, not written through: it may be a link
    try:
        tmp.write_text(scrub(HEADER + "\n".join(lines) + "\n"), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    return path
