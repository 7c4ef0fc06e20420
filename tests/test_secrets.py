"""No secret reaches an output: run the CLI, an eval, a notebook and the API with fake keys and
a fake token set, then scan everything they wrote or answered. Target: 0 hits."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import httpx2
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from tests.test_providers import anthropic_message, scripted_transport, tool_use
from wikiqa.api.app import create_app
from wikiqa.config import Settings
from wikiqa.evals import RunConfig, run_eval
from wikiqa.experiment import EXPERIMENTS
from wikiqa.models import ExtractiveModel
from wikiqa.models.anthropic_model import AnthropicModel
from wikiqa.retry import RetryPolicy
from wikiqa.sources import SnapshotSource

SECRETS = {
    "WIKIQA_ANTHROPIC_API_KEY": "test-wikiqa-anthropic-key-0000000000000000",
    "ANTHROPIC_API_KEY": "test-anthropic-key-1111111111111111111111",
    "OPENAI_API_KEY": "test-openai-key-22222222222222222222222222",
    "WIKIQA_API_TOKEN": "wq-FAKE-TOKEN-33333333",
}


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


@pytest.fixture
def env(session_home: Path) -> dict[str, str]:
    return os.environ | SECRETS | {"WIKIQA_HOME": str(session_home)}


def test_cli_eval_and_notebook_outputs_carry_no_secret(tmp_path: Path, env: dict[str, str]) -> None:
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "wikiqa.cli"]
    runs = [
        [*cli, "ask", "Who developed the FLOW-MATIC programming language?", "--json", "-v"],
        [*cli, "ask", "What did Grace Hopper eat on her 40th birthday?", "-v"],
        [*cli, "ask", "x", "--model", "anthropic:claude-sonnet-4-6", "--source", "/nonexistent"],
        [*cli, "eval", "--trials", "1", "--limit", "6", "--out", str(out), "--record"],
        [
            *cli,
            "experiment",
            "run",
            str(EXPERIMENTS / "01_agent_baseline.ipynb"),
            "-p",
            "TRIALS",
            "1",
            "-p",
            "LIMIT",
            "3",
            "--out",
            str(out),
        ],
        [*cli, "snapshot", "info"],
    ]
    logs = []
    for argv in runs:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        logs += [done.stdout, done.stderr]
    assert list((out / "runs").glob("*.parquet")) and list((out / "notebooks").glob("*.ipynb"))
    assert [hits(log) for log in logs if hits(log)] == []
    assert scan_tree(out) == {}


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
