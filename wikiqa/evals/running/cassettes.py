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


def check_replay(source: WikiSource, suite_hash: str) -> None:
    """Before any trial runs: a cassette of another suite is refused (`check_suite`)."""
    inner = _innermost(source)
    if isinstance(inner, CassetteSource):
        inner.check_suite(suite_hash)


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
