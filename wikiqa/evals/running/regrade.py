"""Regrade a logged run with today's graders, without calling its model again.

A grader fix changes verdicts, not answers, and the answers of a model run are hours of compute.
Every logged trial holds the agent's whole result, so `score` grades the same answers again: a
regrade appends a grading pass to the run's own log (no copy of the trials) and writes that
pass's parquet under a run id of its own (kind `grader`), so its change-log row can be paired
with the original's: the Δ is the graders' alone. A judge's verdicts come from the response cache
when nothing it reads changed, so a regrade with a judge costs no judge call then.

`check` grades a run again and counts the verdicts that differ from the parquet its log binds,
writing nothing: the test that a refactor of the graders changed no verdict. `bind` binds a
log kept from before passes bound their parquet: a pass binding the parquet as it is, graded
again when that changes no verdict, else a binding of the earlier graders' table, saying how many
of its verdicts today's graders would change; then the log is packed.

Only complete runs regrade (a trial missing or lost to infrastructure would be a hole the new
graders never saw).
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.paths import git_sha
from wikiqa.evals.running.frame import to_frame
from wikiqa.evals.running.passes import RunOutcome, file_hash, finish
from wikiqa.evals.running.records import TrialRecord
from wikiqa.evals.running.runlog import PACKED, SUFFIX, ParquetBinding, RunLog, RunLogError
from wikiqa.evals.running.runner import slug
from wikiqa.evals.running.scoring import Scored, score
from wikiqa.evals.tasks.task import (
    MAX_SUITE_BYTES,
    Task,
    TaskError,
    bytes_hash,
    parse_tasks,
    read_suite,
)
from wikiqa.inputs import InputError
from wikiqa.parquets import read_parquet
from wikiqa.project import project_root


class RegradeError(ValueError):
    """The run cannot be regraded as it is (missing, incomplete, its suite changed)."""


def _load(out: Path, run_id: str) -> RunLog:
    try:
        return RunLog.load(out, run_id)
    except RunLogError as err:
        raise RegradeError(str(err)) from None


# How far back the history of a suite file is searched for the version a run used.
HISTORY_COMMITS = 200


def committed_version(path: Path, digest: str) -> bytes | None:
    """The version of a suite file inside the project that a run used (by its `bytes_hash`),
    read from the repository's history when the file has since changed in place; None outside
    a git checkout or when no commit of the file (among its last `HISTORY_COMMITS`) is that
    version. Each version is size-checked before it is read."""
    root = project_root()
    try:
        relative = path.resolve().relative_to(root.resolve()).as_posix()
    except (OSError, ValueError):
        return None

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, check=True, timeout=60
        ).stdout

    try:
        commits = git("log", f"-{HISTORY_COMMITS}", "--format=%H", "--", relative).split()
        for commit in commits:
            blob = f"{commit.decode()}:{relative}"
            size = git("cat-file", "-s", blob).strip()
            if not size.isdigit() or int(size) > MAX_SUITE_BYTES:
                continue
            data = git("cat-file", "blob", blob)
            if bytes_hash(data) == digest:
                return data
    except (OSError, subprocess.SubprocessError):
        return None
    return None


def graded(log: RunLog, judge: Callable[[int], Judge] | None) -> tuple[RunLog, list[Task], Scored]:
    """`log`, its tasks, and every trial graded by this checkout's graders."""
    run_id = log.meta.run_id
    meta = log.meta
    if meta.judge is not None and judge is None:
        raise RegradeError(f"{run_id} was graded with judge {meta.judge}: give it with --judge")
    suite_path = Path(meta.suite_path)  # a committed log names it from the project root
    suite_path = suite_path if suite_path.is_absolute() else project_root() / suite_path
    try:  # a suite given by path outside the project is named by its absolute path: it may be
        # gone, or on another machine
        raw = read_suite(suite_path)
        if bytes_hash(raw) != meta.suite_hash:
            raw = committed_version(suite_path, meta.suite_hash) or b""
        if bytes_hash(raw) != meta.suite_hash:
            raise RegradeError(
                f"{run_id} used suite {meta.suite_hash}; {suite_path} is now another, and no "
                "commit of it is that version"
            )
        tasks = parse_tasks(raw, suite_path)
    except TaskError as err:
        raise RegradeError(f"{run_id}'s suite cannot be read: {err}") from None
    if meta.config.limit is not None:
        # the tasks the run drew are the ones its log holds (how a limited run draws its tasks
        # has changed over time; the log is the record of what it ran)
        drawn = min(meta.config.limit, len(tasks))
        logged = {task_id for task_id, _ in log.trials}
        tasks = [t for t in tasks if t.id in logged]
        if len(tasks) < drawn:
            raise RegradeError(
                f"{run_id}: {drawn - len(tasks)} of its {drawn} tasks have no trial in its log; "
                "finish the run (resume it) before regrading"
            )
    wanted = [(t.id, trial) for t in tasks for trial in range(meta.config.trials)]
    missing = [k for k in wanted if k not in log.trials or log.trials[k].failed]
    if missing:
        raise RegradeError(
            f"{run_id}: {len(missing)} of {len(wanted)} trials are missing or lost to "
            f"infrastructure (first {missing[0][0]} trial {missing[0][1]}); finish the run "
            "(resume it) before regrading"
        )
    trials = {k: log.trials[k] for k in wanted}
    return log, tasks, score(trials, {t.id: t for t in tasks}, judge)


