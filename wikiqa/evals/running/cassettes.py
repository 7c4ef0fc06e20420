"""The runner's cassette: every run records what its source answered, beside its parquet.

Thin on purpose: the recorder and the replaying source live in `wikiqa.sources.cassette`; this
module only decides where a run's cassette goes, what its header says, and what the run's
metadata records of it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wikiqa.evals.running.records import RunMeta
from wikiqa.sources import WikiSource
from wikiqa.sources.cassette import CassetteRecorder, CassetteSource
from wikiqa.sources.cassette_files import (
    CASSETTE_FORMAT,
    CASSETTE_SUFFIX,
    Header,
    remember_cassette,
)


def _innermost(source: WikiSource) -> Any:
    inner: Any = source
    while hasattr(inner, "inner"):
        inner = inner.inner
    return inner


def replaying(source: WikiSource) -> bool:
    """The run replays a cassette: its misses are deterministic, so retrying them is pointless."""
    return isinstance(_innermost(source), CassetteSource)


def check_replay(source: WikiSource, suite_hash: str, results: tuple[Path, ...] = ()) -> None:
    """Before any trial runs: a cassette of another suite is refused (`check_suite`), and so is
    a cassette that is not the one its run's log binds (swapped, or edited): the replay of run R
    must answer what R's source answered. `results` are the folders R's log may be under."""
    inner = _innermost(source)
    if not isinstance(inner, CassetteSource):
        return
    inner.check_suite(suite_hash)
    from wikiqa.evals.running.runlog import RunLog, RunLogError, existing_log

    run_id = inner.path.name.removesuffix(CASSETTE_SUFFIX)
    for out in results:
        for folder in (out, out / "scratch"):
            try:
                found = existing_log(folder, run_id)
            except ValueError:  # a file name that names no run: no log to check against
                return
            if found is None:
                continue
            try:
                bound = RunLog.load(folder, run_id).cassette
            except RunLogError as err:
                raise ValueError(f"cannot check the cassette of {run_id}: {err}") from None
            if bound is None or bound.sha256 != inner.sha256:
                raise ValueError(
                    f"{inner.path}: not the cassette run {run_id}'s log binds "
                    f"({bound.sha256[:12] if bound else 'none'}, this one "
                    f"{inner.sha256[:12]}): it was swapped or edited; nothing was run"
                )
            return


def open_recorder(source: WikiSource, meta: RunMeta, out: Path) -> CassetteRecorder:
    """The run's recorder, appending to `OUT/runs/RUN_ID.cassette.jsonl.gz` beside its parquet (a
    resumed run's too)."""
    path = out / "runs" / f"{meta.run_id}{CASSETTE_SUFFIX}"
    header = Header(
        format=CASSETTE_FORMAT,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        run_id=meta.run_id,
        suite=meta.config.suite_name,
        suite_hashes=[meta.suite_hash],
        source=meta.source_name,
        source_hash=meta.source_hash,
    )
    recorder = CassetteRecorder(source, path, header)
    remember_cassette(meta.run_id, path)  # `cassette:RUN_ID` finds it from any results folder
    return recorder


def with_cassette(meta: RunMeta, recorder: CassetteRecorder | None, out: Path) -> RunMeta:
    """The run's metadata naming its cassette (relative to the results folder) and its hash."""
    if recorder is None:
        return meta
    recorder.close()
    assert recorder.path is not None  # the run's recorder writes a file
    name = str(recorder.path.relative_to(out))
    return meta.model_copy(update={"cassette": name, "cassette_hash": recorder.sha256})
