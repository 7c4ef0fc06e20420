"""The climb's verdicts are bound to their record: a parquet that is not its log's is rebuilt from
the log, a log with its chain recomputed is foreign, a swapped cassette is refused, and the
held-out split runs once whatever the folder, resume, regrade or invisible characters."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.evals.running.test_harness import TASKS, config
from tests.runlogs import rechained
from wikiqa.cli.main import main
from wikiqa.evals import HoldoutRefused, RunConfig, TaskError, evaluate, run_eval
from wikiqa.evals.climb import ForeignRecord, changelog, record
from wikiqa.evals.running.runlog import RunLog, existing_log, packed_path
from wikiqa.experiment import load_run
from wikiqa.experiment.runs import record_note
from wikiqa.models import ExtractiveModel
from wikiqa.project import project_root
from wikiqa.sources import SnapshotSource

HELD_OUT_RUN = "20261204T214847Z-31-qwen-reading-public2-holdout-a9e63f"  # public2's holdout
FIRST_LOOK = "20261203T204101Z-29-hybrid-link-titles-a2742a"  # the climb's first run of it
HELD_SUITE = "dc037db4c7fa627e"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return path


def _recorded(suite: Path, tmp: Path, tiny: SnapshotSource, name: str, **kw: object) -> str:
    cfg = config(suite, tmp, trials=1, experiment=name)
    against = kw.pop("against", None)
    outcome = run_eval(cfg, model=ExtractiveModel(**kw), source=tiny, progress=False)  # type: ignore[arg-type]
    row = record(outcome, "record", against=against)  # type: ignore[arg-type]
    assert row is not None
    return outcome.meta.run_id


def test_an_edited_parquet_is_rebuilt_from_its_log_never_believed(
    suite: Path, tmp_path: Path, tiny: SnapshotSource
) -> None:
    base = _recorded(suite, tmp_path, tiny, "01_base")
    out = tmp_path / "results"
    log = RunLog.load(out, base)
    assert log.packed and log.provenance() == "sealed" and log.parquet is not None
    parquet = out / "runs" / f"{base}.parquet"
    honest = load_run(base, out)
    assert record_note(honest) == "its log sealed here"
    edited = pd.read_parquet(parquet)
    edited["verdict"], edited["passed"] = "fail", False  # every verdict turned to a failure
    edited.to_parquet(parquet, index=False)
    shown = load_run(base, out)
    assert record_note(shown).endswith("its parquet did not match its log, rebuilt from the log")
    keys = ["task_id", "trial", "dimension"]
    both = honest.merge(shown, on=keys, suffixes=("_a", "_b"))
    assert len(both) == len(honest) and (both.verdict_a == both.verdict_b).all()
    assert (honest.verdict == "pass").sum() > 0  # the edit would have shown a drop
    # a later step's Δ against it is read from the log too: no change, not a jump
    later = _recorded(suite, tmp_path, tiny, "02_same", against="01_base")
    (row,) = [r for r in changelog.read(out) if r.run_id == later]
    assert row.delta is not None and row.delta.vs == base and row.delta.tasks["diff"] == 0.0


def test_a_log_with_its_chain_recomputed_is_foreign_and_recorded_only_by_name(
    suite: Path, tmp_path: Path, tiny: SnapshotSource, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _recorded(suite, tmp_path, tiny, "01_base")
    out = tmp_path / "results"
    path = packed_path(out, run)

    def forge(bodies: list[dict[str, object]]) -> list[dict[str, object]]:
        bodies[0]["meta"]["config"]["experiment"] = "99_forged_step"  # type: ignore[index]
        return bodies

    path.write_bytes(
        gzip.compress(rechained(gzip.decompress(path.read_bytes()).decode(), forge).encode())
    )
    log = RunLog.load(out, run)  # the chain holds: it reads
    assert log.meta.config.experiment == "99_forged_step" and log.provenance() == "foreign"
    assert record_note(load_run(run, out)).startswith("FOREIGN")
    rows = len(changelog.read(out))
    args = ["regrade", run, "--out", str(out), "--change", "regraded", "--record"]
    assert main(args) == 1
    assert f"name it: --foreign {run}" in capsys.readouterr().err
    assert len(changelog.read(out)) == rows
    assert main([*args, "--foreign", run]) == 0  # asked for by name: recorded, and says so
    newest = changelog.read(out)[-1]
    assert newest.foreign and newest.log_run == run
    assert "foreign log" in (out / "CHANGELOG.md").read_text().splitlines()[-1]
    with pytest.raises(ForeignRecord):
        resumed = RunConfig(suite=str(suite), trials=1, out=out, experiment="99_forged_step")
        record(run_eval(resumed, resume=run, source=tiny, progress=False), "record")


def test_a_swapped_cassette_is_refused_before_a_trial_runs(
    suite: Path, tmp_path: Path, tiny: SnapshotSource
) -> None:
    first = _recorded(suite, tmp_path, tiny, "01_base")
    second = _recorded(suite, tmp_path, tiny, "02_more", hits_read=1)
    out = tmp_path / "results"
    runs = out / "runs"
    mine, theirs = (runs / f"{r}.cassette.jsonl.gz" for r in (first, second))
    cfg = RunConfig(suite=str(suite), trials=1, out=tmp_path / "replay", source=f"cassette:{first}")
    shutil.copy(theirs, mine)  # another run's cassette under this run's name
    before = _tree(out)
    with pytest.raises(ValueError, match=f"not the cassette run {first}'s log binds"):
        from wikiqa.registry import open_source

        run_eval(cfg, source=open_source(cfg.source, (out,)), progress=False)
    assert _tree(out) == before and not (tmp_path / "replay" / "runs").exists()


def test_the_held_out_split_runs_once_whatever_the_folder_resume_regrade_or_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    committed = project_root() / "results"
    before = _tree(committed / "runs")
    # 1. another --out: the committed climb's one look still counts
    code = main(["eval", "--holdout", "--suite", "public2", "--out", str(tmp_path / "elsewhere")])
    err = capsys.readouterr().err
    assert code == 1 and f"held-out suite {HELD_SUITE} was already run ({FIRST_LOOK})" in err
    # 2. a copy of the recorded held-out log, resumed: a rerun too
    copy = tmp_path / "copy"
    (copy / "runs").mkdir(parents=True)
    shutil.copy(committed / "runs" / f"{HELD_OUT_RUN}.log.jsonl.gz", copy / "runs")
    with pytest.raises(HoldoutRefused, match=f"was already run \\({FIRST_LOOK}\\)"):
        evaluate(RunConfig(suite="public2", holdout=True, trials=1, out=copy), "record",
                 resume=HELD_OUT_RUN, progress=False)  # fmt: skip

    # 3. a log whose header says it ran a development suite, regraded and recorded: a holdout row
    def as_dev(bodies: list[dict[str, object]]) -> list[dict[str, object]]:
        bodies[0]["meta"]["config"]["holdout"] = False  # type: ignore[index]
        return bodies

    forged = copy / "runs" / f"{HELD_OUT_RUN}.log.jsonl.gz"
    text = gzip.decompress(forged.read_bytes()).decode()
    forged.write_bytes(gzip.compress(rechained(text, as_dev).encode()))
    assert existing_log(copy, HELD_OUT_RUN) is not None
    args = ["regrade", HELD_OUT_RUN, "--out", str(copy), "--change", "x", "--record"]
    assert main([*args, "--foreign", HELD_OUT_RUN]) == 0
    (row,) = changelog.read(copy)
    assert row.holdout and row.suite_hash == HELD_SUITE
    assert (
        row.delta is None
        and row.delta_note == f"run {HELD_OUT_RUN} has no row in this change log to pair with"
    )
    # 4. held-out questions renamed, with invisible characters and punctuation: still held out
    held = [json.loads(line) for line in
            (project_root() / "experiments/suite/holdout.jsonl").read_text().splitlines()[:2]]  # fmt: skip
    for task in held:
        task["question"] = task["question"].upper() + "\u200b\u2060 !"
        task["id"] += "-renamed"
    smuggled = tmp_path / "smuggled.jsonl"
    smuggled.write_text("".join(json.dumps(t) + "\n" for t in held))
    with pytest.raises(TaskError, match="ask held-out questions"):
        run_eval(RunConfig(suite=str(smuggled), trials=1, out=tmp_path / "s"), progress=False)
    assert _tree(committed / "runs") == before  # nothing outside the output folders changed


def test_did_it_help_pairs_a_step_with_its_vs_as_compare_does_and_nothing_else(
    suite: Path, tmp_path: Path, tiny: SnapshotSource
) -> None:
    from wikiqa.experiment import compare_runs, latest_pair

    out = tmp_path / "results"
    first = _recorded(suite, tmp_path, tiny, "01_base")
    _recorded(suite, tmp_path, tiny, "02_fewer_reads", hits_read=1)  # recorded between them
    third = _recorded(suite, tmp_path, tiny, "03_change", against="01_base", hits_read=1)
    assert latest_pair(out) == (first, third)  # its VS, not the row recorded just before it
    (row,) = [r for r in changelog.read(out) if r.run_id == third]
    assert row.delta is not None and row.delta.vs == first
    shown = compare_runs(first, third, out).loc["tasks"]
    assert shown["B - A [95% CI]"].startswith(f"{row.delta.tasks['diff']:+.3f} [")
    assert shown["tasks both decided"] == row.delta.tasks["tasks"]
    # a step with no VS is paired with nothing: "did it help?" has no A
    fourth = _recorded(suite, tmp_path, tiny, "04_unanchored")
    assert latest_pair(out) == (None, fourth)
    (row,) = [r for r in changelog.read(out) if r.run_id == fourth]
    assert row.delta is None and row.delta_note == "no base named (a step's VS)"
