"""The HTTP service: TestClient for behaviour, one real uvicorn server over loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
import uvicorn
from fastapi.testclient import TestClient

from wikiqa.api.app import create_app
from wikiqa.config import Settings
from wikiqa.models import ExtractiveModel
from wikiqa.sources import SnapshotSource

TOKEN = "wq-test-token-8f3a9c1d"


@pytest.fixture
def client(tiny: SnapshotSource) -> TestClient:
    return TestClient(create_app(ExtractiveModel(), tiny, Settings()))


def test_ask_returns_the_same_result_as_the_cli_json(client: TestClient) -> None:
    response = client.post("/api/ask", json={"question": "Who developed FLOW-MATIC?"})
    assert response.status_code == 200
    body = response.json()
    assert body["output"]["kind"] == "answer"
    assert body["output"]["citations"][0]["title"] == "Grace Hopper"
    assert set(body) >= {"trace", "usage", "confidence", "needs_human_review", "latency_ms"}


def test_budget_option_is_honoured(client: TestClient) -> None:
    body = client.post(
        "/api/ask", json={"question": "Who developed FLOW-MATIC?", "options": {"budget": 2}}
    ).json()
    assert body["output"]["reason_code"] == "budget_exhausted"
    assert body["usage"]["tool_calls"] == 2


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"question": ""}, "String should have at least 1 character"),
        ({"question": "x" * 1001}, "String should have at most 1000 characters"),
        ({"question": "   \n "}, "question must contain text"),
        ({"question": "what\x00is"}, "control characters"),
        ({"question": 42}, "Input should be a valid string"),
        ({}, "Field required"),
        ({"question": "ok", "options": {"budget": 0}}, "greater than or equal to 1"),
        (
            {"question": "ok", "options": {"source": "/etc/passwd"}},
            "Extra inputs are not permitted",
        ),
        ({"question": "ok", "model": "anthropic:x"}, "Extra inputs are not permitted"),
    ],
)
def test_bad_input_is_a_422_with_a_clear_message(
    client: TestClient, payload: dict[str, object], message: str
) -> None:
    response = client.post("/api/ask", json=payload)
    assert response.status_code == 422
    assert message in json.dumps(response.json())


def test_non_json_body_is_a_422(client: TestClient) -> None:
    response = client.post(
        "/api/ask", content=b"\xff\xfe", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {
        "status": "ok",
        "version": "0.1.0",
        "model": "extractive",
        "source": "snapshot",
    }


def test_bearer_token_is_required_when_set(
    tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIKIQA_API_TOKEN", TOKEN)
    client = TestClient(create_app(ExtractiveModel(), tiny, Settings()))
    question = {"question": "Who developed FLOW-MATIC?"}
    missing = client.post("/api/ask", json=question)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    wrong = client.post("/api/ask", json=question, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    ok = client.post("/api/ask", json=question, headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    for response in (missing, wrong, ok):
        assert TOKEN not in response.text and TOKEN not in str(response.headers)
    assert "**********" in repr(Settings().api_token)  # never printed in the clear


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tiny: SnapshotSource) -> Iterator[str]:
    port = _free_port()
    config = uvicorn.Config(
        create_app(ExtractiveModel(), tiny, Settings()),
        host="127.0.0.1",
        port=port,
        log_level="warning",
    )
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not instance.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    instance.should_exit = True
    thread.join(timeout=10)


def test_real_uvicorn_over_loopback(server: str) -> None:
    with urllib.request.urlopen(f"{server}/healthz", timeout=5) as response:
        assert json.load(response)["status"] == "ok"
    request = urllib.request.Request(
        f"{server}/api/ask",
        data=json.dumps({"question": "Who developed FLOW-MATIC?"}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        body = json.load(response)
    assert body["output"]["citations"][0]["title"] == "Grace Hopper"
    bad = urllib.request.Request(
        f"{server}/api/ask", data=b'{"question": ""}', headers={"content-type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(bad, timeout=5)
    assert error.value.code == 422
