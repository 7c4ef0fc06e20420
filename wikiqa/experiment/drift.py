"""Drift between two recorded runs: the articles and searches their cassettes saw differently,
and which tasks read the drifted text, with their verdicts in each run."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from wikiqa.evals.analysis.compare import Comparison, Reads, drifted_tasks
from wikiqa.evals.climb.changelog import ChangelogRow
from wikiqa.evals.running.runlog import SUFFIX as LOG_SUFFIX
from wikiqa.evals.running.runlog import RunLogError, find_log
from wikiqa.experiment.runs import find_run
from wikiqa.sources.cassette_drift import Drift, drift
from wikiqa.sources.cassette_files import Cassette, CassetteError, cassette_of, read_cassette


def drift_between(
    a: str | Path, b: str | Path, out: Path | None = None
) -> tuple[Drift | None, str | None]:
    """The drift between two runs' cassettes (beside their parquets), or (None, why not)."""
    cassettes = []
    for run in (a, b):
        try:
            path = cassette_of(find_run(run, out))
        except FileNotFoundError as err:
            return None, str(err)
        if not path.exists():
            return None, f"run {run} has no cassette (recorded before cassettes)"
        try:
            cassettes.append(_cassette(path, path.stat().st_mtime_ns))
        except CassetteError as err:
            return None, str(err)
    return drift(*cassettes), None


def with_drift(
    result: Comparison,
    a: str | Path,
    b: str | Path,
    frames: tuple[pd.DataFrame, pd.DataFrame],
    out: Path | None = None,
) -> Comparison:
    """`result` with the drift between the two runs' cassettes and, when there is some, the
    tasks that read the drifted text (from the runs' logs) with their verdicts in each run."""
    found, why = drift_between(a, b, out)
    update: dict[str, Any] = {"drift": found, "drift_unknown": why}
    if found is not None and (found.articles or found.searches):
        try:
            reads = task_reads(a, out), task_reads(b, out)
        except RunLogError as err:
            update["drift_tasks_unknown"] = str(err)
        else:
            update["drift_tasks"] = drifted_tasks(found, reads, *frames)
    return result.model_copy(update=update)


def task_reads(run: str | Path, out: Path | None = None) -> dict[str, Reads]:
    """What each task of a run read, from the traces its run log holds: the titles of the
    articles it fetched and the queries it searched, over all its trials. RunLogError when the
    log is missing or refused."""
    parquet = find_run(run, out)
    path = parquet.with_name(parquet.name.removesuffix(".parquet") + LOG_SUFFIX)
    if not (path.exists() or path.is_symlink()):  # a symlink is found, and refused when read
        raise RunLogError(f"no log of run {parquet.stem!r} beside {parquet}")
    log = find_log(path, parquet.parent.parent)
    titles: dict[str, set[str]] = {}
    queries: dict[str, set[str]] = {}
    for (task, _), record in log.trials.items():
        titles.setdefault(task, set()).update(r.title for r in record.result.retrieved)
        queries.setdefault(task, set()).update(
            str(e.detail["query"]) for e in record.result.trace
            if e.kind == "search" and "query" in e.detail
        )  # fmt: skip
    return {t: Reads(frozenset(titles[t]), frozenset(queries[t])) for t in titles}


@lru_cache(maxsize=32)
def _cassette(path: Path, mtime_ns: int) -> Cassette:
    return read_cassette(path)  # the climb reads each run's cassette once per change


def drift_cell(row: ChangelogRow, out: Path | None) -> str | None:
    """Beside a row's Δ: how much of the text and searches changed since the run it is
    compared with (`revs` articles at other revisions, `hits` searches with other hits)."""
    if row.delta is None:
        return None
    found, _ = drift_between(row.delta.vs, row.run_id, out)
    if found is None:
        return None
    mark = " CONFOUNDED" if found.confounded else ""
    return (
        f"{found.drifted_articles}/{found.shared_articles} revs, "
        f"{found.drifted_searches}/{found.shared_searches} hits{mark}"
    )


def drift_line(a: str, b: str, out: Path | None = None) -> str:
    """The drift between two runs, as `wikiqa compare` prints it beside the Δ."""
    found, why = drift_between(a, b, out)
    return found.line() if found is not None else f"drift: unknown ({why})"
