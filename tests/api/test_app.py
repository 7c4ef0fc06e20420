"""The HTTP service: TestClient for behaviour, one real uvicorn server over loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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


@contextmanager
def _running(app: Any, **options: Any) -> Iterator[int]:
    """A real uvicorn serving `app` on a free loopback port, in a thread; yields the port."""
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options)
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not instance.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        instance.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def server(tiny: SnapshotSource) -> Iterator[str]:
    with _running(create_app(ExtractiveModel(), tiny, Settings())) as port:
        yield f"http://127.0.0.1:{port}"


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


# -- hostile requests (issue 16, items 8-11) -------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"question": "Who?", "options": {"budget": NaN}}',
        b'{"question": "Who?", "options": {"budget": Infinity}}',
        b'{"question": "Who?", "options": {"budget": -Infinity}}',
        b'{"question": "\\ud800 who?"}',
        b'{"question": "ok", "options": {"budget": "\\udfff"}}',
    ],
)
def test_inputs_that_broke_the_422_encoder_are_422s(client: TestClient, raw: bytes) -> None:
    response = client.post("/api/ask", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["msg"]


def test_a_422_quotes_only_a_short_prefix_of_the_input(client: TestClient) -> None:
    huge = {"question": "x" * 1_000_000}
    response = client.post("/api/ask", json=huge, headers={"Content-Length": "1000016"})
    # 1 MB is over the body cap: refused before parsing, without an echo
    assert response.status_code == 413 and len(response.content) < 200
    long = {"question": "y" * 5000}  # under the cap, over the question limit
    response = client.post("/api/ask", json=long)
    assert response.status_code == 422 and len(response.content) < 1000
    assert response.json()["detail"][0]["input"].startswith("'yyyy")


def test_bodies_over_the_cap_are_413_and_never_parsed(client: TestClient) -> None:
    body = b'{"question": "' + b"z" * 70_000 + b'"}'
    response = client.post("/api/ask", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413

    def chunks() -> Iterator[bytes]:  # chunked: no Content-Length to judge it by
        yield b'{"question": "'
        for _ in range(20):
            yield b"z" * 8192

    response = client.post(
        "/api/ask", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


def test_with_a_token_only_liveness_answers_without_it(
    tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIKIQA_API_TOKEN", TOKEN)
    monkeypatch.setenv("WIKIQA_OPENAI_BASE_URL", "http://10.1.2.3:8000/v1")
    client = TestClient(create_app(ExtractiveModel(), tiny, Settings()))
    for path in ("/docs", "/openapi.json", "/redoc", "/nope"):
        assert client.get(path).status_code == 401, path
    assert client.get("/healthz").json() == {"status": "ok"}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert client.get("/healthz", headers=auth).json()["model"] == "extractive"
    assert client.get("/openapi.json", headers=auth).status_code == 200
    # unauthenticated bodies are refused from the headers: 50 MB declared, nothing read
    refused = client.post("/api/ask", content=b"{}", headers={"Content-Length": "52428800"})
    assert refused.status_code == 401


def test_past_the_in_flight_cap_the_answer_is_503(tiny: SnapshotSource) -> None:
    client = TestClient(create_app(ExtractiveModel(), tiny, Settings(), max_in_flight=0))
    response = client.post("/api/ask", json={"question": "Who developed FLOW-MATIC?"})
    assert response.status_code == 503 and response.headers["retry-after"] == "1"


@pytest.fixture
def hardened(tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A real uvicorn as `wikiqa serve` runs it, with short deadlines for the test."""
    from wikiqa.api.shield import DeadlineH11Protocol

    monkeypatch.setattr(DeadlineH11Protocol, "header_timeout", 0.5)
    app = create_app(ExtractiveModel(), tiny, Settings(), body_timeout=0.5)
    with _running(app, http=DeadlineH11Protocol, timeout_keep_alive=5) as port:
        yield port


