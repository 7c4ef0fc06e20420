"""Shared fixtures. No test touches the network: live tests mock HTTP with `responses`.

No test writes into the checkout: each test has its own results folder (`WIKIQA_RESULTS`), the
session its own index home (`WIKIQA_HOME`); steps run in a project copied outside it
(`recorded_steps`); and the run fails if anything under the checkout changed while it ran.

Tiers: `slow` marks what runs a notebook, papermill, a subprocess, a server, a bench, a fuzzer or
a scan of the whole snapshot, or takes over 5 s. `make test-fast` leaves those out; `make test` runs everything,
nbval's step notebooks included, on two xdist workers (`pytest_xdist_make_scheduler`, below).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import urllib3.exceptions

from wikiqa.agent.grounding import Fetched
from wikiqa.sources import SnapshotSource

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]  # the checkout


def _home(factory: pytest.TempPathFactory) -> Path:
    """This session's (this xdist worker's) index home: one snapshot index per session."""
    home = factory.getbasetemp() / "wikiqa-home"
    home.mkdir(exist_ok=True)
    return home


@pytest.hookimpl(trylast=True)  # after the tmp_path plugin's
def pytest_configure(config: pytest.Config) -> None:
    # Hypothesis keeps its caches (examples, the constants it finds in modules) in ./.hypothesis
    # unless told otherwise, from collection on: not in the checkout.
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(factory.getbasetemp() / "hypothesis")


@pytest.fixture(scope="session")
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _home(tmp_path_factory)


@pytest.fixture(autouse=True)
def _isolated_home(
    session_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    # Never read or write the user's ~/.cache/wikiqa; one shared index per test session. Runs
    # written with the default folder go to this test's own folder, never the checkout's results/.
    monkeypatch.setenv("WIKIQA_HOME", str(session_home))
    monkeypatch.setenv("WIKIQA_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("WIKIQA_LIVE_HOST", raising=False)
    monkeypatch.delenv("WIKIQA_ALLOW_ANY_HOST", raising=False)
    yield


@pytest.fixture(scope="session")
def snapshot(session_home: Path) -> SnapshotSource:
    """The pinned package snapshot (indexed once per session)."""
    return SnapshotSource(home=session_home)


# Fake keys and a fake token, set while the session's steps run (`recorded_steps`), so that
# tests/repo/test_secrets.py can scan what they wrote; that file sets them for its own runs too.
SECRETS = {
    "WIKIQA_ANTHROPIC_API_KEY": "test-wikiqa-anthropic-key-0000000000000000",
    "ANTHROPIC_API_KEY": "test-anthropic-key-1111111111111111111111",
    "OPENAI_API_KEY": "test-openai-key-22222222222222222222222222",
    "WIKIQA_API_TOKEN": "wq-FAKE-TOKEN-33333333",
}


# The steps `recorded_steps` runs, with the parameters every test that reads them assumes.
RECORDED_STEPS = ["00_no_retrieval_baseline", "01_agent_baseline", "02_read_more_hits"]


@pytest.fixture(scope="session")
def recorded_steps(tmp_path_factory: pytest.TempPathFactory, session_home: Path) -> Path:
    """Steps 00, 01 and 02 executed through papermill once per test run (xdist's workers share
    them), 1 trial on the whole dev suite each, recorded in that order into the results/ of a
    project outside the checkout (returned; the project is its parent: what `WIKIQA_ROOT`
    names, holding this checkout's pyproject.toml, experiments/ and notebooks/, so the runs
    show their paths relative to it, as in a real project). Run with the fake keys set
    (`SECRETS`). Tests only read it: a notebook run over these runs writes elsewhere."""
    import fcntl

    from wikiqa.experiment import execute
    from wikiqa.project import ROOT_ENV

    basetemp = tmp_path_factory.getbasetemp()
    shared = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    project = shared / "recorded-steps"
    out = project / "results"
    with (shared / "recorded-steps.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker runs them; the others wait, then read
        if (project / "done").exists():
            return out
        shutil.rmtree(project, ignore_errors=True)
        project.mkdir()
        shutil.copy2(ROOT / "pyproject.toml", project / "pyproject.toml")
        for folder in ("experiments", "notebooks"):
            shutil.copytree(ROOT / folder, project / folder)
        with pytest.MonkeyPatch.context() as env:
            env.chdir(project)
            env.setenv(ROOT_ENV, str(project))
            env.setenv("WIKIQA_HOME", str(session_home))
            env.delenv("WIKIQA_RESULTS", raising=False)
            env.delenv("WIKIQA_LIVE_HOST", raising=False)
            for name, value in SECRETS.items():
                env.setenv(name, value)
            for name in RECORDED_STEPS:
                parameters = {"TRIALS": 1, "OUT": "results", "RECORD": True}
                execute(project / "experiments" / f"{name}.ipynb", parameters, out)
        (project / "done").touch()
    return out


TINY = {
    "Mercury (planet)": {
        "title": "Mercury (planet)",
        "extract": "Mercury is the first planet from the Sun and the smallest in the Solar System.",
        "description": "First planet from the Sun",
        "topic": "Physical sciences",
    },
    "Mercury (element)": {
        "title": "Mercury (element)",
        "extract": "Mercury is a chemical element; it has symbol Hg and atomic number 80.",
        "description": "Chemical element with atomic number 80 (Hg)",
        "topic": "Physical sciences",
    },
    "Dune (novel)": {
        "title": "Dune (novel)",
        "extract": "Dune is a 1965 epic science fiction novel by American author Frank Herbert.",
        "description": "1965 novel by Frank Herbert",
        "topic": "Arts",
    },
    "Mountain": {
        "title": "Mountain",
        "extract": "A mountain is an elevated portion of the Earth's crust.",
        "description": "Large natural elevation of the Earth's surface",
        "topic": "Geography",
    },
    "Mount Everest": {
        "title": "Mount Everest",
        "extract": "Mount Everest is the highest mountain on Earth above sea level. "
        "It lies in the Mahalangur Himal sub-range of the Himalayas.",
        "description": "Earth's highest mountain",
        "topic": "Geography",
    },
    "Grace Hopper": {
        "title": "Grace Hopper",
        "extract": "Grace Brewster Hopper was an American computer scientist. She developed "
        "the FLOW-MATIC programming language.",
        "description": "U.S. naval officer and computer scientist (1906–1992)",
        "topic": "People",
    },
    "Springfield": {
        "title": "Springfield",
        "extract": "Springfield may refer to: Springfield, Illinois; Springfield, Massachusetts.",
        "description": "Topics referred to by the same term",
        "topic": "Geography",
    },
    "Empty page": {"title": "Empty page", "extract": "", "description": "", "topic": "x"},
}


@pytest.fixture
def tiny_path(tmp_path: Path) -> Path:
    """A small snapshot in the package's format: title -> {title, extract, description}."""
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


