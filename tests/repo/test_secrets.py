"""No secret reaches an output: run the CLI, an eval, a notebook and the API with fake keys and
a fake token set, then scan everything they wrote or answered. Target: 0 hits."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from tests.conftest import SECRETS
from tests.models.test_providers import anthropic_message, scripted_transport, tool_use
from wikiqa.api.app import create_app
from wikiqa.config import Settings
from wikiqa.evals import RunConfig, run_eval
from wikiqa.experiment import experiments_dir
from wikiqa.models import ExtractiveModel
from wikiqa.models.anthropic_model import AnthropicModel
from wikiqa.retry import RetryPolicy
from wikiqa.sources import SnapshotSource

EXPERIMENTS = experiments_dir()


def hits(text: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in text]


def scan_tree(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            if path.suffix == ".parquet":  # compressed: scan the values, not the bytes
                text = pd.read_parquet(path).astype(str).to_csv()
            if hits(text):
                found[str(path)] = hits(text)
    return found


def run_all(runs: list[tuple[list[str], dict[str, str]]]) -> list[str]:
    """Start every command at once, then wait for each: what each printed (stdout, then
    stderr). Together, their start-ups and retry back-offs overlap."""
    started = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for argv, env in runs
    ]
    try:
        return ["".join(process.communicate(timeout=300)) for process in started]
    finally:
        for process in started:
            process.kill()
            process.wait()


@pytest.fixture
def env(session_home: Path) -> dict[str, str]:
    return os.environ | SECRETS | {"WIKIQA_HOME": str(session_home)}


@pytest.mark.slow
def test_cli_and_eval_outputs_carry_no_secret(tmp_path: Path, env: dict[str, str]) -> None:
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "wikiqa.cli"]
    runs = [
        [*cli, "ask", "Who developed the FLOW-MATIC programming language?", "--json", "-v"],
        [*cli, "ask", "What did Grace Hopper eat on her 40th birthday?", "-v"],
        [*cli, "ask", "x", "--model", "anthropic:claude-sonnet-4-6", "--source", "/nonexistent"],
        [*cli, "eval", "--trials", "1", "--limit", "6", "--out", str(out), "--record"],
        [*cli, "snapshot", "info"],
    ]
    logs = run_all([(argv, env) for argv in runs])
    assert list((out / "runs").glob("*.parquet"))
    assert [hits(log) for log in logs if hits(log)] == []
    assert scan_tree(out) == {}


@pytest.mark.slow
def test_notebook_outputs_carry_no_secret(recorded_steps: Path) -> None:
    """The session's recorded steps ran through papermill with these fake keys and token set
    (tests/conftest.py): their executed notebooks, parquets and change log carry none."""
    assert len(list((recorded_steps / "notebooks").glob("*.ipynb"))) >= 3
    assert list((recorded_steps / "runs").glob("*.parquet"))
    assert scan_tree(recorded_steps) == {}


def test_a_live_model_run_records_no_key(
    tmp_path: Path, tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    reply = anthropic_message([tool_use("refuse", {"reason": "Not in the fetched text."})])
    seen: list[httpx2.Request] = []
    model = AnthropicModel(  # the key comes from the environment, as in real use
        "claude-sonnet-4-6",
        sdk_max_retries=0,
        retry=RetryPolicy(attempts=1),
        http_client=httpx2.Client(transport=scripted_transport([reply], seen)),
    )
    outcome = run_eval(
        RunConfig(trials=1, limit=3, out=tmp_path / "out"), model=model, source=tiny, progress=False
    )
    assert seen and SECRETS["WIKIQA_ANTHROPIC_API_KEY"] in seen[0].headers["authorization"]
    assert outcome.model_calls >= 1
    assert scan_tree(tmp_path / "out") == {}
    assert hits(outcome.model_dump_json()) == []


def test_api_responses_carry_no_secret(
    tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    client = TestClient(create_app(ExtractiveModel(), tiny, Settings()))
    token = {"Authorization": f"Bearer {SECRETS['WIKIQA_API_TOKEN']}"}
    responses = [
        client.get("/healthz"),
        client.post("/api/ask", json={"question": "Who developed FLOW-MATIC?"}, headers=token),
        client.post("/api/ask", json={"question": "Who developed FLOW-MATIC?"}),
        client.post("/api/ask", json={"question": ""}, headers=token),
        client.post("/api/ask", json={"question": "x"}, headers={"Authorization": "Bearer wrong"}),
        client.get("/openapi.json"),  # closed without the token (issue 16 item 11)
        client.get("/openapi.json", headers=token),
        client.get("/healthz", headers=token),
    ]
    assert [r.status_code for r in responses] == [200, 200, 401, 422, 401, 401, 200, 200]
    assert [hits(r.text + str(r.headers)) for r in responses] == [[]] * len(responses)


@pytest.mark.slow
def test_served_logs_carry_no_secret(env: dict[str, str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "wikiqa.cli", "serve", "--port", str(port), "--log-level", "debug"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=1).read()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "server did not start"
                time.sleep(0.1)
        for headers in ({"Authorization": f"Bearer {SECRETS['WIKIQA_API_TOKEN']}"}, {}):
            request = urllib.request.Request(
                f"{base}/api/ask", data=b'{"question": "Who developed FLOW-MATIC?"}',
                headers={"content-type": "application/json", **headers},
            )  # fmt: skip
            try:
                body = urllib.request.urlopen(request, timeout=10).read().decode()
            except urllib.error.HTTPError as err:
                body = err.read().decode()
            assert hits(body) == []
    finally:
        server.terminate()
        log, _ = server.communicate(timeout=10)
    assert "POST /api/ask" in log
    assert hits(log) == []


def test_a_dotenv_in_the_working_directory_cannot_redirect_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23, item 4: a `.env` in an untrusted folder set WIKIQA_OPENAI_BASE_URL and so
    received OPENAI_API_KEY. Settings that choose where a key goes need WIKIQA_TRUST_DOTENV=1."""
    from wikiqa.models.openai_model import OpenAIModel

    (tmp_path / ".env").write_text(
        "WIKIQA_OPENAI_BASE_URL=http://127.0.0.1:9/v1\nWIKIQA_MODEL=openai:x@http://127.0.0.1:9/v1\n"
        "WIKIQA_ALLOW_ANY_HOST=1\nWIKIQA_LIVE_HOST=evil.example\nWIKIQA_CONTACT=me@example.org\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WIKIQA_TRUST_DOTENV", raising=False)
    for name in ("WIKIQA_OPENAI_BASE_URL", "WIKIQA_MODEL", "WIKIQA_CONTACT"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert settings.openai_base_url is None and settings.model == "extractive"
    assert not settings.allow_any_host and settings.live_host == "en.wikipedia.org"
    assert settings.contact == "me@example.org"  # harmless settings still come from it
    assert OpenAIModel("gpt-4o", api_key="sk-x").base_url is None
    monkeypatch.setenv("WIKIQA_TRUST_DOTENV", "1")  # the opt-in, from the real environment
    trusted = Settings()
    assert trusted.openai_base_url == "http://127.0.0.1:9/v1" and trusted.allow_any_host


class _Echo(BaseHTTPRequestHandler):
    """A server (or proxy) that answers 400 quoting every request header back."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        echoed = f"bad request to {self.path}; headers were: {dict(self.headers.items())!r}"
        body = json.dumps(
            {"type": "error", "error": {"type": "invalid_request_error", "message": echoed}}
        ).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


# Planted keys in the providers' real shapes, built at run time so that no key-shaped literal
# sits in the repository (a secret scanner would rightly flag one).
_SK = "sk" + "-"
ECHOED = {
    "OPENAI_API_KEY": _SK + "TESTSECRET456-openai-echo-000000",
    "ANTHROPIC_API_KEY": _SK + "ant-TESTSECRET457-anthropic-echo-00",
    "WIKIQA_API_TOKEN": "wq-TESTSECRET458-token",
    "URL_PASSWORD": "TESTSECRET789pw",
}


@pytest.mark.slow
def test_keys_echoed_by_a_server_reach_no_output(
    tmp_path: Path, tiny: SnapshotSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23, items 2 and 3: every provider and the judge driven into a 400 whose body
    echoes the request's headers (so the key), with a password in a base URL; then every file
    the runs wrote, everything they printed and every response is searched for the secrets."""
    echo = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=echo.serve_forever, daemon=True).start()
    port = echo.server_address[1]
    with_password = f"http://user:{ECHOED['URL_PASSWORD']}@127.0.0.1:{port}/v1"
    plain = f"http://127.0.0.1:{port}/v1"
    env = os.environ | {k: v for k, v in ECHOED.items() if k != "URL_PASSWORD"}
    env |= {"WIKIQA_RESULTS": str(tmp_path / "results")}
    cli = [sys.executable, "-m", "wikiqa.cli"]
    one = ["--trials", "1", "--limit", "1", "--no-cache"]
    out = tmp_path / "out"
    runs: list[tuple[list[str], dict[str, str]]] = [
        ([*cli, "eval", "--model", f"openai:x@{plain}", *one, "--out", str(out / "a")], {}),
        ([*cli, "eval", "--model", "openai:x", *one, "--out", str(out / "b")],
         {"WIKIQA_OPENAI_BASE_URL": with_password}),
        ([*cli, "eval", "--model", "anthropic:claude-sonnet-4-6", *one, "--out", str(out / "c")],
         {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}),
        ([*cli, "eval", "--judge", f"openai:judge@{with_password}", *one, "--out",
          str(out / "d"), "--record"], {}),
        ([*cli, "ask", "Who developed FLOW-MATIC?", "--json", "-v", "--model",
          f"openai:x@{with_password}"], {}),
        ([*cli, "experiment", "run", str(EXPERIMENTS / "01_agent_baseline.ipynb"), "-p", "MODEL",
          f"openai:x@{with_password}", "-p", "LIMIT", "1", "-p", "TRIALS", "1", "--out",
          str(out / "e")], {}),
    ]  # fmt: skip
    try:
        logs = run_all([(argv, env | extra) for argv, extra in runs])
        for name, value in ECHOED.items():
            if name != "URL_PASSWORD":
                monkeypatch.setenv(name, value)
        from wikiqa.registry import open_model

        client = TestClient(create_app(open_model(f"openai:x@{with_password}"), tiny, Settings()))
        auth = {"Authorization": f"Bearer {ECHOED['WIKIQA_API_TOKEN']}"}
        served = [
            client.post("/api/ask", json={"question": "Who developed FLOW-MATIC?"}, headers=auth),
            client.get("/healthz", headers=auth),
        ]
    finally:
        echo.shutdown()
    # the runs did meet the echo: the refusals say HTTP 400 and quote the (scrubbed) headers
    assert "HTTP 400" in served[0].text and "***" in served[0].text
    assert sum("HTTP 400" in log for log in logs) >= 2, logs
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".log.jsonl") for p in written) and any(
        p.suffix == ".parquet" for p in written
    )

    def leaks(text: str) -> list[str]:
        return [name for name, value in ECHOED.items() if value in text]

    assert [leaks(log) for log in logs] == [[]] * len(logs)
    assert [leaks(r.text) for r in served] == [[], []]
    found = {}
    for path in written:
        text = path.read_bytes().decode("utf-8", "replace")
        if path.suffix == ".parquet":
            text = pd.read_parquet(path).astype(str).to_csv()
        if leaks(text):
            found[str(path)] = leaks(text)
    assert found == {}


def test_a_changed_or_removed_secret_is_seen_at_the_next_scrub(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The regex of known secrets is cached on a fingerprint of the environment: every change
    # to a secret-named variable must reach the next scrub.
    from wikiqa.secrets import scrub

    monkeypatch.setenv("CASSETTE_TEST_TOKEN", "first-secret-1234")
    assert scrub("a first-secret-1234 b") == "a *** b"
    monkeypatch.setenv("CASSETTE_TEST_TOKEN", "second-secret-5678")
    assert scrub("first-secret-1234 second-secret-5678") == "first-secret-1234 ***"
    monkeypatch.delenv("CASSETTE_TEST_TOKEN")
    assert scrub("second-secret-5678") == "second-secret-5678"
