"""The project root: `WIKIQA_ROOT`, else the nearest pyproject.toml upward with `[tool.wikiqa]`;
outside any project, what needs suites or results fails in one line and the rest still runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wikiqa.cli import main
from wikiqa.project import (
    ROOT_ENV,
    ProjectNotFound,
    experiments_dir,
    project_root,
    relative_to_root,
    suites_dir,
)
from wikiqa.sources import SnapshotSource

CHECKOUT = Path(__file__).resolve().parents[2]
EVAL = ["eval", "--suite", "dev", "--limit", "3", "--trials", "1"]


@pytest.fixture(autouse=True)
def _no_named_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ROOT_ENV, raising=False)


def _project(folder: Path, text: str = "[tool.wikiqa]\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(text, encoding="utf-8")
    return folder


def test_the_root_is_found_from_a_nested_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path / "proj")
    nested = root / "experiments" / "a" / "b"
    nested.mkdir(parents=True)
    assert project_root(nested) == root.resolve()
    monkeypatch.chdir(nested)  # the working directory is the default start
    assert project_root() == root.resolve()
    assert suites_dir() == root.resolve() / "experiments" / "suite"
    assert experiments_dir() == root.resolve() / "experiments"
    assert relative_to_root(nested / "x.ipynb") == Path("experiments/a/b/x.ipynb")
    assert relative_to_root(tmp_path / "elsewhere") is None


def test_a_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj", '[project]\nname = "x"\n\n[tool.wikiqa]\nsuites = "s"\n')
    # another project's pyproject (no table, another tool's, or `wikiqa` that is not a table)
    _project(root / "vendored", '[project]\nname = "vendored"\n[tool.ruff]\nline-length = 1\n')
    _project(root / "vendored" / "inner", "[tool]\nwikiqa = 1\n")
    (root / "vendored" / "inner" / "deep").mkdir()
    assert project_root(root / "vendored" / "inner" / "deep") == root.resolve()
    assert project_root(root / "vendored") == root.resolve()


def test_the_nearest_project_wins_over_an_outer_one(tmp_path: Path) -> None:
    outer = _project(tmp_path / "outer")
    inner = _project(outer / "inner")
    assert project_root(inner) == inner.resolve()


def test_wikiqa_root_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = _project(tmp_path / "here")
    named = tmp_path / "named"  # needs no pyproject: naming it is enough
    named.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv(ROOT_ENV, str(named))
    assert project_root() == named.resolve()
    assert project_root(here) == named.resolve()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_wikiqa_root_that_is_no_directory_is_refused(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = tmp_path / "nowhere"
    if kind == "file":
        named.write_text("not a folder")
    _project(tmp_path / "proj")
    monkeypatch.setenv(ROOT_ENV, str(named))
    with pytest.raises(ProjectNotFound) as err:
        project_root(tmp_path / "proj")  # a project here does not rescue a wrong WIKIQA_ROOT
    message = str(err.value)
    assert message == f"{ROOT_ENV}={named}: not a directory" and "\n" not in message


def test_outside_any_project_the_error_says_how_to_name_one(tmp_path: Path) -> None:
    _project(tmp_path / "other", '[project]\nname = "other"\n')
    with pytest.raises(ProjectNotFound) as err:
        project_root(tmp_path / "other")
    message = str(err.value)
    assert "\n" not in message and "[tool.wikiqa]" in message and ROOT_ENV in message
    assert relative_to_root(tmp_path) is None


def test_a_pyproject_that_is_not_toml_is_named(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj", "[tool.wikiqa\n")
    with pytest.raises(ProjectNotFound, match=r"pyproject\.toml: not valid TOML"):
        project_root(root)
    (root / "pyproject.toml").write_bytes(b"\xff\xfe[tool.wikiqa]\n")
    with pytest.raises(ProjectNotFound, match="not valid TOML"):
        project_root(root)


def test_this_checkout_is_a_project() -> None:
    assert project_root(CHECKOUT / "experiments" / "suite") == CHECKOUT
    assert (suites_dir() / "dev.jsonl").is_file()  # pytest runs from the checkout


def _env(results: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ROOT_ENV}
    return env | {"WIKIQA_RESULTS": str(results)}


@pytest.mark.slow
def test_the_cli_outside_a_project_fails_in_one_line(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", *EVAL],
        cwd=tmp_path, env=_env(results), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("wikiqa: error: no wikiqa project here")
    assert "[tool.wikiqa]" in lines[0] and ROOT_ENV in lines[0]
    assert not results.exists()


def test_commands_that_need_no_project_run_anywhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    snapshot: SnapshotSource,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["ask", "What is the highest mountain on Earth?"]) == 0
    assert "Everest" in capsys.readouterr().out
    monkeypatch.setenv("WIKIQA_RESULTS", str(tmp_path / "results"))
    assert main(EVAL) == 1  # reads a named suite: refused, in one line
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and ROOT_ENV in err[0]


@pytest.mark.slow
def test_a_package_outside_the_project_finds_it_from_the_working_directory(
    tmp_path: Path, snapshot: SnapshotSource
) -> None:
    """As an installed (non-editable) package does: the code lives apart from the project, so
    the working directory (or WIKIQA_ROOT), not the package's own path, decides the project."""
    site = tmp_path / "site"
    shutil.copytree(
        CHECKOUT / "wikiqa", site / "wikiqa", ignore=shutil.ignore_patterns("__pycache__")
    )
    # PYTHONSAFEPATH: the working directory (the checkout) is not put on sys.path, as it is not
    # for an installed `wikiqa` script
    env = _env(tmp_path / "results") | {"PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}
    probe = subprocess.run(
        [sys.executable, "-c", "import wikiqa; print(wikiqa.__file__)"],
        cwd=CHECKOUT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.startswith(str(site))
    ran = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", *EVAL, "--out", str(tmp_path / "results")],
        cwd=CHECKOUT / "experiments", env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert list((tmp_path / "results" / "runs").glob("*.parquet"))
    named = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", *EVAL, "--out", str(tmp_path / "named")],
        cwd=tmp_path, env=env | {ROOT_ENV: str(CHECKOUT)}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert named.returncode == 0, named.stderr[-2000:]