def regrade(
    run_id: str, out: Path, change: str, judge: Callable[[int], Judge] | None = None
) -> RunOutcome:
    """`run_id`'s logged results graded by the graders of this checkout: a pass appended to
    its log, its parquet written under a new run id of kind `grader` (the outcome's)."""
    log, tasks, scored = graded(_load(out, run_id), judge)
    meta = log.meta
    now = datetime.now(UTC)
    new = meta.model_copy(
        update={
            "run_id": f"{now:%Y%m%dT%H%M%SZ}-{slug(meta.config.experiment)[:31]}-regraded-"
            f"{uuid.uuid4().hex[:6]}",
            "created_at": now.isoformat(timespec="seconds"),
            "git_sha": git_sha(),
            "wikiqa_version": version("wikiqa"),
            "config": meta.config.model_copy(update={"kind": "grader", "change": change}),
        }
    )
    return finish(log, new, tasks, scored, log_run=run_id)


VERDICT_KEYS = ["task_id", "trial", "dimension"]


def check(run_id: str, out: Path, judge: Callable[[int], Judge] | None = None) -> tuple[int, int]:
    """(verdicts that differ from the run's parquet, verdicts compared), writing nothing. The
    parquet compared with is the one the log's last pass binds, checked against its hash; a log
    from before passes bound one is compared with `runs/RUN_ID.parquet` as it is."""
    moved, compared, _ = _check(run_id, out, judge)
    return moved, compared


def _check(
    run_id: str, out: Path, judge: Callable[[int], Judge] | None
) -> tuple[int, int, tuple[RunLog, list[Task], Scored, Path]]:
    log, tasks, scored = graded(_load(out, run_id), judge)
    binding = log.parquet
    parquet = out / (binding.file if binding else f"runs/{run_id}.parquet")
    try:
        if binding is not None and file_hash(parquet) != binding.sha256:
            raise RegradeError(
                f"{parquet}: not the parquet {run_id}'s log binds (edited or replaced); "
                "nothing to compare with"
            )
        wanted = [*VERDICT_KEYS, "verdict"]
        before = read_parquet(parquet, "run", wanted)[wanted]
    except (OSError, ValueError, InputError) as err:
        if isinstance(err, RegradeError):
            raise
        raise RegradeError(f"{parquet}: cannot read the run's results: {err}") from None
    after = to_frame(log.meta, tasks, scored.records)[[*VERDICT_KEYS, "verdict"]]
    both = before.merge(after, on=VERDICT_KEYS, how="outer")
    moved = int((both["verdict_x"] != both["verdict_y"]).sum())
    return moved, len(both), (log, tasks, scored, parquet)


def bind(run_id: str, out: Path, judge: Callable[[int], Judge] | None = None) -> int:
    """Bind a log kept from before passes bound their parquet (see the module docstring), and
    pack it; the number of `runs/RUN_ID.parquet`'s verdicts today's graders would change."""
    moved, _, (log, _, scored, parquet) = _check(run_id, out, judge)
    if log.parquet is None:
        binding = ParquetBinding(file=f"runs/{parquet.name}", sha256=file_hash(parquet))
        log.drop_cut_tail()
        if moved == 0:
            log.append_pass(log.meta.judge, scored.records, binding)
        else:  # graded by an earlier checkout's graders: its hash bound, its verdicts its own
            log.append_binding(log.meta.judge, binding, f"{moved} verdicts differ now")
    log.pack()  # the form a recorded run's log is committed in
    return moved


def graded_earlier(run_id: str, out: Path) -> bool:
    """The log's last pass binds a table graded by an earlier checkout (`bind`)."""
    log = _load(out, run_id)
    return log.passes in log.earlier


def logged_runs(out: Path) -> list[str]:
    """Every run with a log under `out` (being written, or packed), oldest first."""
    found = {
        p.name.removesuffix(".gz").removesuffix(SUFFIX)
        for pattern in (f"*{SUFFIX}", f"*{PACKED}")
        for p in (out / "runs").glob(pattern)
    }
    return sorted(found)


__all__ = [
    "RegradeError", "TrialRecord", "bind", "check", "graded", "graded_earlier", "logged_runs",
    "regrade",
]  # fmt: skip
