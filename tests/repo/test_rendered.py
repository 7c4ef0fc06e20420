"""What a reader sees (issue 25): every notebook in notebooks/ and one executed step, rendered to
HTML as nbconvert does, with no traceback and no absolute machine path anywhere in it.

This is where `make test` executes the notebooks in notebooks/ (its nbval run executes the
steps in experiments/): papermill stops on a cell's error, as nbval does."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from wikiqa.experiment import execute, experiments_dir

EXPERIMENTS = experiments_dir()
ROOT = EXPERIMENTS.parent
# an absolute path of this machine or any other: /work/..., /home/..., /root/..., /tmp/...
ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:work|home|root|tmp|Users|var/folders)/[\w.-]+")


def _html(notebook: Path) -> str:
    import nbformat
    from nbconvert import HTMLExporter

    node = nbformat.read(notebook, as_version=4)  # type: ignore[no-untyped-call]
    body, _ = HTMLExporter().from_notebook_node(node)  # type: ignore[no-untyped-call]
    return re.sub(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+", "data:image", str(body))


@pytest.fixture(scope="module")
def rendered(
    recorded_steps: Path, session_home: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """The newest of the session's recorded steps (run in a project outside the checkout, as
    `experiment run --record` writes them there; tests/conftest.py), rendered; then the
    notebooks in notebooks/ run over those runs and rendered (written to a folder of their
    own: the recorded runs are only read)."""
    from wikiqa.project import ROOT_ENV

    project = recorded_steps.parent
    pages = {}
    (step,) = (recorded_steps / "notebooks").glob("02_read_more_hits-*.ipynb")
    pages["02_read_more_hits"] = _html(step)
    out = tmp_path_factory.mktemp("rendered")
    with pytest.MonkeyPatch.context() as env:
        env.chdir(project)
        env.setenv(ROOT_ENV, str(project))
        env.setenv("WIKIQA_HOME", str(session_home))
        env.delenv("WIKIQA_RESULTS", raising=False)
        for notebook in sorted((project / "notebooks").glob("*.ipynb")):
            done = execute(notebook, {"OUT": "results"}, out)
            pages[notebook.stem] = _html(done)
    return pages


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["02_read_more_hits", "quickstart", "hillclimb", "grader_validation", "failures"]
)
def test_a_rendered_notebook_shows_no_traceback_and_no_machine_path(
    rendered: dict[str, str], name: str
) -> None:
    page = rendered[name]
    assert "Traceback" not in page and "Error</span>" not in page, name
    leaked = sorted(set(ABSOLUTE.findall(page)))
    assert not leaked, f"{name} shows absolute paths: {leaked[:5]}"


@pytest.mark.slow
def test_the_rendered_climb_compares_the_newest_run_with_its_predecessor(
    rendered: dict[str, str],
) -> None:
    page = rendered["hillclimb"]
    assert "01_agent_baseline" in page and "02_read_more_hits" in page
    at = page.find("NaN")  # "-" where nothing applied, as CHANGELOG.md shows
    assert at < 0, page[max(0, at - 300) : at + 40]


def test_no_committed_notebook_or_result_shows_a_machine_path() -> None:
    import subprocess

    listed = subprocess.run(["git", "ls-files", "results", "experiments", "notebooks"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout  # fmt: skip
    leaks = {}
    for name in listed.split():
        # an in-progress run's journal is committed only so that another machine can resume it
        # (results/reports/qwen-climb.md): machine state, not a result
        if name.startswith("results/journals/"):
            continue
        if not (ROOT / name).exists():
            continue  # removed in the working tree, not yet committed
        if name.endswith((".ipynb", ".md", ".json", ".jsonl", ".log.jsonl.gz")):
            data = (ROOT / name).read_bytes()
            data = gzip.decompress(data) if name.endswith(".gz") else data
            found = ABSOLUTE.findall(data.decode("utf-8", errors="replace"))
            if found:
                leaks[name] = found[:2]
    assert not leaks, leaks


def _outputs(notebook: Path) -> str:
    import json

    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "".join("".join(o.get("text", "")) for c in cells for o in c.get("outputs", []))


def test_the_committed_results_notebooks_are_built_from_the_climb_as_it_is() -> None:
    """Recording a row rebuilds them (`wikiqa experiment render` does it by hand): a copy
    built before the last row, or before its notebook changed, fails here."""
    from wikiqa.evals.climb import read
    from wikiqa.experiment.rendered import stale

    results = ROOT / "results"
    assert stale(results) == [], "rebuild them: wikiqa experiment render"
    rows = read(results)
    # every row of the change log, the newest included, and the newest run's trace replayed
    # from its log (no model is called to render it)
    assert f"{len(rows)} recorded runs in" in _outputs(results / "notebooks" / "hillclimb.ipynb")
    failures = _outputs(results / "notebooks" / "failures.ipynb")
    assert f"run {rows[-1].run_id} ·" in failures
    assert "log recorded it" in failures and "[search]" in failures and "[decision]" in failures
    assert "model unavailable" not in failures


def test_a_results_notebook_built_from_another_change_log_is_stale(tmp_path: Path) -> None:
    import shutil

    from wikiqa.experiment.rendered import stale

    (tmp_path / "notebooks").mkdir()
    for name in ("hillclimb", "failures"):
        shutil.copy(ROOT / "results" / "notebooks" / f"{name}.ipynb", tmp_path / "notebooks")
    changelog = (ROOT / "results" / "changelog.jsonl").read_bytes()
    (tmp_path / "changelog.jsonl").write_bytes(changelog)
    from wikiqa.evals.climb.changelog import render_markdown

    markdown = render_markdown(tmp_path)
    assert stale(tmp_path) == []
    # CHANGELOG.md is derived too: a hand edit of it (or a change of how rows render) is stale
    text = markdown.read_text(encoding="utf-8")
    markdown.write_text(text.replace("| p=", "| **significant** p=", 1) + "edited\n", "utf-8")
    assert stale(tmp_path) == ["CHANGELOG.md: not what this checkout renders from changelog.jsonl"]
    markdown.write_text(text, "utf-8")
    # one figure of one row changed, as a hand edit or a row recorded since would
    (tmp_path / "changelog.jsonl").write_bytes(changelog.replace(b'"errors": 0', b'"errors": 1', 1))
    render_markdown(tmp_path)
    assert stale(tmp_path) == [
        "hillclimb: built before changelog.jsonl last changed",
        "failures: built before changelog.jsonl last changed",
    ]
    (tmp_path / "notebooks" / "failures.ipynb").unlink()
    assert stale(tmp_path)[1] == "failures: not built"


def test_recording_into_the_committed_climb_rebuilds_the_results_notebooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikiqa.cli import render as cli
    from wikiqa.experiment import rendered

    built: list[Path] = []

    def rebuild(out: Path) -> list[Path]:
        built.append(out)
        return []

    monkeypatch.setattr(rendered, "rebuild", rebuild)
    monkeypatch.setattr(rendered, "repo_results", lambda: tmp_path / "results")
    cli.render_results(tmp_path / "results")
    cli.render_results(tmp_path / "results" / "scratch")  # an exploratory folder: not rebuilt
    assert built == [tmp_path / "results"]
