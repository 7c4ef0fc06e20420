"""The change log: one typed row per recorded run, in `changelog.jsonl` and as `CHANGELOG.md`.

`read` and `append` are the only reader and writer of the JSON lines (the holdout check reads
through `read` too); the markdown is regenerated from them, so the two never disagree. Rows carry
`kind` (baseline, prompt, retrieval, grader, model, holdout, ...): grader rows recalibrate the
instrument, so scores are not directly comparable across them.

Both files live in a results folder that may come from someone else's commit, and a recorded
run costs hours, so the writes are careful:

- `append` reads the log whole first (a file that does not read is refused before anything is
  added), then appends the new line with one `O_APPEND` write; if the write fails part-way (a
  full disk), the file is cut back to its old length, byte for byte. The markdown is written to
  a temporary file beside it first and renamed over `CHANGELOG.md` only once the line is in.
- Neither file is ever opened through a symbolic link (`O_NOFOLLOW`, `lstat`): a link is
  refused with a one-line error, and the link's target is untouched.
- `check` is that refusal before a run: a recording run calls it before its first trial, so a
  broken log is reported at once, not after hours of trials.
- A last line cut short (a write killed mid-line by an older writer) is reported by `read` as
  such, naming the file and line.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from wikiqa.evals.analysis.reduce import COLUMNS
from wikiqa.evals.analysis.stats import count_text
from wikiqa.inputs import InputError, MiB, read_bounded, read_jsonl
from wikiqa.secrets import scrub

JSONL = "changelog.jsonl"
MARKDOWN = "CHANGELOG.md"

HEADER = """# Change log

One row per recorded run: what changed, what kind of change it was, and the per-dimension pass
rate over the whole suite (passes/applicable after the majority vote across trials, with the 95%
Wilson interval of the rate; the terminal's table, for a run of several trials, shows the interval
clustered by task instead, so the two differ). The
Δ column is the paired change in tasks passing everything against the step the row changes (its
`VS`, on the same suite version; a row without one has none, and says why), with its 95% interval
and McNemar's p; only a significant one is more than noise, and one against a run of another
model, source or judge says so ("not like with like"): it measures that difference as well as
the change. The record column says whether the run's log is kept (`runs/RUN_ID.log.jsonl.gz`,
regradable), or was never kept (older rows: shown, not regradable). Rows of
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
    # how many model calls someone else's imported replies answered (None: none)
    imported_replies: str | None = None
    # the run whose log (runs/LOG_RUN.log.jsonl.gz) holds this row's grading pass: its own, or
    # the original's for a regrade; None for rows recorded before logs were committed (a row
    # whose log file is absent is shown as `no log kept`)
    log_run: str | None = None
    foreign: bool = False  # recorded from a log this machine did not seal, asked for by name


MAX_CHANGELOG_BYTES = 64 * MiB


class ChangelogError(InputError):
    """The change log cannot be read or written as it is; the message names the file (and line)."""


def read(out: Path) -> list[ChangelogRow]:
    """Every row of `out/changelog.jsonl`, in order (none when the file is absent); a bad line
    is an error naming the file and line, a symbolic link is refused."""
    path = out / JSONL
    _refuse_link(path, "read")
    if not path.exists():
        return []
    try:
        return read_jsonl(path, ChangelogRow, "change log", MAX_CHANGELOG_BYTES)
    except InputError as err:
        cut = _cut_line(path)
        if cut is not None and str(err).startswith(f"{path}:{cut}:"):
            raise ChangelogError(
                f"{path}:{cut}: the last line is cut short (the file ends mid-line: a write was "
                "interrupted); every line before it is whole: remove the partial line to go on"
            ) from None
        raise


def _cut_line(path: Path) -> int | None:
    """The number of the last line when the file does not end with a newline, else None."""
    try:
        data = read_bounded(path, MAX_CHANGELOG_BYTES, "change log")
    except (OSError, ValueError):
        return None
    return data.count(b"\n") + 1 if data and not data.endswith(b"\n") else None


def _refuse_link(path: Path, doing: str = "write") -> None:
    if path.is_symlink():
        tail = " (nothing was written)" if doing == "write" else ""
        raise ChangelogError(f"{path}: is a symbolic link; refusing to {doing} through it{tail}")


def check(out: Path) -> list[ChangelogRow]:
    """Refuse, before a recording run starts, a change log the run could not append to: either
    file a symbolic link, or a `changelog.jsonl` that does not read whole. Its rows."""
    _refuse_link(out / MARKDOWN)
    return read(out)


