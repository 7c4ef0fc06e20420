"""Notebooks: committed clean, one parameters cell each, and the numbers each step records.

In `make test` nbval executes every offline step (`pytest --nbval-lax ... experiments`) and
tests/repo/test_rendered.py the notebooks in notebooks/; here steps 00-02, run once per session
through papermill with one trial (`recorded_steps`, tests/conftest.py), are asserted on by what
they recorded in the change log.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import RECORDED_STEPS
from tests.reports import cell, figures_table
from wikiqa.evals import resolve_suite
from wikiqa.evals.climb import changelog
from wikiqa.evals.labels.halves import half_of
from wikiqa.evals.labels.validation import compare, load_labels, report
from wikiqa.experiment import current_step, execute, experiments_dir, grid, load_run, model_figures
from wikiqa.sources import SnapshotSource

EXPERIMENTS = experiments_dir()
ROOT = EXPERIMENTS.parent
SOURCES = sorted(EXPERIMENTS.glob("*.ipynb")) + sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_the_steps_and_notebooks_the_workflow_needs() -> None:
    names = {p.stem for p in SOURCES}
    assert {"00_no_retrieval_baseline", "01_agent_baseline", "02_read_more_hits"} <= names
    assert {"quickstart", "hillclimb", "grader_validation", "failures"} <= names
    # the highest-numbered step that needs no optional extra (03 needs the local model)
    offline = [p for p in sorted(EXPERIMENTS.glob("[0-9][0-9]_*.ipynb")) if not _requires(p)]
    assert current_step() == offline[-1]


def _requires(path: Path) -> object:
    return (
        json.loads(path.read_text(encoding="utf-8"))["metadata"].get("wikiqa", {}).get("requires")
    )


def test_copying_the_latest_step_makes_the_copy_current(tmp_path: Path) -> None:
    # the README's loop: copy the last step to NN_<change>.ipynb and change one lever
    for step in EXPERIMENTS.glob("[0-9][0-9]_*.ipynb"):
        (tmp_path / step.name).write_bytes(step.read_bytes())
    latest = current_step(tmp_path)
    copy = f"{int(latest.name[:2]) + 1:02d}_my_change.ipynb"
    (tmp_path / copy).write_bytes(latest.read_bytes())
    assert current_step(tmp_path).name == copy
    needs_extra = json.loads((EXPERIMENTS / "03_local_llm.ipynb").read_text(encoding="utf-8"))
    assert needs_extra["metadata"]["wikiqa"]["requires"]
    (tmp_path / f"{int(copy[:2]) + 1:02d}_local.ipynb").write_text(
        json.dumps(needs_extra), encoding="utf-8"
    )
    assert current_step(tmp_path).name == copy  # one needing an extra is skipped


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
        # its title is numbered as its file (a renumbered step once kept its old title)
        assert source[0].startswith(f"# {path.name[:2]} · "), source[0].splitlines()[0]
        # a step holds only what it changes: its CHANGE and KIND, and its own levers
        for name in ["CHANGE", "KIND"]:
            assert f"\n{name} = " in "\n" + tagged[0], name
        assert not re.search(r"^(?:OUT|RECORD) = ", tagged[0], re.M), "the runner's, not the step's"
        assert any(
            s.lstrip("# ").startswith("the shared step") and "experiment.step(globals()" in s
            for s in source
        ), "the step calls the shared step"


def test_grid_expands_repeated_parameters() -> None:
    runs = grid([("TRIALS", "1"), ("MODEL", "extractive"), ("MODEL", "extractive:threshold=0.6")])
    assert runs == [
        {"TRIALS": 1, "MODEL": "extractive"},
        {"TRIALS": 1, "MODEL": "extractive:threshold=0.6"},
    ]
    assert grid([]) == [{}]
    assert grid([("LIMIT", "null")]) == [{"LIMIT": None}]


@pytest.fixture
def steps(recorded_steps: Path) -> dict[str, dict[str, object]]:
    """The three steps the session ran once (1 trial, whole dev suite, recorded in order; see
    tests/conftest.py): their change-log rows."""
    out = recorded_steps
    rows = {row.experiment: row.model_dump(mode="json") for row in changelog.read(out)}
    assert list(rows) == RECORDED_STEPS
    for name in RECORDED_STEPS:
        assert list((out / "notebooks").glob(f"{name}-trials=1.ipynb")), name
    rows["_out"] = {"path": str(out)}
    return rows


@pytest.mark.slow
def test_step_00_has_zero_faithfulness_and_attribution_by_definition(
    steps: dict[str, dict[str, object]],
) -> None:
    row = steps["00_no_retrieval_baseline"]
    dims = row["dimensions"]
    assert isinstance(dims, dict)
    assert dims["faithfulness"][0] == 0 and dims["faithfulness"][1] > 30
    assert dims["attribution"][0] == 0 and dims["attribution"][1] > 20
    assert row["kind"] == "baseline" and row["model"] == "extractive"


@pytest.mark.slow
def test_step_01_records_the_agent_baseline(steps: dict[str, dict[str, object]]) -> None:
    row = steps["01_agent_baseline"]
    dims = row["dimensions"]
    assert isinstance(dims, dict)
    assert dims["faithfulness"][0] >= 30 and dims["injection"] == [3, 3]
    # 13 before K2's "second-highest" stopped failing Everest; 15 before the short answers
    # and the corroboration check (a refused answer to an unanswerable question passes)
    assert row["tasks_pass"] == [16, 41]


@pytest.mark.slow
def test_step_02_changes_one_lever_and_records_its_effect(
    steps: dict[str, dict[str, object]],
) -> None:
    base, step = steps["01_agent_baseline"], steps["02_read_more_hits"]
    assert step["model"] == "extractive:hits_read=5" and step["kind"] == "retrieval"
    assert step["prompt_hash"] == base["prompt_hash"] and step["suite_hash"] == base["suite_hash"]
    assert step["dimensions"]["attribution"] == [17, 27]  # type: ignore[index]
    assert base["dimensions"]["attribution"] == [16, 27]  # type: ignore[index]
    out = Path(str(steps["_out"]["path"]))
    markdown = (out / "CHANGELOG.md").read_text()
    assert markdown.count("\n| 20") == 3 and "extractive hits_read 3 -> 5" in markdown
    assert (
        len([json.loads(line) for line in (out / "changelog.jsonl").read_text().splitlines()]) == 3
    )
    # the executed notebook says the paired Δ itself, as the change log's last column does
    (executed,) = (out / "notebooks").glob("02_read_more_hits*.ipynb")
    shown = executed.read_text()
    assert "paired Δ, tasks passing every dimension: " in shown
    assert changelog.delta_text(changelog.read(out)[-1]) in shown
    assert "vs 01_agent_baseline, p=" in changelog.delta_text(changelog.read(out)[-1])


LABELS = ROOT / "experiments" / "labels"
# Labels the graders were developed against; the set labelled at the first freeze (its totals were
# seen before one more change); the set labelled at the final freeze, never seen before it.
TUNED = ["grader_labels", "smollm2_labels", "hard_negatives", "extractive_public"]
HELD_OUT = ["heldout_extractive", "heldout2_extractive"]
# a real model's output: faithfulness's refusal rule was written on the first file, its ordinal
# rule and correctness's hedge rule on the second (so neither is held out any more)
QWEN = ["qwen_dev_labels", "qwen_fresh_labels"]
QWEN_HELD_OUT = ["qwen_public_labels"]  # Qwen on the public slice, labelled after both rules


def validated(
    names: list[str], snapshot: SnapshotSource, folder: Path = LABELS
) -> dict[str, object]:
    examples = [e for name in names for e in load_labels(folder / f"{name}.jsonl")]
    suites = [resolve_suite("dev"), resolve_suite("public")]
    return report(compare(examples, snapshot, None, suites))


def _reported_validation(column: str) -> tuple[dict[str, dict[str, int]], int, int]:
    """A column of the offline graders' figures table (results/reports/offline-graders.md), as
    `report` gives it: per dimension labelled, agree and needs_judge (each cell reads
    "agree/decided = rate [CI], undecided"); and the correctness false passes, of how many."""
    rows = figures_table("offline-graders.md", "## Figures")
    shape = re.compile(r"(\d+)/(\d+) = [\d.]+(?: \[[^\]]*\])?, (\d+)")
    dimensions = {}
    for name in ("faithfulness", "correctness", "completeness", "attribution", "calibration"):
        found = shape.fullmatch(cell(rows, "dimension", name, column))
        assert found, (name, column)
        agree, decided, undecided = map(int, found.groups())
        dimensions[name] = {
            "labelled": decided + undecided, "agree": agree, "needs_judge": undecided,
        }  # fmt: skip
    passes = re.match(r"(\d+)/(\d+) ", cell(rows, "dimension", "correctness false", column))
    assert passes, column
    return dimensions, int(passes[1]), int(passes[2])


@pytest.mark.slow
def test_grader_validation_is_the_reported_figure(snapshot: SnapshotSource) -> None:
    """The figures of the offline graders' write-up and the grader-validation notebook (`wikiqa
    validate`), read from the write-up's figures table: a grader change that moves them must
    update both."""
    summary = validated(TUNED, snapshot)
    column = "developed on (269 answers): agree where decided [95% CI], undecided"
    dimensions, false_passes, of = _reported_validation(column)
    assert summary["examples"] == 269
    assert summary["dimensions"] == dimensions
    assert summary["correctness_false_passes"] == false_passes == 2
    assert of == dimensions["correctness"]["labelled"] == 235


@pytest.mark.slow
def test_held_out_grader_validation_is_the_reported_figure(snapshot: SnapshotSource) -> None:
    """Real extractive answers on public tasks, labelled blind after the graders were frozen:
    the write-up's two held-out columns. The hedge rule (written on Qwen's labels) caught one
    false pass of the first."""
    columns = ["held out, first freeze (52)", "held out, final freeze (50)"]
    for name, column in zip(HELD_OUT, columns, strict=True):
        found = validated([name], snapshot)
        dimensions, false_passes, of = _reported_validation(column)
        assert found["dimensions"] == dimensions, name
        assert found["correctness_false_passes"] == false_passes == 1, name
        assert of == dimensions["correctness"]["labelled"], name


def test_qwen_grader_validation_is_the_reported_figure(snapshot: SnapshotSource) -> None:
    """Qwen's dev proposals, labelled blind (experiments/README.md reports these)."""
    qwen = validated(QWEN, snapshot)
    assert qwen["examples"] == 118
    assert qwen["dimensions"] == {
        "faithfulness": {"labelled": 118, "agree": 100, "needs_judge": 15},
        "correctness": {"labelled": 97, "agree": 77, "needs_judge": 20},
        "completeness": {"labelled": 97, "agree": 85, "needs_judge": 12},
        "attribution": {"labelled": 79, "agree": 78, "needs_judge": 0},
        "calibration": {"labelled": 83, "agree": 81, "needs_judge": 0},
    }
    assert qwen["correctness_false_passes"] == 0


@pytest.mark.slow
def test_qwen_held_out_grader_validation_is_the_reported_figure(snapshot: SnapshotSource) -> None:
    """Qwen's public-slice proposals, labelled blind by two labellers who never read the graders,
    after the last grader change: never tuned on (experiments/README.md)."""
    held = validated(QWEN_HELD_OUT, snapshot)
    assert held["examples"] == 100
    assert held["dimensions"] == {
        "faithfulness": {"labelled": 100, "agree": 78, "needs_judge": 18},
        "correctness": {"labelled": 77, "agree": 56, "needs_judge": 20},
        "completeness": {"labelled": 69, "agree": 53, "needs_judge": 16},
        "attribution": {"labelled": 69, "agree": 69, "needs_judge": 0},
        "calibration": {"labelled": 80, "agree": 80, "needs_judge": 0},
    }
    assert held["correctness_false_passes"] == 1


def test_qwen_cited_grader_validation_is_the_reported_figure(snapshot: SnapshotSource) -> None:
    """Step 16's proposals (sentences cited by number), labelled blind by two labellers who never
    read the graders, attribution relabelled by a third from a corrected brief; in their own
    folder, so the human rates `wikiqa outcomes --labels experiments/labels/*.jsonl` resolves
    with stay the ones reported (results/reports/qwen-climb.md, step 16; experiments/README.md)."""
    folder = ROOT / "experiments" / "labels_cited"
    cited = validated(["qwen16_cited"], snapshot, folder)
    assert cited["examples"] == 90
    assert all(e.note.strip() for e in load_labels(folder / "qwen16_cited.jsonl"))
    assert cited["dimensions"] == {
        "faithfulness": {"labelled": 90, "agree": 54, "needs_judge": 25},
        "correctness": {"labelled": 62, "agree": 41, "needs_judge": 20},
        "completeness": {"labelled": 55, "agree": 40, "needs_judge": 13},
        "attribution": {"labelled": 50, "agree": 45, "needs_judge": 0},
        "calibration": {"labelled": 66, "agree": 66, "needs_judge": 0},
    }
    assert cited["correctness_false_passes"] == 1


def test_restated_claims_check_is_the_reported_figure(snapshot: SnapshotSource) -> None:
    """Hard cases built from the question's words, written and labelled blind after the
    borrowed-words rule was frozen: its held-out check (experiments/README.md). Two unfaithful
    answers passed before it; one still does (a negation read as a denial)."""
    folder = ROOT / "experiments" / "labels_restated"
    examples = load_labels(folder / "restated.jsonl")
    assert len(examples) == 64 and all(e.note.strip() for e in examples)
    assert len({e.task_id for e in examples}) == 45
    frame = compare(examples, snapshot, None, [resolve_suite("dev"), resolve_suite("public")])
    decided = frame[frame.grader != "needs_judge"]
    assert len(decided) == 5 and int(decided.agree.sum()) == 3
    false_passes = decided[(decided.grader == "pass") & (decided.human == "fail")]
    assert list(false_passes.example) == ["rq-selfaware-0564-1"]  # "it rains ... has no ..."
    # the one true pass it decided, a bare "He didn't", is left to a judge since the negation
    # rules (written after this set, on negation.jsonl's tune half)
    assert int(((decided.grader == "pass") & (decided.human == "pass")).sum()) == 0


def test_negation_check_is_the_reported_figure(snapshot: SnapshotSource) -> None:
    """74 blind negation cases: the bare-denial and what-the-text-lacks rules were written on
    the tune half and frozen before the other half was read (experiments/README.md). On the held
    out half the offline tier agrees on 9 of the 15 it decides, and passes 3 unfaithful answers:
    negation is its blind spot, which these rules do not close."""
    path = ROOT / "experiments" / "labels_restated" / "negation.jsonl"
    examples = load_labels(path)
    assert len(examples) == 74 and len({e.task_id for e in examples}) == 43
    frame = compare(examples, snapshot, None, [resolve_suite("dev"), resolve_suite("public")])
    frame["half"] = [half_of(path, e) for e in frame.example]
    decided = frame[frame.grader != "needs_judge"]
    by_half = {
        half: (len(rows), int(rows["agree"].sum())) for half, rows in decided.groupby("half")
    }
    # (decided, agree); the clause rule, written later, leaves 3 false fails ("The sources don't
    # settle whether karma is real. They describe it ...") and 1 right fail to a judge
    assert by_half == {"holdout": (13, 9), "tune": (5, 2)}
    false_passes = decided[(decided.grader == "pass") & (decided.human == "fail")]
    assert sorted(false_passes.example) == [
        "ng-nq-dev-1485-2", "ng-selfaware-1751-2", "ng-selfaware-2348-2", "ng-truthfulqa-550-1",
    ]  # fmt: skip


def _blind(name: str, snapshot: SnapshotSource) -> tuple[pd.DataFrame, int, int]:
    """A blind set of labels_restated/, graded: its decided rows, its size, its task count."""
    examples = load_labels(ROOT / "experiments" / "labels_restated" / f"{name}.jsonl")
    assert all(e.note.strip() for e in examples)
    frame = compare(examples, snapshot, None, [resolve_suite("dev"), resolve_suite("public")])
    return frame[frame.grader != "needs_judge"], len(examples), len({e.task_id for e in examples})


def _errors(decided: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(false passes, false fails): where the offline tier and the blind label disagree."""

    def wrong(grader: str, human: str) -> list[str]:
        rows = decided[(decided.grader == grader) & (decided.human == human)]
        return sorted(rows.example)

    return wrong("pass", "fail"), wrong("fail", "pass")


def test_what_the_text_lacks_is_checked_on_a_blind_set_written_after_the_rule(
    snapshot: SnapshotSource,
) -> None:
    """64 answers that talk about what the text holds, written and labelled blind after the
    clause rule was frozen (experiments/README.md): the rule, chosen by a decision fixed in
    its commit, takes the offline tier's false fails from 12 to 0 and adds no false pass; 10
    of its 19 right fails stay decided."""
    decided, size, tasks = _blind("textlacks2", snapshot)
    assert (size, tasks) == (64, 31)
    assert _errors(decided) == ([], [])
    assert len(decided) == 18 and int(decided.agree.sum()) == 10  # 8 are n/a: no claim
    assert int(((decided.grader == "fail") & (decided.human == "fail")).sum()) == 10


def test_earlier_blind_sets_keep_their_reported_figures(snapshot: SnapshotSource) -> None:
    """The third negation set (its candidate rule was reverted on it) and the numbers set,
    both read before the clause rule was written: the figures experiments/README.md gives."""
    decided, size, tasks = _blind("negation2", snapshot)
    assert (size, tasks, len(decided), int(decided.agree.sum())) == (82, 40, 25, 20)
    assert _errors(decided) == (
        ["ng3-selfaware-1795-2"],  # "a cause cannot have an effect outside ...": not in NEGATION
        ["ng3-nq-dev-0391-1", "ng3-nq-test-0116-1", "ng3-nq-test-0567-1", "ng3-nq-test-1327-1"],
    )
    decided, size, tasks = _blind("textlacks_numbers", snapshot)
    assert (size, tasks, len(decided), int(decided.agree.sum())) == (74, 37, 46, 23)
    false_passes, false_fails = _errors(decided)
    assert false_passes == ["tn-iron-atomic-weight-2"]  # "26", iron's atomic number, not weight
    assert len(false_fails) == 7  # numbers a reader derives: "nine years, from 1922 to 1931"


def test_every_label_file_is_valid_and_every_example_has_a_reason() -> None:
    files = sorted(LABELS.glob("*.jsonl"))
    assert {f.stem for f in files} == set(TUNED + HELD_OUT + QWEN + QWEN_HELD_OUT)
    examples = [e for f in files for e in load_labels(f)]
    assert len(examples) >= 350
    assert all(e.note.strip() for e in examples)  # every label says why
    # the model's own text, never written for the graders: SmolLM2 and the extractive answerer
    by_models = [e for e in examples if e.id.startswith(("ext-", "hx-", "hy-")) or "-t0-" in e.id]
    assert len(by_models) >= 250


def test_model_figures_of_the_recorded_local_run_are_the_reported_ones() -> None:
    """SmolLM2's step 03, read from the extractive climb's figures table."""
    table = figures_table("extractive-climb.md", "### SmolLM2-135M, step 03")

    def reported(figure: str) -> str:
        return cell(table, "", figure, "SmolLM2-135M (03)")

    rows = [r for r in changelog.read(ROOT / "results") if r.experiment == "03_local_llm"]
    by_kind = {r.kind: load_run(ROOT / "results" / r.parquet) for r in rows}
    assert set(by_kind) == {"model", "grader"}, "the 03 run and its regraded rerun are committed"
    figures = model_figures(by_kind["model"])  # timed on a cold cache
    assert figures["trials"] == 41
    assert f"{figures['seconds_per_task']:.1f}" == reported("seconds per task") == "26.7"
    assert f"{round(figures['answered'] * 41)}/35" == reported("answerable trials answered")
    assert f"{round(figures['repair_needed'] * 41)}/41 trials" == reported("repair turn needed")
    ungrounded = f"{round(figures['ungrounded_refusals'] * 41)}/41"
    assert ungrounded == reported("loop refusals `ungrounded`") == "34/41"
    assert figures["no_decision_or_budget"] == 0.0
    # the grader rerun is the same agent (greedy decoding, replies served from the cache)
    again = model_figures(by_kind["grader"])
    for key in ("trials", "answered", "repair_needed", "ungrounded_refusals"):
        assert again[key] == figures[key], key


def test_brief_barely_shortens_what_qwen_writes_as_reported() -> None:
    """Output tokens per model call, 09 dev against 11 dev (`brief=1`), read from the Qwen
    climb's figures table."""
    table = [
        row for row in figures_table("qwen-climb.md", "### Headline figures")
        if row["figure"] == "output tokens per model call"
    ]  # fmt: skip
    reported = tuple(int(cell(table, "run", run, "value")) for run in ("09 dev", "11 dev"))
    runs = ROOT / "results" / "runs"
    base = model_figures(load_run(runs / "20261201T103646Z-09-qwen-baseline-c84497.parquet"))
    brief = model_figures(load_run(runs / "20261201T165859Z-11-qwen-brief-ee5a36.parquet"))
    pair = (round(base["output_tokens_per_call"]), round(brief["output_tokens_per_call"]))
    assert pair == reported == (109, 103)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_papermill_reads_every_parameter(path: Path) -> None:
    # papermill skips a line with two "=" (a comment like "threshold=0.6"), and then warns
    # "Passed unknown parameter" for every -p of it
    import re

    import papermill

    cell = next(
        c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
        if "parameters" in c["metadata"].get("tags", [])
    )  # fmt: skip
    assigned = re.findall(r"^([A-Z_][A-Z0-9_]*)\s*=", "".join(cell["source"]), re.MULTILINE)
    assert list(papermill.inspect_notebook(str(path))) == assigned


def test_experiment_run_skips_a_step_whose_extra_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the README's `wikiqa experiment run experiments/0*.ipynb` on a fresh clone reaches 03
    from wikiqa.cli import main
    from wikiqa.experiment import notebooks

    monkeypatch.setattr(notebooks, "EXTRA_MODULES", {"local": "wikiqa_no_such_module"})
    step = EXPERIMENTS / "03_local_llm.ipynb"
    assert notebooks.missing_extra(step) == "local"
    assert notebooks.missing_extra(EXPERIMENTS / "01_agent_baseline.ipynb") is None
    assert main(["experiment", "run", str(step), "--out", str(tmp_path)]) == 0
    assert "skipped, it needs the `local` extra" in capsys.readouterr().out
    assert not (tmp_path / "changelog.jsonl").exists()


@pytest.mark.slow
def test_a_copied_step_is_recorded_under_its_own_file_name(tmp_path: Path) -> None:
    # the README's loop: copy the last step, change one lever, run it; no cell to edit
    copy = tmp_path / "05_my_change.ipynb"
    copy.write_bytes((EXPERIMENTS / "01_agent_baseline.ipynb").read_bytes())
    out = tmp_path / "results"
    execute(copy, {"TRIALS": 1, "LIMIT": 2, "OUT": str(out), "RECORD": True}, out)
    rows = changelog.read(out)
    assert [r.experiment for r in rows] == ["05_my_change"]


@pytest.mark.slow
def test_exploratory_runs_stay_out_of_the_climb_and_recorded_ones_go_in(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from wikiqa.cli import main

    monkeypatch.setenv("WIKIQA_RESULTS", str(tmp_path))
    step = str(EXPERIMENTS / "01_agent_baseline.ipynb")
    small = ["-p", "TRIALS", "1", "-p", "LIMIT", "1"]
    # make eval / a plain run: exploration, into the git-ignored scratch area
    assert main(["experiment", "run", step, *small]) == 0
    assert "exploratory" in capsys.readouterr().out
    assert len(changelog.read(tmp_path / "scratch")) == 1 and not (tmp_path / "runs").exists()
    assert list((tmp_path / "scratch" / "notebooks").glob("01_agent_baseline*.ipynb"))
    # --record: the committed climb
    assert main(["experiment", "run", step, *small, "--record"]) == 0
    assert len(changelog.read(tmp_path)) == 1
    # -p OUT: the notebook and the parquet land together
    elsewhere = tmp_path / "elsewhere"
    assert main(["experiment", "run", step, *small, "-p", "OUT", str(elsewhere)]) == 0
    assert list((elsewhere / "runs").glob("*.parquet"))
    assert list((elsewhere / "notebooks").glob("*.ipynb"))
    # RECORD=false: no row, but the table all the same, and no change log named
    capsys.readouterr()
    assert main(["experiment", "run", step, *small, "-p", "RECORD", "false"]) == 0
    out = capsys.readouterr().out
    assert "category" in out and "not recorded" in out
    # a grid: one row per point, each labelled by its parameters
    grid = [
        "-p",
        "TRIALS",
        "1",
        "-p",
        "LIMIT",
        "1",
        "-p",
        "LIMIT",
        "2",
        "--out",
        str(tmp_path / "g"),
    ]
    assert main(["experiment", "run", step, *grid]) == 0
    changes = [r.change for r in changelog.read(tmp_path / "g")]
    base = "agent baseline: search, fetch, quote or refuse"
    assert changes == [f"{base} (-p TRIALS=1, LIMIT={n})" for n in (1, 2)]
    shown = capsys.readouterr().out
    assert "== the grid of 01_agent_baseline.ipynb" in shown and "\nLIMIT=2  " in shown