def _talk(port: int, *parts: bytes, pause: float = 0.0) -> tuple[bytes, float]:
    """Send `parts` (pausing between them), then read until the server closes; (reply, seconds)."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        for part in parts:
            conn.sendall(part)
            time.sleep(pause)
        reply = b""
        try:
            while chunk := conn.recv(65536):
                reply += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    return reply, time.monotonic() - start


def test_slow_headers_are_cut_off(hardened: int) -> None:
    reply, took = _talk(hardened, b"POST /api/ask HTTP/1.1\r\nHost: x\r\n")
    assert reply == b"" and took < 3  # closed at the header deadline, not held open


def test_a_slow_body_is_408(hardened: int) -> None:
    head = b"POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    reply, took = _talk(hardened, head + b"Content-Length: 40\r\n\r\n", b'{"question"')
    assert reply.startswith(b"HTTP/1.1 408") and took < 3


def test_length_and_chunked_together_is_400_not_a_hang(hardened: int) -> None:
    request = (
        b"POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
    )
    reply, took = _talk(hardened, request)
    assert reply.split(b"\r\n")[0] in (b"HTTP/1.1 400 Bad Request",) and took < 3


# Issue 23 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["", "   ", "héllo-token", "tab\ttoken", "caf\u00e9"])
def test_an_empty_or_non_ascii_token_refuses_to_start(
    token: str, tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Item 1: an empty token let `Bearer ` in. Item 10: a non-ASCII token matched only the
    latin-1 bytes of it; a token must now be visible ASCII, or the server does not start."""
    monkeypatch.setenv("WIKIQA_API_TOKEN", token)
    with pytest.raises(ValueError, match="WIKIQA_API_TOKEN"):
        create_app(ExtractiveModel(), tiny, Settings())
    from wikiqa.cli import main

    assert main(["serve", "--port", str(_free_port())]) == 1  # refused before uvicorn runs


def test_an_empty_token_matches_nothing() -> None:
    from wikiqa.api.shield import authorized

    assert not authorized({b"authorization": b"Bearer "}, "")
    assert not authorized({}, "")
    assert authorized({b"authorization": b"Bearer abc"}, "abc")
    assert authorized({b"authorization": b"bearer abc"}, "abc")
    assert not authorized({b"authorization": b"Bearer abc "}, "abc")
    # the header's bytes are compared as they came: no latin-1 or UTF-8 reinterpretation
    assert not authorized({b"authorization": "Bearer ab\u00e9".encode("latin-1")}, "ab\u00c3\u00a9")


@pytest.mark.parametrize("budget", ["8", True, False, 8.0, "true", None, [8]])
def test_the_budget_is_strictly_an_integer(client: TestClient, budget: Any) -> None:
    """Item 10: "8" and true were accepted (true became a budget of 1)."""
    response = client.post("/api/ask", json={"question": "ok", "options": {"budget": budget}})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == ["body", "options", "budget"]


def _serve(env: dict[str, str]) -> tuple[Any, int]:
    import os
    import subprocess
    import sys

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "wikiqa.cli", "serve", "--port", str(port), "--log-level",
         "warning"],
        env=os.environ | env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
            return server, port
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise AssertionError("wikiqa serve did not start") from None
            time.sleep(0.1)


def _ask(port: int, token: str) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/ask", data=b'{"question": "Who developed FLOW-MATIC?"}',
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


@pytest.mark.slow
def test_an_idle_connection_flood_does_not_starve_token_holders() -> None:
    """Item 6, served as users run it: 300 sockets that never send a byte used up uvicorn's
    limit_concurrency=256 and every authenticated ask got 503. Now they are evicted (oldest
    first, past 32 per address) and token holders keep getting 200."""
    token = "wq-flood-test-token-5b1e"
    server, port = _serve({"WIKIQA_API_TOKEN": token})
    idle: list[socket.socket] = []
    try:
        for _ in range(300):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(0.5)  # let the server accept them all
        codes = [_ask(port, token) for _ in range(8)]
        for _ in range(300):  # the flood re-opens what was dropped
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        codes += [_ask(port, token) for _ in range(8)]
        assert codes == [200] * len(codes)
        assert _ask(port, "wrong-token-000000") == 401
    finally:
        for conn in idle:
            conn.close()
        server.terminate()
        server.wait(timeout=10)


def test_the_gate_evicts_the_oldest_idle_untrusted_connection() -> None:
    from wikiqa.api.connections import ConnectionGate

    gate = ConnectionGate(per_client=2, max_untrusted=3)
    assert gate.admit("a1", "A") == [] and gate.admit("a2", "A") == []
    assert gate.admit("a3", "A") == ["a1"]  # per address: the oldest goes
    busy = {"a2"}  # has unread input waiting: a real client about to be read
    assert gate.admit("a4", "A", lambda c: c in busy) == ["a3"]
    gate.forget("a2")  # trusted now: no longer counted
    assert gate.admit("b1", "B") == [] and gate.admit("c1", "C") == []
    assert gate.admit("d1", "D") == ["a4"]  # over the total cap: the oldest of all
    assert gate.evicted == 3
