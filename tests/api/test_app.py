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


# -- requests without the token hold no slot; a per-client rate limit --------------------------

HEALTHZ_WITH_BODY = b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"


def _status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0


@pytest.fixture
def guarded(tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """`wikiqa serve`'s stack, in a thread: a token, 2 slots, a 30 s body timeout and no rate
    limit (each test sets what it measures)."""
    from wikiqa.api.connections import guarded_protocol

    monkeypatch.setenv("WIKIQA_API_TOKEN", TOKEN)
    app = create_app(ExtractiveModel(), tiny, Settings(rate_limit=0), max_in_flight=2,
                     body_timeout=30)  # fmt: skip
    with _running(app, http=guarded_protocol(TOKEN), timeout_keep_alive=5) as port:
        yield port


def test_healthz_is_answered_from_its_headers_without_waiting_for_a_declared_body(
    guarded: int,
) -> None:
    """A body declared and never sent used to hold one of the slots for the whole body timeout;
    now the answer comes at once (the socket's 5 s timeout is far below the server's 30 s body
    timeout) and the connection is closed, the body never read."""
    for _ in range(6):  # three times the slots
        with socket.create_connection(("127.0.0.1", guarded), timeout=5) as conn:
            conn.sendall(HEALTHZ_WITH_BODY)
            reply = b""
            while chunk := conn.recv(65536):  # until the server closes: it does not wait
                reply += chunk
        head, _, body = reply.partition(b"\r\n\r\n")
        assert _status(reply) == 200 and json.loads(body) == {"status": "ok"}
        assert b"connection: close" in head.lower()
    # a token holder's healthz with a body declared: the full answer, the body not waited for
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    reply, _ = _talk(guarded, HEALTHZ_WITH_BODY.replace(b"Host: x\r\n", b"Host: x\r\n" + auth))
    assert _status(reply) == 200 and b'"model":"extractive"' in reply


def test_requests_without_the_token_never_hold_a_slot(guarded: int) -> None:
    """With 2 slots, 8 anonymous requests that declare bodies and never send them (healthz,
    and asks) are each answered at once; a token holder then still gets 200s."""
    held = []
    try:
        for n in range(8):
            conn = socket.create_connection(("127.0.0.1", guarded), timeout=5)
            held.append(conn)
            path = b"/healthz" if n % 2 else b"/api/ask"
            conn.sendall(HEALTHZ_WITH_BODY.replace(b"GET /healthz", b"POST " + path))
            assert _status(conn.recv(65536)) == (200 if n % 2 else 401)
        assert [_ask(guarded, TOKEN) for _ in range(3)] == [200, 200, 200]
    finally:
        for conn in held:
            conn.close()


def test_slots_held_by_token_holders_are_theirs_and_503_only_for_them(guarded: int) -> None:
    """Two token holders sending slow bodies fill both slots: a third holder gets 503 with
    Retry-After, while liveness without the token is still answered (it needs no slot)."""
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    slow = b"POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth
    slow += b"Content-Length: 40\r\n\r\n"
    holders = [socket.create_connection(("127.0.0.1", guarded), timeout=5) for _ in range(2)]
    try:
        for conn in holders:
            conn.sendall(slow + b'{"question"')
        time.sleep(0.3)  # both requests reach the app's body wait
        reply, _ = _talk(guarded, slow)
        assert _status(reply) == 503 and b"retry-after: 1" in reply.lower()
        reply, _ = _talk(guarded, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _status(reply) == 200 and reply.endswith(b'{"status": "ok"}')
    finally:
        for conn in holders:
            conn.close()


def test_the_rate_limiter_is_a_token_bucket_per_client() -> None:
    from wikiqa.api.shield import RateLimiter

    now = [0.0]
    limiter = RateLimiter(2.0, clock=lambda: now[0], max_clients=2)  # 2 a second, bursts of 4
    assert [limiter.wait("a") for _ in range(5)] == [0, 0, 0, 0, 0.5]
    assert limiter.wait("b") == 0  # another client has its own bucket
    now[0] = 0.5  # one request's worth refilled
    assert limiter.wait("a") == 0 and limiter.wait("a") == 0.5
    now[0] = 10.0
    assert [limiter.wait("a") for _ in range(5)] == [0, 0, 0, 0, 0.5]  # never above the burst
    limiter.wait("c")  # a third client: the least recently seen ("b") is forgotten
    assert set(limiter.buckets) == {"a", "c"}
    off = RateLimiter(0.0)
    assert all(off.wait("a") == 0 for _ in range(1000)) and not off.buckets


def test_one_client_past_the_rate_limit_gets_429_with_retry_after(
    tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 concurrent asks from one client were all answered; at 1 request a second (bursts of
    2) only the burst, and what the bucket refilled meanwhile, are."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("WIKIQA_API_TOKEN", TOKEN)
    monkeypatch.setenv("WIKIQA_RATE_LIMIT", "1")
    with _running(create_app(ExtractiveModel(), tiny, Settings())) as port:
        url = f"http://127.0.0.1:{port}/api/ask"
        body = b'{"question": "Who developed FLOW-MATIC?"}'
        headers = {"content-type": "application/json", "authorization": f"Bearer {TOKEN}"}

        def ask(_: int) -> tuple[int, str | None]:
            request = urllib.request.Request(url, data=body, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return int(response.status), None
            except urllib.error.HTTPError as err:
                return err.code, err.headers.get("retry-after")

        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=40) as pool:
            results = list(pool.map(ask, range(40)))
        elapsed = time.monotonic() - start
        answered = sum(code == 200 for code, _ in results)
        limited = [after for code, after in results if code == 429]
        assert answered + len(limited) == 40
        assert 2 <= answered <= 2 + int(elapsed) + 1  # the burst, then 1 a second
        assert limited and all(after is not None and int(after) >= 1 for after in limited)
        # liveness without the token counts against the address, not against the token's bucket
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            assert json.load(response) == {"status": "ok"}


def test_the_rate_limit_is_a_setting_and_a_serve_flag(
    tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikiqa.api.shield import Shield
    from wikiqa.cli import main

    def shield_rate(app: Any) -> float:
        (middleware,) = [m for m in app.user_middleware if m.cls is Shield]
        return float(middleware.kwargs["rate"])

    assert Settings().rate_limit == 10.0
    assert shield_rate(create_app(ExtractiveModel(), tiny, Settings())) == 10.0
    monkeypatch.setenv("WIKIQA_RATE_LIMIT", "2.5")
    assert shield_rate(create_app(ExtractiveModel(), tiny, Settings())) == 2.5
    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    assert main(["serve", "--source", "snapshot"]) == 0
    assert main(["serve", "--rate-limit", "0"]) == 0
    assert [shield_rate(app) for app in served] == [2.5, 0.0]
    for bad in ("-1", "fast", "nan"):
        with pytest.raises(SystemExit):
            main(["serve", "--rate-limit", bad])


@pytest.mark.slow
def test_two_addresses_holding_healthz_bodies_do_not_lock_out_token_holders() -> None:
    """The reported attack on `wikiqa serve` as users run it: 32 connections from each of
    127.0.0.2 and 127.0.0.3 send `GET /healthz` declaring 1000 bytes of body and never send it,
    reconnecting whenever closed. Token holders got 503s for as long as it lasted."""
    token = "wq-healthz-attack-token-7c2d"
    server, port = _serve({"WIKIQA_API_TOKEN": token})
    stop = threading.Event()
    answered = [0]

    def attacker(address: str) -> None:
        while not stop.is_set():
            try:
                with socket.create_connection(
                    ("127.0.0.1", port), timeout=5, source_address=(address, 0)
                ) as conn:
                    conn.sendall(HEALTHZ_WITH_BODY)
                    while conn.recv(65536):  # until the server closes it
                        answered[0] += 1
            except OSError:
                pass
            time.sleep(0.05)

    threads = [
        threading.Thread(target=attacker, args=(address,), daemon=True)
        for address in ("127.0.0.2", "127.0.0.3")
        for _ in range(32)
    ]
    try:
        for t in threads:
            t.start()
        time.sleep(1.0)  # the attack under way
        codes = [_ask(port, token) for _ in range(10)]
        assert codes == [200] * 10
        assert answered[0] > 0  # the attackers were answered, not left waiting
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.slow
def test_a_forwarded_for_header_does_not_make_a_new_client() -> None:
    """uvicorn trusts proxy headers from loopback by default: each anonymous request with a new
    X-Forwarded-For would be a new client to the rate limit. Not unless a proxy is configured."""
    server, port = _serve({"WIKIQA_API_TOKEN": "wq-forwarded-token-5b1e", "WIKIQA_RATE_LIMIT": "1"})
    try:
        codes = []
        for n in range(30):
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/healthz", headers={"X-Forwarded-For": f"10.0.0.{n}"}
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    codes.append(response.status)
            except urllib.error.HTTPError as err:
                codes.append(err.code)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert codes.count(429) >= 20, codes
