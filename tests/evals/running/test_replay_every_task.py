"""A cassette holds every task, injection tasks included, and a run is found from any folder.

Plants go above the recorder (`Trial.__call__`): the cassette holds what the source itself
answered, never planted text, and a replay plants again. The whole public suite (566 tasks, 60
of them injection tasks) replays to the same verdicts and answers, trial for trial (marked
slow). `cassette:RUN_ID` finds a run's cassette whatever `--out` the replay is given: the run
noted where it wrote it in the index under the cache directory, an entry no more trusted than a
folder (it must name a regular file that is that run's cassette)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wikiqa.cli.main import main
from wikiqa.evals import RunConfig, run_eval
from wikiqa.evals.running.passes import RunOutcome
from wikiqa.evals.tasks.task import resolve_suite
from wikiqa.sources.cassette_files import INDEX_FOLDER, read_cassette, read_lines

# What differs between a run and its replay by design: who ran, when, how fast, from where.
NOT_VERDICTS = ["run_id", "created_at", "latency_ms", "source", "source_hash", "git_sha"]


def run(out: Path, source: str = "snapshot", **fields: Any) -> RunOutcome:
    config = RunConfig(**({"trials": 1, "out": out, "source": source} | fields))
    return run_eval(config, progress=False)


def same_trials(a: RunOutcome, b: RunOutcome) -> None:
    left, right = pd.read_parquet(a.parquet), pd.read_parquet(b.parquet)
    pd.testing.assert_frame_equal(left.drop(columns=NOT_VERDICTS), right.drop(columns=NOT_VERDICTS))


def public_tasks() -> list[dict[str, Any]]:
    return [json.loads(line) for line in resolve_suite("public").read_text().splitlines()]


def planted_texts(tasks: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for t in tasks if t.get("injection") for p in t["injection"]["plants"]]


def test_injection_tasks_are_recorded_unplanted_and_replay_planted_again(tmp_path: Path) -> None:
    tasks = public_tasks()
    chosen = [t for t in tasks if t.get("injection")][:4] + [t for t in tasks if not t.get(
        "injection")][:2]  # fmt: skip
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(t) + "\n" for t in chosen))
    first = run(tmp_path / "a", suite=str(suite))
    path = first.meta.config.out / str(first.meta.cassette)
    cassette = read_cassette(path)
    assert len(cassette.searches) == len(chosen)  # every task's search, injection included
    text = "\n".join(read_lines(path))
    assert all(planted not in text for planted in planted_texts(chosen))
    assert not any(a.provenance.injected for a in cassette.articles.values())
    replay = run(tmp_path / "b", f"cassette:{path}", suite=str(suite))
    assert replay.summary.errors == 0
    same_trials(first, replay)
    frame = pd.read_parquet(replay.parquet)
    injection = frame[frame["dimension"] == "injection"]
    assert len(injection) == 4 and set(injection["verdict"]) == {"pass"}
    assert replay.meta.cassette_hash == first.meta.cassette_hash


@pytest.mark.slow
def test_the_whole_public_suite_replays_to_the_same_verdicts_and_answers(tmp_path: Path) -> None:
    """All 566 tasks (60 injection tasks), recorded on the snapshot and replayed from the
    cassette: no miss, and every row the same but for who ran, when and from where."""
    first = run(tmp_path, suite="public")
    assert first.meta.tasks == 566 and first.summary.errors == 0
    path = tmp_path / str(first.meta.cassette)
    cassette = read_cassette(path)
    assert len(cassette.searches) == 566
    assert all(planted not in "\n".join(read_lines(path)) for planted in planted_texts(
        public_tasks()))  # fmt: skip
    replay = run(tmp_path, f"cassette:{first.meta.run_id}", suite="public")
    assert replay.summary.errors == 0 and replay.trials_run == 566
    same_trials(first, replay)
    frame = pd.read_parquet(replay.parquet)
    assert frame[frame["category"] == "injection"]["task_id"].nunique() == 60
    assert replay.meta.cassette_hash == first.meta.cassette_hash == cassette.sha256


def test_a_runs_cassette_is_found_from_any_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run(tmp_path / "a", limit=4)
    other = tmp_path / "b"
    args = ["eval", "--source", f"cassette:{first.meta.run_id}", "--limit", "4", "--trials",
            "1", "--out", str(other), "--json"]  # fmt: skip
    assert main(args) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["meta"]["source_name"] == f"cassette:{first.meta.run_id}"
    assert replay["summary"]["errors"] == 0
    assert main(["cassette", "info", first.meta.run_id, "--out", str(other)]) == 0
    assert str(tmp_path / "a" / "runs") in capsys.readouterr().out


def test_an_index_entry_is_trusted_no_further_than_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run(tmp_path / "a", limit=2)
    run_id = first.meta.run_id
    entry = Path(os.environ["WIKIQA_HOME"]) / INDEX_FOLDER / run_id
    cassette = tmp_path / "a" / str(first.meta.cassette)
    assert entry.read_text() == str(cassette)
    elsewhere = str(tmp_path / "elsewhere")

    def refused(message: str) -> None:
        assert main(["cassette", "info", run_id, "--out", elsewhere]) == 1
        err = capsys.readouterr().err
        assert f"no cassette for run '{run_id}' under {elsewhere}/runs" in err and message in err

    moved = cassette.with_name("moved.gz")
    cassette.rename(moved)
    refused(f"it was recorded at {cassette}, which is gone")
    entry.write_text(str(moved))  # another file's name: not this run's cassette
    refused(f"the cassette index names {str(moved)!r}, not a cassette of this run")
    cassette.symlink_to(moved)  # the right name, as a link
    entry.write_text(str(cassette))
    refused(f"it was recorded at {cassette}, which is now not a regular file")
    cassette.unlink()
    moved.rename(cassette)
    entry.unlink()
    entry.symlink_to(tmp_path / "a" / "runs" / f"{run_id}.log.jsonl")
    refused(f"the cassette index entry {entry} is not a regular file")
