"""Bad input, fuzzed with hypothesis: task files, CLI arguments and POST /api/ask bodies.

Each property: a clear error (file:line for task files, usage for flags, 422 for bodies), never a
traceback or a 5xx. Run with `-s` to print how many cases each property tried.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import responses
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import dns_failure
from tests.evals.tasks.test_tasks import GOOD
from wikiqa.api.app import create_app
from wikiqa.cli import main
from wikiqa.config import Settings
from wikiqa.evals import TaskError, load_tasks
from wikiqa.models import ExtractiveModel
from wikiqa.sources import SnapshotSource

# 300 examples a property: the slow tier
pytestmark = pytest.mark.slow

FUZZ = settings(
    max_examples=300, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck)
)
TRIED: dict[str, int] = {}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
fields = [*sorted(GOOD), "injection", "absent", "notes", "bogus"]
mutated_tasks = st.builds(
    lambda drop, changes: {k: v for k, v in GOOD.items() if k not in drop} | changes,
    st.sets(st.sampled_from(sorted(GOOD)), max_size=3),
    st.dictionaries(
        st.sampled_from(fields),
        json_values | st.sampled_from(["factual", "trivia", "unanswerable", "injection", "t1"]),
        max_size=3,
    ),
)
lines = st.one_of(
    mutated_tasks.map(json.dumps).map(str.encode),
    json_values.map(json.dumps).map(str.encode),
    st.binary(max_size=60),  # non-UTF-8 and broken JSON
    st.just(json.dumps(GOOD).encode()),  # duplicates, once drawn twice
    st.just(b'{"id": "' + b"x" * 200_000 + b'"}'),  # a huge line
)


@FUZZ
@given(st.lists(lines, min_size=1, max_size=6))
def test_task_files_load_or_fail_with_file_and_line(
    tmp_path_factory: pytest.TempPathFactory, content: list[bytes]
) -> None:
    TRIED["task files"] = TRIED.get("task files", 0) + 1
    path = tmp_path_factory.mktemp("fuzz") / "tasks.jsonl"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in content))
    try:
        tasks = load_tasks(path)
    except TaskError as err:
        assert re.match(rf"{re.escape(str(path))}(:\d+)?: \S", str(err)), str(err)
        return
    assert tasks and len({t.id for t in tasks}) == len(tasks)


FLAGS = ["search", "article", "ask", "snapshot", "info", "record", "--limit", "--json", "--depth",
         "--source", "--budget", "--model", "-v", "--titles", "--out", "0", "-1", "3", "lead", "full",
         "snapshot", "live", "/nonexistent", "extractive", "extractive:threshold=9", "anthropic:x",
         "nope:model", "", "--", "—", "\x00"]  # fmt: skip


@FUZZ
@given(st.lists(st.sampled_from(FLAGS) | st.text(max_size=12), max_size=6))
def test_cli_arguments_never_crash(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    TRIED["cli argv"] = TRIED.get("cli argv", 0) + 1
    with responses.RequestsMock(assert_all_requests_are_fired=False) as http:
        http.add(responses.GET, re.compile(r".*"), body=dns_failure())  # "live" fails fast, offline
        code: int | str | None
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code  # argparse: usage printed
            assert code in (0, 2)
    assert code in (0, 1, 2, 3)
    err = capsys.readouterr().err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def api(session_home: Path) -> TestClient:
    # the property is about bodies, not about how fast one client may send them: no rate limit
    unlimited = Settings(rate_limit=0)
    return TestClient(create_app(ExtractiveModel(), SnapshotSource(home=session_home), unlimited))


bodies = st.one_of(
    json_values,
    st.fixed_dictionaries({"question": json_values}),
    st.fixed_dictionaries({"question": st.text(max_size=1200)}, optional={"options": json_values}),
    st.fixed_dictionaries(
        {"question": st.text(min_size=1, max_size=40)},
        optional={
            "options": st.fixed_dictionaries({}, optional={"budget": json_values | st.integers()})
        },
    ),
)


@FUZZ
@given(bodies)
def test_ask_bodies_get_200_or_422_never_5xx(api: TestClient, body: Any) -> None:
    TRIED["api bodies"] = TRIED.get("api bodies", 0) + 1
    response = api.post("/api/ask", json=body)
    assert response.status_code in (200, 422), (body, response.text)
    if response.status_code == 422:
        assert response.json()["detail"]  # says what is wrong


@FUZZ
@given(st.binary(max_size=80))
def test_raw_bodies_get_4xx_never_5xx(api: TestClient, raw: bytes) -> None:
    TRIED["raw bodies"] = TRIED.get("raw bodies", 0) + 1
    response = api.post("/api/ask", content=raw, headers={"content-type": "application/json"})
    assert response.status_code in (200, 400, 422)  # 400: not even decodable as a body
    assert response.json()["detail"]


# What JSON parsers accept but JSON encoders refuse: NaN, infinities and lone surrogates. These
# turned FastAPI's 422 into a 500 (its handler echoed the input and could not encode it).
awkward_numbers = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-0", "4.0", "1e-400"])
awkward_text = st.text(
    alphabet=st.characters(min_codepoint=0xD780, max_codepoint=0xE010, exclude_categories=[])
    | st.characters(max_codepoint=0x7F),
    min_size=1,
    max_size=30,
)


@FUZZ
@given(awkward_text, awkward_numbers | awkward_text.map(lambda t: json.dumps(t)))
def test_unencodable_inputs_get_4xx_never_5xx(api: TestClient, question: str, budget: str) -> None:
    TRIED["awkward bodies"] = TRIED.get("awkward bodies", 0) + 1
    raw = f'{{"question": {json.dumps(question)}, "options": {{"budget": {budget}}}}}'.encode()
    response = api.post("/api/ask", content=raw, headers={"content-type": "application/json"})
    assert response.status_code in (200, 400, 422), (raw, response.text)
    assert len(response.content) < 4096 or response.status_code == 200  # no echo of the input


def test_report_cases_tried() -> None:
    print("\nfuzz cases tried:", TRIED)
    assert all(n >= 100 for n in TRIED.values()), TRIED
