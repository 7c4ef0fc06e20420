"""What the step notebooks share, outside papermill: the climb, and where runs are written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_the_climb_keeps_the_order_runs_were_recorded_and_pairs_the_newest(
    tmp_path: Path,
) -> None:
    """Sorting by suite made "the last run" the last public row, not the newest (issue 25):
    the climb is chronological, and the newest run is compared with its suite's previous row."""
    from wikiqa.experiment import climb, latest_pair

    rows: list[dict[str, object]] = [
        {"date": "d", "run_id": f"r{i}", "experiment": f"0{i}_x", "change": "", "kind": "k",
         "holdout": False, "suite": suite, "suite_hash": "h", "model": "m", "judge": None,
         "source": "snapshot", "source_hash": None, "prompt_hash": "p", "git_sha": "g",
         "trials": 1, "dimensions": {}, "tasks_pass": [i, 9], "pass_at_1": 0.0,
         "needs_judge": 0, "errors": 0, "parquet": f"runs/r{i}.parquet"}
        for i, suite in enumerate(["dev", "public", "dev", "public"])
    ]  # fmt: skip
    (tmp_path / "changelog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    frame = climb(tmp_path)
    assert list(frame["suite"]) == ["dev", "public", "dev", "public"]
    assert list(frame["run_id"]) == ["r0", "r1", "r2", "r3"] and list(frame["row"]) == [1, 2, 3, 4]
    # the newest row has no Δ: "did it help?" names no base rather than another row
    assert latest_pair(tmp_path) == (None, "r3")
    assert list(frame["tasks_low"].round(2))[:1] == [0.0] and frame["Δ tasks [95% CI]"][0] == "-"
    assert frame["tasks"].iloc[0] == "0/9 [0.00, 0.30]"


@pytest.mark.parametrize(
    "name",
    ["X=1;open(chr(47).join(['','tmp','PWNED']),'w');Y", "TRAILS", "import os", "out", "OUT2"],
)
def test_only_declared_parameter_names_reach_papermill(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23, item 9: papermill pastes `-p NAME` into code as written (a name ran code and
    created /tmp/PWNED), and a typo silently ran the defaults. Refused before papermill runs."""
    from wikiqa import experiment
    from wikiqa.cli import main

    def never(*args: object, **kwargs: object) -> Path:
        raise AssertionError("papermill ran")

    monkeypatch.setattr(experiment, "execute", never)
    notebook = str(experiment.experiments_dir() / "01_agent_baseline.ipynb")
    argv = ["experiment", "run", notebook, "-p", "LIMIT", "1", "-p", name, "1"]
    assert main([*argv, "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no parameter named" in err and "TRIALS" in err  # says what it does declare
    assert not list(tmp_path.rglob("*.ipynb"))
