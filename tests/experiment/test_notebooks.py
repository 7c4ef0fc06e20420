"""The climb a researcher cannot corrupt by accident (issue 25): a notebook run any way is
exploratory unless asked to record, a failed run never overwrites an earlier one, bad
parameters are refused on stderr before papermill runs, and a row that cannot be compared says
why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.runlogs import cut_after, trial_keys
from wikiqa.cli import main
from wikiqa.evals.climb import changelog
from wikiqa.experiment import StepFailed, execute, experiments_dir, printed
from wikiqa.experiment.notebooks import grid
from wikiqa.outputs import UnsafeWrite
from wikiqa.project import ROOT_ENV, project_root

EXPERIMENTS = experiments_dir()
SMALL = {"TRIALS": 1, "LIMIT": 2}


@pytest.mark.slow
def test_a_step_run_by_plain_papermill_is_exploratory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copied, run top to bottom the way papermill users do (no `experiment run`): nothing goes
    into the climb, the parquet lands in scratch, and the copy's name is not the original's."""
    import papermill as pm

    monkeypatch.setenv("WIKIQA_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv(ROOT_ENV, str(project_root()))  # the copy sits outside the project
    copy = tmp_path / "09_my_copy.ipynb"
    shutil.copy(EXPERIMENTS / "08_injection_defences.ipynb", copy)
    pm.execute_notebook(str(copy), str(tmp_path / "out.ipynb"), parameters=SMALL, cwd=str(tmp_path),
                        progress_bar=False)  # fmt: skip
    results = tmp_path / "results"
    assert changelog.read(results) == [] and not (results / "runs").exists()
    parquets = list((results / "scratch" / "runs").glob("*.parquet"))
    assert len(parquets) == 1 and "08-injection" not in parquets[0].name
    text = (tmp_path / "out.ipynb").read_text()
    assert "exploratory (not recorded)" in text and "08_injection_defences" not in text


@pytest.mark.slow
def test_a_failed_run_never_overwrites_the_earlier_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "results"
    notebook = EXPERIMENTS / "01_agent_baseline.ipynb"
    good = execute(notebook, SMALL | {"OUT": str(out)}, out)
    papermill = json.loads(good.read_text())["metadata"]["papermill"]
    # named as the repository knows them: no machine's path, not the .running name
    assert papermill["input_path"] == "experiments/01_agent_baseline.ipynb"
    assert papermill["output_path"] == good.name  # outside the repository: its name alone
    before = good.read_bytes()
    monkeypatch.setenv("WIKIQA_HOME", "/dev/null/x")  # the snapshot index cannot be built
    with pytest.raises(StepFailed) as failed:
        execute(notebook, SMALL | {"OUT": str(out)}, out)
    assert good.read_bytes() == before, "the earlier executed notebook is kept"
    assert f"the earlier {good.name} is kept" in str(failed.value)
    assert good.with_suffix(".failed.ipynb").exists() and "executed copy:" in str(failed.value)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-p", "TRIALS", "0"], "-p TRIALS 0: Input should be greater than or equal to 1"),
        (["-p", "TRIALS", "zero"], "-p TRIALS 'zero': Input should be a valid integer"),
        (["-p", "CONCURRENCY", "1000"], "-p CONCURRENCY 1000: Input should be less than or equal to 256"),
        (["-p", "LIMIT", "-3"], "-p LIMIT -3: Input should be greater than or equal to 1"),
        (["-p", "KIND", "bogus"], "-p KIND 'bogus': Input should be 'adhoc', 'baseline'"),
        (["-p", "TRAILS", "1"], "no parameter named 'TRAILS'"),
    ],
)  # fmt: skip
def test_bad_step_parameters_are_refused_before_papermill_runs(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["experiment", "run", str(EXPERIMENTS / "01_agent_baseline.ipynb"), *argv,
                 "--out", str(tmp_path)])  # fmt: skip
    assert code in (1, 2)
    assert message in capsys.readouterr().err
    assert not (tmp_path / "notebooks").exists(), "refused before anything ran"


