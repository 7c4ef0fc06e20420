"""A Δ compares like with like: `experiment new --from STEP` names the step it changes, a Δ's
default base ran the same model, source and judge, and one that did not says so everywhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from wikiqa.evals import RunConfig, evaluate
from wikiqa.evals.climb import changelog
from wikiqa.models import ExtractiveModel
from wikiqa.sources import SnapshotSource

ROOT = Path(__file__).resolve().parents[3]
FULL = ["faithfulness", "correctness", "completeness", "attribution", "calibration"]
TASKS = [
    {"id": "flow-matic", "category": "factual", "question": "Who developed the FLOW-MATIC language?",
     "dimensions": FULL, "reference_answer": "Grace Hopper.", "expected_sources": ["Grace Hopper"],
     "should_refuse": False, "asserts": ["icontains:Hopper"]},
    {"id": "everest", "category": "factual", "question": "What is the highest mountain on Earth?",
     "dimensions": FULL, "reference_answer": "Mount Everest.", "expected_sources": ["Mount Everest"],
     "should_refuse": False, "asserts": ["icontains:Everest"]},
]  # fmt: skip


class OtherModel(ExtractiveModel):
    """The extractive policy under another model's name, served on a loopback port."""

    spec = "openai:other-model@http://127.0.0.1:9/v1"


def _record(out: Path, suite: Path, tiny: SnapshotSource, name: str, **runner: Any) -> Any:
    config = RunConfig(suite=str(suite), trials=1, out=out, experiment=name, kind="prompt")
    against = runner.pop("against", None)
    return evaluate(config, "record", against=against, source=tiny, progress=False, **runner)[1]


def test_a_delta_is_against_the_named_step_only_and_an_unlike_one_says_so(
    tmp_path: Path, tiny: SnapshotSource
) -> None:
    from wikiqa import experiment

    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    out = tmp_path / "results"
    first = _record(out, suite, tiny, "01_extractive")
    other = _record(out, suite, tiny, "09_other", model=OtherModel(), against="01_extractive")
    third = _record(out, suite, tiny, "10_extractive_again")
    named = _record(out, suite, tiny, "11_against_other", against="09_other")
    # a row with no VS has no Δ: it is never paired with whatever was recorded before it
    assert third.delta is None and third.delta_note == "no base named (a step's VS)"
    assert other.delta.vs == first.run_id and named.delta.vs == other.run_id
    markdown = (out / "CHANGELOG.md").read_text()
    lines = {line.split(" | ")[1]: line for line in markdown.splitlines() if line.count(" | ") > 5}
    unlike = "not like with like: model extractive -> other-model"
    assert (
        unlike in lines["09_other"]
        and unlike.replace("extractive -> other-model", "other-model -> extractive")
        in lines["11_against_other"]
    )
    assert "+0.000 [-0.66, +0.66] vs 01_extractive, p=1.00" in lines["09_other"]
    # the terminal's line and the hillclimb's "did it help?" say it too
    assert unlike in experiment.delta_line(other, out)
    assert experiment.unlike_runs(first.run_id, other.run_id, out) == [
        "model extractive -> other-model"
    ]
    assert experiment.latest_pair(out) == (other.run_id, named.run_id)  # the row's own base
    climb = experiment.climb(out)
    ours, theirs = f"extractive · {first.suite}", f"other-model · {first.suite}"
    assert list(climb["line"]) == [ours, theirs, ours, ours]
    lines_frame = experiment.lines(climb)
    assert list(lines_frame["line"]) == [ours, theirs]
    assert list(lines_frame["runs"]) == [3, 1] and lines_frame["newest"][0] == "11_against_other"


def test_a_port_is_not_a_model_and_an_option_is_a_lever() -> None:
    from wikiqa.registry import model_levers

    a = "openai:qwen2.5-coder-1.5b@http://127.0.0.1:8080/v1;tool_choice=required"
    b = "openai:qwen2.5-coder-1.5b@http://127.0.0.1:49941/v1;tool_choice=required,brief=1"
    assert model_levers(a)[0] == model_levers(b)[0] == "qwen2.5-coder-1.5b"
    assert model_levers(b)[1] == "tool_choice=required,brief=1"
    assert model_levers("extractive:abstain=0.4") == ("extractive", "abstain=0.4")
    assert model_levers("anthropic:claude-x") == ("claude-x", "")


def test_the_committed_changelog_flags_every_cross_model_delta() -> None:
    rows = changelog.read(ROOT / "results")
    by_id = {r.run_id: r for r in rows}
    crossing = [r for r in rows if r.delta and changelog.unlike(by_id[r.delta.vs], r)]
    assert {r.experiment for r in crossing} >= {"03_local_llm", "09_qwen_baseline"}
    markdown = (ROOT / "results" / "CHANGELOG.md").read_text()
    table = markdown[markdown.index("| date |") :]
    assert table.count("not like with like") == len(crossing)
    # significance is never claimed across models: step 30 vs step 25 (Qwen vs the extractive
    # answerer, p = 0.04) is shown with its p and what differs, not in bold
    rows_text = [line for line in table.splitlines() if "not like with like" in line]
    assert rows_text and not any("**significant**" in line for line in rows_text)
    thirty = next(line for line in rows_text if "| 30_qwen_reading_public2 |" in line)
    assert (
        "+0.032 [+0.00, +0.06] vs 25_" in thirty and "p=0.04 (not like with like: model" in thirty
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project's step notebooks in a project of its own."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "experiments").mkdir()
    for step in (ROOT / "experiments").glob("[0-9][0-9]_*.ipynb"):
        shutil.copy(step, tmp_path / "experiments" / step.name)
    monkeypatch.setenv("WIKIQA_ROOT", str(tmp_path))
    return tmp_path


def test_experiment_new_copies_a_step_and_names_it_as_the_base(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import papermill

    from wikiqa.cli import main

    last = max(int(p.name[:2]) for p in (project / "experiments").glob("[0-9][0-9]_*.ipynb"))
    assert main(["experiment", "new", "abstain at 0.3", "--from", "08"]) == 0
    created = project / "experiments" / f"{last + 1}_abstain_at_0_3.ipynb"
    assert f"experiments/{last + 1}_abstain_at_0_3.ipynb" in capsys.readouterr().out
    data = json.loads(created.read_text())
    assert data["metadata"]["wikiqa"]["from"] == "08_injection_defences"
    assert all(not c.get("outputs") for c in data["cells"] if c["cell_type"] == "code")
    declared = papermill.inspect_notebook(str(created))
    assert declared["VS"]["default"] == '"08_injection_defences"'
    assert declared["CHANGE"]["default"] == '"abstain at 0.3"'
    assert declared["ABSTAIN_BELOW"]["default"] == "0.4"  # the base's levers are kept
    # the new step is the current one, and a step that needs an extra keeps that need
    from wikiqa.experiment import current_step, requires

    assert current_step(project / "experiments") == created
    assert main(["experiment", "new", "reading, two leads", "--from", "19_qwen_reading"]) == 0
    assert requires(project / "experiments" / f"{last + 2}_reading_two_leads.ipynb") == "qwen"


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["experiment", "new", "x", "--from", "99"], "99: no such step"),
     (["experiment", "new", "!!", "--from", "08"], "needs a letter or a digit")],
)  # fmt: skip
def test_experiment_new_refuses_an_unknown_base_or_an_empty_name(
    project: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from wikiqa.cli import main

    before = sorted(p.name for p in (project / "experiments").iterdir())
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in (project / "experiments").iterdir()) == before
