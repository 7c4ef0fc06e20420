"""`wikiqa regrade`: a logged run's answers graded again, no model call, paired in the log."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.evals.running.test_harness import TASKS, config
from wikiqa.cli.main import main
from wikiqa.evals import RunLog, run_eval
from wikiqa.evals.climb import changelog, record
from wikiqa.evals.graders import Graded
from wikiqa.evals.running import scoring
from wikiqa.evals.running.regrade import RegradeError, check, regrade
from wikiqa.evals.running.runlog import packed_path
from wikiqa.models import ExtractiveModel
from wikiqa.sources import SnapshotSource


@pytest.fixture
def recorded(tmp_path: Path, tiny: SnapshotSource) -> tuple[str, Path]:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("\n".join(json.dumps(t) for t in TASKS[:3]) + "\n")
    outcome = run_eval(
        config(suite, tmp_path, experiment="01_agent_baseline"),
        model=ExtractiveModel(),
        source=tiny,
        progress=False,
    )
    assert record(outcome, "record") is not None
    return outcome.meta.run_id, tmp_path / "results"


def test_a_regraded_run_keeps_every_answer_and_is_paired_with_the_original(
    recorded: tuple[str, Path], tiny: SnapshotSource, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, out = recorded
    # a later step of the same suite: the regraded run is still paired with its original
    suite = out.parent / "suite.jsonl"
    later = run_eval(
        config(suite, out.parent, experiment="02_later", change="later"),
        model=ExtractiveModel(hits_read=5),
        source=tiny,
        progress=False,
    )
    assert record(later, "record") is not None
    code = main(["regrade", run_id, "--out", str(out), "--change", "same graders", "--record"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "regraded (0 model calls, 0 judge calls)" in printed
    rows = changelog.read(out)
    assert [r.kind for r in rows] == ["adhoc", "adhoc", "grader"]
    old, _, new = rows
    assert new.experiment == old.experiment and new.change == "same graders"
    assert new.dimensions == old.dimensions and new.tasks_pass == old.tasks_pass
    assert new.delta is not None and new.delta.vs == old.run_id and new.delta.tasks["diff"] == 0
    assert "change log: kind grader, paired Δ +0.000" in printed
    before = pd.read_parquet(out / old.parquet)
    after = pd.read_parquet(out / new.parquet)
    keys = ["task_id", "trial", "dimension"]
    joined = before.merge(after, on=keys, suffixes=("_old", "_new"))
    assert len(joined) == len(before) == len(after)
    assert (joined.answer_old.fillna("") == joined.answer_new.fillna("")).all()
    assert (joined.verdict_old == joined.verdict_new).all()
    # no copy of the trials: the pass is appended to the original's log, which binds its parquet
    assert sorted(p.name for p in (out / "runs").glob(f"{new.run_id}*")) == [new.parquet[5:]]
    log = RunLog.load(out, old.run_id)
    assert new.log_run == old.run_id and log.passes == 2 and log.meta.model == "extractive"
    assert log.parquet is not None and log.parquet.file == new.parquet
    assert check(old.run_id, out) == (0, len(after))  # nothing differs: the same graders


def test_regrading_uses_the_graders_of_this_checkout(
    recorded: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, out = recorded
    from wikiqa.evals.graders import grade as real

    def stricter(task: Any, result: Any, judge: Any = None) -> Graded:
        graded = real(task, result, judge)
        for g in graded.grades:
            if g.dimension == "faithfulness" and g.verdict == "pass":
                g.verdict = "fail"
        return graded

    monkeypatch.setattr(scoring, "grade", stricter)  # where every logged trial is graded
    # what the stricter graders change, counted without writing: every faithfulness pass
    original = pd.read_parquet(out / "runs" / f"{run_id}.parquet")
    passed = int(((original.dimension == "faithfulness") & (original.verdict == "pass")).sum())
    assert passed > 0 and check(run_id, out) == (passed, len(original))
    outcome = regrade(run_id, out, "stricter faithfulness")
    faithful = outcome.frame[outcome.frame.dimension == "faithfulness"]
    assert len(faithful) > 0 and not (faithful.verdict == "pass").any()
    # the log's last pass now binds the regraded table: checked against it, nothing differs
    assert check(run_id, out) == (0, len(original))


def test_an_incomplete_or_judged_or_unknown_run_is_refused_and_nothing_is_written(
    recorded: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, out = recorded
    packed = packed_path(out, run_id)  # a recorded run's log is packed
    saved = packed.read_bytes()
    lines = gzip.decompress(saved).decode().splitlines()  # header, 6 trials, cassette, graded
    packed.write_bytes(gzip.compress(("\n".join(lines[:6]) + "\n").encode()))
    runs_before = sorted((out / "runs").iterdir())
    with pytest.raises(RegradeError, match="1 of 6 trials are missing"):
        regrade(run_id, out, "x")
    packed.write_bytes(saved)
    assert main(["regrade", "no-such-run", "--out", str(out), "--change", "x"]) == 1
    assert "no such run log" in capsys.readouterr().err
    assert main(["regrade", "../escape", "--out", str(out), "--change", "x"]) == 2
    assert "is not a run id" in capsys.readouterr().err
    assert sorted((out / "runs").iterdir()) == runs_before
    assert len(changelog.read(out)) == 1
    assert main(["regrade", run_id, "--out", str(out), "--change", "x"]) == 0  # restored: fine


def test_a_suite_changed_in_place_is_read_at_the_version_the_run_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from wikiqa.evals.running.regrade import committed_version
    from wikiqa.evals.tasks.task import bytes_hash

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    suite = tmp_path / "experiments" / "suite" / "plants.jsonl"
    suite.parent.mkdir(parents=True)
    first, second = b'{"id": "a"}\n', b'{"id": "a", "answers": ["b"]}\n'
    git("init", "-q")
    for version in (first, second):
        suite.write_bytes(version)
        git("add", ".")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v")
    monkeypatch.setenv("WIKIQA_ROOT", str(tmp_path))
    # the working tree holds the second version; the first is found in the history by its hash
    assert committed_version(suite, bytes_hash(first)) == first
    assert committed_version(suite, bytes_hash(second)) == second
    assert committed_version(suite, bytes_hash(b"never committed\n")) is None
    outside = tmp_path.parent / "elsewhere.jsonl"
    assert committed_version(outside, bytes_hash(first)) is None