def test_what_is_not_a_notebook_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truncated = tmp_path / "cut.ipynb"
    truncated.write_text('{"cells": [')
    assert main(["experiment", "run", str(truncated)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{truncated}: not a notebook" in err
    assert main(["experiment", "run", str(EXPERIMENTS / "README.md")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "README.md: not a notebook" in err


def test_compare_finds_exploratory_runs_by_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WIKIQA_RESULTS", str(tmp_path))
    ids = []
    for limit in ("2", "3"):
        assert main(["eval", "--trials", "1", "--limit", limit, "--json"]) == 0
        ids.append(json.loads(capsys.readouterr().out)["meta"]["run_id"])
    assert (tmp_path / "scratch" / "runs" / f"{ids[0]}.parquet").exists()
    assert main(["compare", *ids]) == 0
    assert f"A {ids[0]}" in capsys.readouterr().out
    assert main(["compare", ids[0], "20990101T000000Z-nope"]) == 1
    assert "scratch" in capsys.readouterr().err  # it says where it looked


def test_a_row_after_a_suite_change_says_why_it_has_no_delta(tmp_path: Path) -> None:
    from wikiqa.evals import RunConfig, evaluate

    suite = tmp_path / "suite.jsonl"
    lines = (EXPERIMENTS / "suite" / "dev.jsonl").read_text().splitlines()
    suite.write_text("\n".join(lines[:3]) + "\n")
    config = RunConfig(suite=str(suite), trials=1, out=tmp_path / "r", experiment="08_x")
    evaluate(config, "record", progress=False)
    suite.write_text("\n".join(lines[:4]) + "\n")  # the suite changed under the climb
    step = config.model_copy(update={"experiment": "09_y"})
    _, row = evaluate(step, "record", against="08_x", progress=False)
    assert row is not None and row.delta is None
    command = f"wikiqa experiment run experiments/08_x.ipynb --record -p SUITE {suite}"
    assert row.delta_note == (
        f"08_x has no row of this {suite} version to pair with: record it first ({command}), "
        "or run this step with --anchor"
    )
    assert command in (tmp_path / "r" / "CHANGELOG.md").read_text()


def test_a_step_cut_off_resumes_with_resume_and_runs_only_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long step outlives a session: its log is committed and the next session finishes it
    with RESUME, running only the trials the log lacks."""
    from wikiqa import experiment

    monkeypatch.setenv("WIKIQA_STEP", "09_resumed")
    namespace = {"TRIALS": 1, "LIMIT": 3, "OUT": str(tmp_path), "CHANGE": "c", "KIND": "model"}
    first = experiment.step(namespace)
    log = cut_after(tmp_path, first.meta.run_id, 1)
    again = experiment.step(namespace | {"RESUME": first.meta.run_id})
    assert again.meta.run_id == first.meta.run_id and again.trials_run == 2
    assert len(trial_keys(log)) == 3


def test_a_committed_log_resumes_into_the_folder_it_is_resumed_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log names no folder: resumed from a notebook (working directory experiments/), the
    run's row goes to the folder the resume was given."""
    from wikiqa.evals import RunConfig, evaluate, run_eval

    out = tmp_path / "results"
    first = run_eval(RunConfig(limit=3, trials=1, out=out, change="c"), progress=False)
    cut_after(out, first.meta.run_id, 1)
    elsewhere = tmp_path / "experiments"
    elsewhere.mkdir()
    monkeypatch.setenv(ROOT_ENV, str(project_root()))  # its suite: this project's dev
    monkeypatch.chdir(elsewhere)
    outcome, row = evaluate(RunConfig(limit=3, trials=1, out=out, change="c"), "record",
                            first.meta.run_id, progress=False)  # fmt: skip
    assert outcome.trials_run == 2 and outcome.meta.config.out == out
    assert row is not None and row.parquet == f"runs/{first.meta.run_id}.parquet"
    assert (out / "changelog.jsonl").exists() and not (elsewhere / "results").exists()


def _tiny_notebook(path: Path) -> Path:
    cells = [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "X = 1",
         "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {}, "source": "print(X * 2)", "outputs": [],
         "execution_count": None},
    ]  # fmt: skip
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    path.write_text(json.dumps({"cells": cells, "metadata": meta, "nbformat": 4,
                                "nbformat_minor": 5}))  # fmt: skip
    return path


@pytest.mark.slow
def test_the_executed_notebook_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    out, victim = tmp_path / "results", tmp_path / "victim.txt"
    victim.write_text("keep me")
    notebook = _tiny_notebook(tmp_path / "tiny.ipynb")
    (out / "notebooks").mkdir(parents=True)
    (out / "notebooks" / "tiny-x=3.running.ipynb").symlink_to(victim)
    executed = execute(notebook, {"X": 3}, out)
    assert victim.read_text() == "keep me"
    assert executed == out / "notebooks" / "tiny-x=3.ipynb" and not executed.is_symlink()
    assert "6" in printed(executed)
    (out / "notebooks" / "tiny-x=4.ipynb").symlink_to(victim)  # the final name itself
    with pytest.raises(UnsafeWrite, match="a symlink"):
        execute(notebook, {"X": 4}, out)
    assert victim.read_text() == "keep me"


def test_a_linked_notebooks_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "notebooks").symlink_to(elsewhere)
    with pytest.raises(UnsafeWrite, match="a symlink"):
        execute(_tiny_notebook(tmp_path / "tiny.ipynb"), {"X": 3}, out)
    assert list(elsewhere.iterdir()) == []


def test_a_base_name_is_never_pasted_into_code(tmp_path: Path) -> None:
    """`experiment new --from PATH` writes the base's name into the parameters cell as a string
    literal, whatever characters the file name holds."""
    import ast

    from wikiqa.experiment.notebooks import new_step

    stem = 'x" + str(__import__("os").getpid()) + "'
    base = tmp_path / f"{stem}.ipynb"
    shutil.copy(EXPERIMENTS / "01_agent_baseline.ipynb", base)
    folder = tmp_path / "experiments"
    folder.mkdir()
    created = new_step("try it", str(base), folder)
    cells = json.loads(created.read_text())["cells"]
    cell = next(c for c in cells if "parameters" in c["metadata"].get("tags", []))
    tree = ast.parse("".join(cell["source"]))
    values = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert isinstance(values["VS"], ast.Constant) and values["VS"].value == stem
    assert not any(isinstance(node, ast.Call) for node in ast.walk(tree))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[" * 100_000, "-p CHANGE: JSON nested deeper than"),
        ("9" * 5001, "-p CHANGE: invalid JSON"),
    ],
)
def test_a_parameter_value_json_cannot_read_is_one_line_naming_it(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from wikiqa.inputs import InputError

    with pytest.raises(InputError, match=message):
        grid([("CHANGE", value)])
    argv = [
        "experiment",
        "run",
        str(EXPERIMENTS / "01_agent_baseline.ipynb"),
        "-p",
        "CHANGE",
        value,
    ]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
