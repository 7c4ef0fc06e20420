"""`wikiqa compare` and `wikiqa power` through the CLI, on real (tiny) runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evals.running.test_harness import TASKS, config
from wikiqa.cli import main
from wikiqa.evals import run_eval
from wikiqa.sources import SnapshotSource


def _suite(tmp_path: Path, name: str, tasks: list[dict[str, object]]) -> Path:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in tasks) + "\n")
    return path


def test_compare_pairs_two_runs_and_refuses_other_suites(
    tmp_path: Path, tiny: SnapshotSource, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path, "s", TASKS)
    a = run_eval(config(suite, tmp_path, trials=1), source=tiny, progress=False)
    b = run_eval(config(suite, tmp_path, trials=1, read_first=1), source=tiny, progress=False)
    out = str(a.meta.config.out)
    assert main(["compare", a.meta.run_id, b.meta.run_id, "--out", out, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["a"], result["b"]) == (a.meta.run_id, b.meta.run_id)
    row = result["rows"]["tasks"]
    assert row["tasks"] == len(TASKS) and 0.0 <= row["mcnemar_p"] <= 1.0
    assert row["ci"][0] <= row["diff"] <= row["ci"][1]

    other = _suite(tmp_path, "other", TASKS[:2])
    c = run_eval(config(other, tmp_path, trials=1), source=tiny, progress=False)
    assert main(["compare", a.meta.run_id, c.meta.run_id, "--out", out]) == 2
    assert "different suites" in capsys.readouterr().err
    args = ["compare", a.meta.run_id, c.meta.run_id, "--out", out, "--allow-different-suites"]
    assert main(args) == 0
    assert "McNemar" in capsys.readouterr().out
    assert main(["compare", "no-such-run", c.meta.run_id, "--out", out]) == 1


def test_power_prints_the_minimum_detectable_effect(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["power", "41", "566", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["tasks"] for r in rows] == [41, 566]
    assert rows[0]["mde"] == pytest.approx(0.3094, abs=1e-3) and rows[1]["mde"] < 0.09
    with pytest.raises(SystemExit):
        main(["power", "0"])


def test_flips_between_runs_of_different_suites_are_refused(
    tmp_path: Path, tiny: SnapshotSource
) -> None:
    from wikiqa.evals.analysis.compare import DifferentSuites
    from wikiqa.experiment import flips, load_run

    a = run_eval(
        config(_suite(tmp_path, "s", TASKS), tmp_path, trials=1), source=tiny, progress=False
    )
    b = run_eval(
        config(_suite(tmp_path, "t", TASKS[:2]), tmp_path, trials=1), source=tiny, progress=False
    )
    run_a, run_b = load_run(a.parquet), load_run(b.parquet)
    assert len(flips(run_a, run_a)) == 0
    with pytest.raises(DifferentSuites):
        flips(run_a, run_b)
