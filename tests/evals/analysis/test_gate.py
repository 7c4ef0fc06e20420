from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.evals.running.test_harness import TASKS
from wikiqa.cli import main
from wikiqa.evals import RunConfig, run_eval
from wikiqa.evals.analysis import gate
from wikiqa.sources import SnapshotSource


@pytest.fixture
def run(tmp_path: Path, tiny: SnapshotSource) -> Path:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("\n".join(json.dumps(t) for t in TASKS) + "\n")
    outcome = run_eval(
        RunConfig(suite=str(suite), trials=1, out=tmp_path / "r"), source=tiny, progress=False
    )
    return outcome.parquet


def worse(parquet: Path, tmp_path: Path) -> Path:
    frame = pd.read_parquet(parquet)
    hit = (frame.task_id == "flow-matic") & (frame.dimension == "attribution")
    frame.loc[hit, "verdict"] = "fail"
    path = tmp_path / "worse.parquet"
    frame.to_parquet(path)
    return path


def test_same_run_passes_and_a_drop_fails_with_a_readable_diff(run: Path, tmp_path: Path) -> None:
    baseline = gate.write_baseline(pd.read_parquet(run), tmp_path / "baseline.json")
    assert gate.compare(baseline, gate.baseline_from(pd.read_parquet(run))) == []
    drops = gate.compare(baseline, gate.baseline_from(pd.read_parquet(worse(run, tmp_path))))
    assert any(
        line.startswith("factual         attribution   2/2 (100%) -> 1/2 (50%)") for line in drops
    )
    assert "all             attribution   3/3 (100%) -> 2/3 (67%)" in drops


def test_a_different_instrument_is_not_compared(run: Path, tmp_path: Path) -> None:
    baseline = gate.write_baseline(pd.read_parquet(run), tmp_path / "baseline.json")
    other = gate.baseline_from(pd.read_parquet(run)).model_copy(update={"model": "anthropic:x"})
    assert gate.compare(baseline, other)[0].startswith(
        "not comparable: baseline model is 'extractive'"
    )


def test_check_cli_exit_codes(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "baseline.json"
    assert main(["check", "--run", str(run), "--baseline", str(base), "--write-baseline"]) == 0
    assert main(["check", "--run", str(run), "--baseline", str(base)]) == 0
    assert "gate: ok" in capsys.readouterr().out
    assert main(["check", "--run", str(worse(run, tmp_path)), "--baseline", str(base)]) == 2
    out = capsys.readouterr().out
    assert out.startswith("gate: FAILED") and "attribution" in out
    assert main(["check", "--run", str(run), "--baseline", str(tmp_path / "none.json")]) == 1
    assert "no baseline" in capsys.readouterr().err


def test_eval_cli_prints_the_table_and_the_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["eval", "--trials", "1", "--limit", "3", "--out", str(tmp_path), "--experiment", "cli"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].split()[:3] == ["category", "n", "faithfulness"]
    parquet = Path(out.strip().splitlines()[-1].removeprefix("parquet: "))
    assert parquet.exists() and pd.read_parquet(parquet)["experiment"].iloc[0] == "cli"
    assert main(["eval", "--suite", "holdout"]) == 1
    assert "loads only with --holdout" in capsys.readouterr().err
    assert main(["eval", "--trials", "1", "--judge", "extractive"]) == 1
    assert "answerer's own model" in capsys.readouterr().err
    shutil.rmtree(tmp_path / "runs")
    assert main(["eval", "--resume", "nope", "--out", str(tmp_path)]) == 1