@pytest.fixture
def tiny(tiny_path: Path, tmp_path: Path) -> SnapshotSource:
    return SnapshotSource(tiny_path, home=tmp_path / "home")


def dns_failure(host: str = "en.wikipedia.org") -> requests.ConnectionError:
    """The exact error requests raises when a host does not resolve (an offline machine)."""
    reason = urllib3.exceptions.NameResolutionError(
        host,
        None,  # type: ignore[arg-type]  # urllib3 only formats the connection into its message
        socket.gaierror(-2, "Name or service not known"),
    )
    return requests.ConnectionError(urllib3.exceptions.MaxRetryError(None, "/w/api.php", reason))  # type: ignore[arg-type]


def fetched_of(source: SnapshotSource, *titles: str) -> Fetched:
    """The articles `titles` as one run would have fetched them (for the grounding checks)."""
    fetched = Fetched()
    for title in titles:
        article = source.get_article(title)
        assert article is not None, title
        fetched.add(title, article)
    return fetched


# -- scheduling: tiers and xdist ------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    notebooks = [item for item in items if item.path.suffix == ".ipynb"]  # nbval's cells
    for item in notebooks:
        item.add_marker(pytest.mark.slow)
    if notebooks:
        # nbval's kernels start from this environment (this directory's fixtures and runtest
        # hooks do not reach experiments/): offline with this session's index, writing their
        # runs into a scratch folder, never into the checkout's results/
        factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
        os.environ["WIKIQA_HOME"] = str(_home(factory))
        os.environ["WIKIQA_RESULTS"] = str(factory.getbasetemp() / "nbval-results")
    # the slow tests first: xdist's workers start on the longest work, and none is left alone
    # at the end with it (a stable sort: a notebook's cells keep their order)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Each test is a unit of work of its own, but a test file with a module-scoped fixture
    (built once) goes to one worker whole, and so does each notebook nbval executes (its cells
    share one kernel, in order). Bigger units first, then slow before fast (the collection's
    order, above)."""
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist ships no types
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            whole = path.endswith(".ipynb") or _has_module_fixture(path)
            return path if whole else nodeid

    return Scheduling(config, log)


@functools.cache
def _has_module_fixture(path: str) -> bool:
    file = ROOT / path
    return file.suffix == ".py" and 'scope="module"' in file.read_text(encoding="utf-8")


# -- no test writes into the checkout ------------------------------------------------------------

# Caches of the tools themselves (pytest's, mypy's, bytecode), not anything a test wrote.
TOOL_FOLDERS = {".git", ".venv", ".lock-venv", "__pycache__", ".pytest_cache", ".mypy_cache",
                ".ruff_cache"}  # fmt: skip
CODE_FOLDERS = {"wikiqa", "tests"}  # a folder of modules changes when its bytecode is cached


def _checkout_state() -> dict[str, tuple[int, int]]:
    """Every file under the checkout (size, mtime), and the mtime of every data folder (a file
    created and removed again still changes its folder's mtime)."""
    state: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in TOOL_FOLDERS and not d.endswith(".egg-info")]
        here = Path(folder)
        relative = here.relative_to(ROOT)
        if relative.parts and relative.parts[0] not in CODE_FOLDERS:
            state[f"{relative}/"] = (0, here.stat().st_mtime_ns)
        for name in files:
            stat = (here / name).lstat()
            state[str(relative / name)] = (stat.st_size, stat.st_mtime_ns)
    return state


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist)
        session.config.stash[_BEFORE] = _checkout_state()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    after = _checkout_state()
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    if changed:
        session.config.stash[_CHANGED] = changed
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    changed = terminalreporter.config.stash.get(_CHANGED, [])
    if changed:
        terminalreporter.write_sep("=", "tests wrote into the checkout", red=True, bold=True)
        for path in changed[:50]:
            terminalreporter.write_line(f"  {path}")
        terminalreporter.write_line(
            "(a test must write under tmp_path; or something else wrote there during the run)"
        )


_BEFORE = pytest.StashKey[dict[str, tuple[int, int]]]()
_CHANGED = pytest.StashKey[list[str]]()
