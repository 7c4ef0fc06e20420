"""Shared fixtures. No test touches the network: live tests mock HTTP with `responses`."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import urllib3.exceptions

from wikiqa.agent.grounding import Fetched
from wikiqa.sources import SnapshotSource

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wikiqa-home")


@pytest.fixture(autouse=True)
def _isolated_home(session_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Never read or write the user's ~/.cache/wikiqa; one shared index per test session.
    monkeypatch.setenv("WIKIQA_HOME", str(session_home))
    monkeypatch.delenv("WIKIQA_LIVE_HOST", raising=False)
    monkeypatch.delenv("WIKIQA_ALLOW_ANY_HOST", raising=False)
    yield


@pytest.fixture(scope="session")
def snapshot(session_home: Path) -> SnapshotSource:
    """The pinned package snapshot (indexed once per session)."""
    return SnapshotSource(home=session_home)


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