def append(out: Path, row: ChangelogRow) -> None:
    """Append one row to the JSON lines and regenerate the markdown beside them: the log is
    read whole first, the line goes in whole or not at all, and `CHANGELOG.md` is replaced by
    a complete new file (see the module docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = check(out)
    line = scrub(row.model_dump_json()) + "\n"
    markdown = _temporary(
        out / MARKDOWN, _markdown([*rows, ChangelogRow.model_validate_json(line)], out)
    )
    try:
        _append_line(out / JSONL, line.encode("utf-8"))
        _refuse_link(out / MARKDOWN)
        os.replace(markdown, out / MARKDOWN)
    finally:
        markdown.unlink(missing_ok=True)


def _append_line(path: Path, data: bytes) -> None:
    """Append `data` with one O_APPEND write, never through a link; on any failure the file is
    cut back to the length it had, so it never ends mid-line."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP:
            _refuse_link(path)
        raise ChangelogError(f"{path}: cannot open the change log: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ChangelogError(f"{path}: not a regular file; refusing to append to it")
        size = info.st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a whole last row without its newline (`read` accepted it)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException as err:
            os.ftruncate(fd, size)
            if isinstance(err, OSError):
                raise ChangelogError(
                    f"{path}: cannot append the row ({err.strerror or err}); the file is as it "
                    "was, nothing was recorded"
                ) from None
            raise
    finally:
        os.close(fd)


def _temporary(path: Path, text: str) -> Path:
    """`text` written whole to a new temporary file beside `path` (created exclusively, so never
    through a link), ready to be renamed over it; nothing is left if the write fails."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600: the change log is committed and shared
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise ChangelogError(
                f"{path}: cannot write it ({err.strerror or err}); nothing was recorded"
            ) from None
        raise
    return tmp


def unlike(base: Any, run: Any) -> list[str]:
    """What makes two runs (change-log rows, or anything with their `model`, `judge`, `source`
    and `source_hash`) other than like with like: another model (its options are levers, its
    port is not a model), another source or snapshot, another judge. Empty for like runs."""
    from wikiqa.registry import model_levers

    found = []
    models = model_levers(str(base.model))[0], model_levers(str(run.model))[0]
    if models[0] != models[1]:
        found.append(f"model {models[0]} -> {models[1]}")
    sources = [f"{r.source} {(r.source_hash or '')[:6]}".strip() for r in (base, run)]
    if sources[0] != sources[1]:
        found.append(f"source {sources[0]} -> {sources[1]}")
    if base.judge != run.judge:
        found.append(f"judge {base.judge or 'offline'} -> {run.judge or 'offline'}")
    return found


def delta_text(r: ChangelogRow, base: ChangelogRow | None = None) -> str:
    """A row's Δ as one line: B - A with its interval, the step it is against, McNemar's p,
    and, when `base` (the row it is against) ran another model, source or judge, what differs:
    such a Δ measures that difference as well as the change."""
    d = r.delta.tasks if r.delta is not None else None
    if not d:
        return f"- ({r.delta_note})" if r.delta_note else "-"
    differs = unlike(base, r) if base is not None else []
    # significance is claimed only like with like: against another model, source or judge the
    # Δ measures that difference too, so its p says nothing about the change alone
    mark = " **significant**" if d["significant"] and not differs else ""
    return (
        f"{d['diff']:+.3f} [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}] vs "
        f"{r.delta.vs_experiment if r.delta else ''}, p={d['mcnemar_p']:.2f}{mark}"
        + (f" {r.delta.note}" if r.delta and r.delta.note else "")
        + (f" (not like with like: {'; '.join(differs)})" if differs else "")
    )


def log_kept(row: ChangelogRow, out: Path) -> str:
    """`log`, `foreign log` (recorded from a foreign log, by name) or `no log kept` (a row
    recorded before logs were committed: shown, never regradable)."""
    from wikiqa.evals.running.runlog import existing_log

    if existing_log(out, row.log_run or row.run_id) is None:
        return "no log kept"
    return "foreign log" if row.foreign else "log"


def _markdown(rows: list[ChangelogRow], out: Path) -> str:
    head = ["date", "experiment", "change", "kind", "suite", "model", "trials", *COLUMNS,
            "tasks pass-all", "Δ tasks vs its base [95% CI]", "record"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by_id = {r.run_id: r for r in rows}
    for r in rows:
        base = by_id.get(r.delta.vs) if r.delta is not None else None
        dims = r.dimensions
        cells = [count_text(*dims[d]) if d in dims else "-" for d in COLUMNS]
        tasks_text = count_text(*r.tasks_pass) if r.tasks_pass else "-"
        change = (r.change or "-") + (f" ({r.imported_replies})" if r.imported_replies else "")
        fields = [r.date, r.experiment, change, r.kind, r.suite, r.model, str(r.trials)]
        cells += [tasks_text, delta_text(r, base), log_kept(r, out)]
        lines.append("| " + " | ".join([*fields, *cells]) + " |")
    return scrub(HEADER + "\n".join(lines) + "\n")


def markdown_text(out: Path) -> str:
    """What `CHANGELOG.md` should hold: the JSON lines as this checkout renders them."""
    return _markdown(read(out), out)


def render_markdown(out: Path) -> Path:
    """Regenerate `CHANGELOG.md` from the JSON lines: a complete new file renamed over it,
    never written through a link."""
    path = out / MARKDOWN
    _refuse_link(path)
    tmp = _temporary(path, markdown_text(out))
    try:
        _refuse_link(path)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
