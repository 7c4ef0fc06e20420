"""The frictions a new researcher met running steps, each fixed and held here: what a plain
papermill run refuses, what a rerun writes, what Ctrl-C says, what the terminal shows."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from wikiqa.experiment import ParameterError, experiments_dir
from wikiqa.experiment.step import injected, with_overrides

EXPERIMENTS = experiments_dir()
ROOT = EXPERIMENTS.parent
STEP = EXPERIMENTS / "08_injection_defences.ipynb"
WIKIQA = str(Path(sys.executable).parent / "wikiqa")


def _papermill(parameters: dict[str, Any], tmp_path: Path) -> Any:
    """Plain papermill, as the docs allow it (no `wikiqa experiment run`)."""
    import papermill

    os.environ["WIKIQA_RESULTS"] = str(tmp_path)
    try:
        with pytest.raises(papermill.PapermillExecutionError) as failed:
            papermill.execute_notebook(str(STEP), str(tmp_path / "out.ipynb"),
                                       parameters=parameters, cwd=str(EXPERIMENTS),
                                       progress_bar=False)  # fmt: skip
    finally:
        os.environ.pop("WIKIQA_RESULTS", None)
    return failed.value


@pytest.mark.slow
def test_plain_papermill_refuses_a_name_its_parameters_cell_does_not_declare(
    tmp_path: Path,
) -> None:
    error = _papermill({"TRAILS": 1}, tmp_path)
    assert error.ename == "ParameterError" and "'TRAILS'" in error.evalue
    assert not (tmp_path / "runs").exists()  # refused before the run


def test_the_injected_cell_is_read_against_the_common_and_the_notebooks_own_names() -> None:
    history = ["", 'CHANGE = "x"\nMY_LEVER = 2', "# Parameters\nMY_LEVER = 3\nTRIALS = 1\n"]
    assert injected({"_ih": history}) == ["MY_LEVER", "TRIALS"]
    with pytest.raises(ParameterError, match="'TRAILS'"):
        injected({"_ih": [*history[:2], "# Parameters\nTRAILS = 1\n"]})
    assert injected({"_ih": ["x = 1"]}) == []  # Jupyter: nothing injected, nothing to check


@pytest.mark.slow
def test_plain_papermill_cannot_record_and_the_docs_do_not_say_it_can(tmp_path: Path) -> None:
    error = _papermill({"RECORD": True, "TRIALS": 1, "LIMIT": 1}, tmp_path)
    assert error.ename == "ParameterError" and "wikiqa experiment run NOTEBOOK --record" in (
        error.evalue
    )
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in page.read_text().splitlines():
            if "RECORD = True" in line:
                assert "Jupyter" in line, f"{page.name}: {line}"


def test_a_p_override_is_in_the_rows_change_text() -> None:
    namespace = {"TRIALS": 1, "LIMIT": 10, "OUT": "x", "RECORD": True, "ABSTAIN_BELOW": 0.3}
    given = ["OUT", "RECORD", "TRIALS", "LIMIT", "ABSTAIN_BELOW"]
    assert with_overrides("abstain", given, namespace) == (
        "abstain (-p TRIALS=1, LIMIT=10, ABSTAIN_BELOW=0.3)"
    )
    assert with_overrides("abstain", ["OUT", "RECORD"], namespace) == "abstain"


@pytest.mark.slow
def test_a_rerun_that_adds_nothing_runs_nothing_and_writes_nothing(
    tmp_path: Path, tiny: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikiqa.evals import NothingNew, RunConfig, evaluate
    from wikiqa.evals.running import runner

    monkeypatch.setattr(runner, "git_sha", lambda: "abc1234")  # a clean commit
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({
        "id": "hopper", "category": "factual", "question": "Who developed FLOW-MATIC?",
        "dimensions": ["faithfulness"], "reference_answer": "Grace Hopper.",
        "expected_sources": ["Grace Hopper"], "should_refuse": False}) + "\n")  # fmt: skip
    config = RunConfig(suite=str(suite), trials=1, out=tmp_path / "r", experiment="01_x")
    _, row = evaluate(config, "record", source=tiny, progress=False)
    assert row is not None
    before = sorted((tmp_path / "r" / "runs").iterdir())
    with pytest.raises(NothingNew, match=row.run_id) as again:
        evaluate(config, "record", source=tiny, progress=False)
    assert again.value.row.run_id == row.run_id
    assert sorted((tmp_path / "r" / "runs").iterdir()) == before  # no parquet, cassette or log


@pytest.mark.slow
def test_a_step_that_adds_nothing_keeps_the_executed_notebook_it_had(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wikiqa.cli import main

    notebook = tmp_path / "01_again.ipynb"
    raising = (
        "from wikiqa.evals import NothingNew\nfrom wikiqa.evals.climb import ChangelogRow\n"
        "row = ChangelogRow(date='d', run_id='20261201T000000Z-01-x-abcdef', experiment='01_x', "
        "change='', kind='adhoc', holdout=False, suite='dev', suite_hash='h', model='m', "
        "judge=None, source='snapshot', source_hash=None, prompt_hash='p', git_sha='g', "
        "trials=1, dimensions={}, tasks_pass=None, pass_at_1=0.0, needs_judge=0, errors=0, "
        "parquet='runs/x.parquet')\nraise NothingNew(row)"
    )
    notebook.write_text(json.dumps({"cells": [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "OUT = None",
         "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {}, "source": raising, "outputs": [],
         "execution_count": None}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}))  # fmt: skip
    earlier = tmp_path / "out" / "notebooks" / "01_again.ipynb"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("the recorded run's executed notebook")
    assert main(["experiment", "run", str(notebook), "--out", str(tmp_path / "out")]) == 0
    shown = capsys.readouterr().out
    assert "not recorded: nothing new" in shown and "20261201T000000Z-01-x-abcdef" in shown
    assert earlier.read_text() == "the recorded run's executed notebook"
    assert sorted(p.name for p in earlier.parent.iterdir()) == ["01_again.ipynb"]


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [("SUITE", "nosuch", "nosuch: no such suite"), ("ABSTAIN_BELOW", "2", "less than or equal")],
)
def test_a_bad_suite_or_value_is_refused_before_papermill_starts(
    name: str, value: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wikiqa.cli import main

    assert main(["experiment", "run", str(STEP), "-p", name, value, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "notebooks").exists()  # no .failed.ipynb


def test_a_step_needing_qwen_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from wikiqa.cli import main
    from wikiqa.experiment import notebooks

    monkeypatch.setattr(notebooks, "EXTRA_MODULES", {"qwen": "wikiqa_no_such_module"})
    step = EXPERIMENTS / "19_qwen_reading.ipynb"
    assert main(["experiment", "run", str(step), "--out", str(tmp_path)]) == 0
    assert "needs the `qwen` extra (`make qwen` installs llama.cpp and the model)" in (
        capsys.readouterr().out
    )


def test_the_terminal_table_is_narrow_and_says_which_interval_and_what_to_do_about_undecided() -> (
    None
):
    from wikiqa import experiment
    from wikiqa.evals.analysis import summarize
    from wikiqa.evals.analysis.render import render_cells

    run = ROOT / "results" / "runs" / "20261130T152309Z-08-injection-defences-86511e.parquet"
    text = render_cells(summarize(experiment.load_run(run)))
    assert "12/12 [76,100] ?16" in text  # correctness on dev: 16 undecided
    assert max(len(line) for line in text.splitlines()) <= 140  # was 226
    assert "clustered by task, 3 trials each (CHANGELOG.md: Wilson's" in text
    assert "never a pass" in text and "--judge SPEC" in text and "wikiqa outcomes" in text
    header = (ROOT / "results" / "CHANGELOG.md").read_text().split("|", 1)[0]
    assert "Wilson interval" in header and "clustered by task" in header


def test_every_curl_to_the_api_carries_the_token() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        commands = page.read_text().replace("\\\n", " ").splitlines()
        for command in (c for c in commands if "curl" in c and "/api/" in c):
            assert "Authorization: Bearer $WIKIQA_API_TOKEN" in command, f"{page.name}: {command}"


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([WIKIQA, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900, check=False)  # fmt: skip


@pytest.mark.slow
def test_a_recorded_step_prints_its_delta_keeps_progress_and_kernel_noise_out_and_the_climb_reads(
    tmp_path: Path,
) -> None:
    env = os.environ | {"WIKIQA_RESULTS": str(tmp_path)}
    small = ["-p", "TRIALS", "1", "-p", "LIMIT", "7"]
    first = _run(["experiment", "run", str(STEP), *small, "--record"], env)
    assert first.returncode == 0, first.stderr
    missing = "07_sentence_boundaries has no row of this dev version to pair with: record it first"
    assert first.stdout.startswith(f"note: {missing}")  # said before the step runs
    assert f"Δ tasks pass-all:   - ({missing}" in first.stdout
    second = _run(["experiment", "run", str(STEP), *small, "-p", "ABSTAIN_BELOW", "0.9",
                   "-p", "VS", STEP.stem, "--record"], env)  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert re.search(
        r"Δ tasks pass-all:   [+-]\d\.\d{3} \[.*\] vs 08_injection_defences", second.stdout
    )
    for done in (first, second):  # progress on the terminal; no kernel noise anywhere
        assert "trials done" in done.stderr
        for noise in ("without encryption", "KeyboardInterrupt", "Traceback"):
            assert noise not in done.stdout + done.stderr
    executed = sorted((tmp_path / "notebooks").glob("08_*.ipynb"))
    assert len(executed) == 2 and not any("trials done" in p.read_text() for p in executed)
    rows = [json.loads(line) for line in (tmp_path / "changelog.jsonl").read_text().splitlines()]
    assert rows[1]["change"].endswith("(-p TRIALS=1, LIMIT=7, ABSTAIN_BELOW=0.9)")
    # the hillclimb, run from the shell, says what it found
    climb = _run(["experiment", "run", "notebooks/hillclimb.ipynb"], env)
    assert climb.returncode == 0, climb.stderr
    assert "2 recorded runs in 1 lines" in climb.stdout
    assert f"B {rows[1]['run_id']}" in climb.stdout and "tasks passing every dimension" in (
        climb.stdout
    )
    assert "--record adds it" not in climb.stdout


@pytest.mark.slow
def test_a_step_runs_its_own_agent_on_the_held_out_split_once(tmp_path: Path) -> None:
    env = os.environ | {"WIKIQA_RESULTS": str(tmp_path)}
    small = ["-p", "TRIALS", "1", "-p", "LIMIT", "3", "-p", "ABSTAIN_BELOW", "0.2"]
    first = _run(["experiment", "run", str(STEP), *small, "--holdout"], env)
    assert first.returncode == 0, first.stderr
    rows = [json.loads(line) for line in (tmp_path / "changelog.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["holdout"] is True and rows[0]["suite"] == "holdout"
    # the step's own declaration went to the held-out run: its name and its levers
    assert rows[0]["experiment"] == "08_injection_defences" and rows[0]["trials"] == 1
    assert rows[0]["change"].endswith("(-p TRIALS=1, LIMIT=3, ABSTAIN_BELOW=0.2)")
    again = _run(["experiment", "run", str(STEP), *small, "--holdout"], env)
    assert again.returncode == 1 and "was already run" in again.stderr
    assert len((tmp_path / "changelog.jsonl").read_text().splitlines()) == 1
    hillclimb = _run(["experiment", "run", "notebooks/hillclimb.ipynb", "--holdout"], env)
    assert hillclimb.returncode == 1 and "this is not a step" in hillclimb.stderr


@pytest.mark.slow
def test_ctrl_c_names_the_run_and_its_resume_command_and_leaves_no_stray_files(
    tmp_path: Path,
) -> None:
    env = os.environ | {"WIKIQA_RESULTS": str(tmp_path)}
    args = [WIKIQA, "experiment", "run", str(STEP), "-p", "TRIALS", "1", "-p", "SUITE", "public",
            "-p", "CONCURRENCY", "1", "--record"]  # fmt: skip
    child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.time() + 300
    while time.time() < deadline:  # until a few trials are in the run's log
        logs = list((tmp_path / "runs").glob("*.log.jsonl"))
        if logs and len(logs[0].read_text().splitlines()) > 3:
            break
        time.sleep(0.5)
    os.killpg(child.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
    out, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    run_id = logs[0].name.removesuffix(".log.jsonl")
    assert f"interrupted: run {run_id} keeps its" in err
    assert f"-p RESUME {run_id}" in err and "--record -p TRIALS 1 -p SUITE public" in err
    assert "Traceback" not in out + err and "DeadKernelError" not in out + err
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        f"{run_id}.cassette.jsonl.gz",
        f"{run_id}.log.jsonl",
    ]  # the log and its cassette, which a resume finishes
    assert (
        not list((tmp_path / "notebooks").glob("*")) if (tmp_path / "notebooks").exists() else True
    )
