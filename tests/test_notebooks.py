"""Notebooks: committed clean, one parameters cell each, and the numbers each step records.

nbval executes every notebook offline in `make test` (`pytest --nbval-lax experiments
notebooks`); here papermill runs each experiment with small parameters and we assert on what it
recorded in the change log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikiqa.evals import changelog
from wikiqa.evals.validation import MODEL_LABELS, agreement, compare, load_labels
from wikiqa.experiment import EXPERIMENTS, current_step, execute, grid, load_run, model_figures
from wikiqa.sources import SnapshotSource

ROOT = EXPERIMENTS.parent
SOURCES = sorted(EXPERIMENTS.glob("*.ipynb")) + sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_the_steps_and_notebooks_the_workflow_needs() -> None:
    names = {p.stem for p in SOURCES}
    assert {"00_no_retrieval_baseline", "01_agent_baseline", "02_read_more_hits"} <= names
    assert {"quickstart", "hillclimb", "grader_validation", "failures"} <= names
    assert current_step().stem == "02_read_more_hits"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_source_notebooks_have_no_outputs_and_one_parameters_cell(path: Path) -> None:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    source = ["".join(c["source"]) for c in cells]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert not [c for c in code if c.get("outputs") or c.get("execution_count")], (
        "outputs committed"
    )
    tagged = [
        s
        for c, s in zip(cells, source, strict=True)
        if "parameters" in c["metadata"].get("tags", [])
    ]
    assert len(tagged) == 1
    for line in tagged[0].splitlines():  # every parameter says its allowed values
        if "=" in line and not line.startswith("#"):
            assert "#" in line, line
    if path.parent == EXPERIMENTS:
        assert cells[0]["cell_type"] == "markdown" and "Hypothesis" in source[0]
        for name in [
            "MODEL",
            "JUDGE",
            "SOURCE",
            "SUITE",
            "TRIALS",
            "CONCURRENCY",
            "CHANGE",
            "KIND",
        ]:
            assert f"\n{name} = " in "\n" + tagged[0], name
        assert "experiment.record(outcome)" in source[-1]


def test_grid_expands_repeated_parameters() -> None:
    runs = grid([("TRIALS", "1"), ("MODEL", "extractive"), ("MODEL", "extractive:threshold=0.6")])
    assert runs == [
        {"TRIALS": 1, "MODEL": "extractive"},
        {"TRIALS": 1, "MODEL": "extractive:threshold=0.6"},
    ]
    assert grid([]) == [{}]
    assert grid([("LIMIT", "null")]) == [{"LIMIT": None}]


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    """Run the three steps once (1 trial, whole dev suite) and return their change-log rows."""
    out = tmp_path_factory.mktemp("results")
    rows = {}
    for name in ["00_no_retrieval_baseline", "01_agent_baseline", "02_read_more_hits"]:
        executed = execute(EXPERIMENTS / f"{name}.ipynb", {"TRIALS": 1, "OUT": str(out)}, out)
        assert executed.exists() and executed.parent == out / "notebooks"
        rows[name] = changelog.read(out)[-1]
    rows["_out"] = {"path": str(out)}
    return rows


def test_step_00_has_zero_faithfulness_and_attribution_by_definition(
    steps: dict[str, dict[str, object]],
) -> None:
    row = steps["00_no_retrieval_baseline"]
    dims = row["dimensions"]
    assert isinstance(dims, dict)
    assert dims["faithfulness"][0] == 0 and dims["faithfulness"][1] > 30
    assert dims["attribution"][0] == 0 and dims["attribution"][1] > 20
    assert row["kind"] == "baseline" and row["model"] == "extractive"


def test_step_01_records_the_agent_baseline(steps: dict[str, dict[str, object]]) -> None:
    row = steps["01_agent_baseline"]
    dims = row["dimensions"]
    assert isinstance(dims, dict)
    assert dims["faithfulness"][0] >= 30 and dims["injection"] == [3, 3]
    assert row["tasks_pass"] == [13, 41]


def test_step_02_changes_one_lever_and_records_its_effect(
    steps: dict[str, dict[str, object]],
) -> None:
    base, step = steps["01_agent_baseline"], steps["02_read_more_hits"]
    assert step["model"] == "extractive:hits_read=5" and step["kind"] == "retrieval"
    assert step["prompt_hash"] == base["prompt_hash"] and step["suite_hash"] == base["suite_hash"]
    assert step["dimensions"]["attribution"] == [16, 27]  # type: ignore[index]
    assert base["dimensions"]["attribution"] == [15, 27]  # type: ignore[index]
    out = Path(str(steps["_out"]["path"]))
    markdown = (out / "CHANGELOG.md").read_text()
    assert markdown.count("\n| 20") == 3 and "extractive hits_read 3 -> 5" in markdown
    assert (
        len([json.loads(line) for line in (out / "changelog.jsonl").read_text().splitlines()]) == 3
    )


def test_grader_agreement_with_human_labels(snapshot: SnapshotSource) -> None:
    examples = load_labels()
    assert len(examples) >= 20
    table = agreement(compare(examples, snapshot))
    rate = {str(k): float(v) for k, v in table["rate"].items()}
    assert rate["attribution"] == rate["calibration"] == 1.0 and rate["completeness"] >= 0.95
    assert rate["correctness"] >= 0.9
    assert rate["faithfulness"] >= 0.8
    assert int(table["needs_judge"]["faithfulness"]) == 4


def test_grader_agreement_on_smollm2_text_is_the_reported_figure(snapshot: SnapshotSource) -> None:
    """The figure in the README and the grader-validation notebook: the offline tier on what
    SmolLM2-135M really proposed (experiment 03), against hand labels. The offline tier is weak
    on model text and this pins how weak: a grader change that moves these counts must update
    the README with them."""
    examples = load_labels(MODEL_LABELS)
    assert len(examples) >= 20
    kinds = {e.answer.kind for e in examples}
    assert kinds == {"answer", "refusal"}
    table = agreement(compare(examples, snapshot))
    agree = {str(k): int(v) for k, v in table["agree"].items()}
    labelled = {str(k): int(v) for k, v in table["labelled"].items()}
    assert labelled == {"faithfulness": 53, "correctness": 46, "completeness": 46,
                        "attribution": 39, "calibration": 38}  # fmt: skip
    assert agree == {"faithfulness": 46, "correctness": 42, "completeness": 38,
                     "attribution": 39, "calibration": 38}  # fmt: skip


def test_model_figures_of_the_recorded_local_run_are_the_reported_ones() -> None:
    runs = sorted((ROOT / "results" / "runs").glob("*-03-local-llm-*.parquet"))
    assert runs, "experiment 03's run is committed in results/runs"
    figures = model_figures(load_run(runs[-1]))
    assert figures["trials"] == 41
    assert round(figures["seconds_per_task"], 1) == 26.7
    assert round(figures["answered"] * 41) == 4
    assert round(figures["repair_needed"] * 41) == 36
    assert round(figures["ungrounded_refusals"] * 41) == 34
    assert figures["no_decision_or_budget"] == 0.0
