"""The real local model end to end: llama.cpp's server on loopback, `wikiqa ask` through the
ordinary openai provider, and a small eval. Assertions are on structure and on the graders'
verdicts being recorded, not on a 135M-parameter model being right. Run by `make test-local`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pandas as pd
import pytest

from wikiqa.evals import RunConfig, run_eval
from wikiqa.models import local as local_model
from wikiqa.models.local.serving import PARENT_ENV

pytestmark = pytest.mark.local


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    process, spec, key = local_model.start()
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = key  # what reaches this server: its own key
    yield spec
    if saved is None:
        os.environ.pop("OPENAI_API_KEY", None)
    else:
        os.environ["OPENAI_API_KEY"] = saved
    process.terminate()
    process.wait(timeout=30)


def test_ask_through_the_local_server(served: str, session_home: Path) -> None:
    env = os.environ | {"WIKIQA_HOME": str(session_home)}
    done = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", "ask", "Who developed the FLOW-MATIC programming language?", "--model", served, "--json"],
        env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["model"] == served and not result["infrastructure_error"]
    assert result["output"]["kind"] in {"answer", "refusal"}
    models = [e for e in result["trace"] if e["kind"] == "model"]
    assert models and all(e["tokens"]["input_tokens"] > 0 for e in models)
    assert result["trace"][0]["kind"] == "search"  # always retrieve, whatever the model does
    if result["output"]["kind"] == "answer":  # grounded by construction, or it would be a refusal
        fetched = {r["title"]: r["text"] for r in result["retrieved"]}
        assert all(c["title"] in fetched for c in result["output"]["citations"])


def _children_of(pid: int) -> list[int]:
    """The local-model servers started for process `pid`, alive now (they carry its pid)."""
    mark = f"{PARENT_ENV}={pid}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:  # gone, or not ours
            continue
    return found


def test_ask_serves_a_local_spec_for_the_command_and_stops_it(session_home: Path) -> None:
    env = os.environ | {"WIKIQA_HOME": str(session_home)}
    command = [sys.executable, "-m", "wikiqa.cli", "ask", "Who developed FLOW-MATIC?", "--model", "local", "--read-first", "1", "--json"]  # fmt: skip
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as ask:
        out, err = ask.communicate(timeout=600)
    assert ask.returncode == 0, err.decode()
    result = json.loads(out)
    # recorded as the canonical spec a run records, whatever port served it
    assert result["model"].startswith("openai:") and "@http://127.0.0.1:8080/v1" in result["model"]
    assert result["usage"]["model_calls"] > 0 and not result["infrastructure_error"]
    assert _children_of(ask.pid) == []  # its server ended with it


def test_a_small_eval_records_every_verdict(served: str, tmp_path: Path) -> None:
    outcome = run_eval(
        RunConfig(model=served, trials=1, limit=3, concurrency=1, read_first=1, out=tmp_path),
        progress=False,
    )
    frame = pd.read_parquet(outcome.parquet)
    assert frame["task_id"].nunique() == 3 and set(frame["model"]) == {served}
    assert set(frame["verdict"]) <= {
        "pass",
        "fail",
        "n/a",
        "needs_judge",
    }  # no infrastructure errors
    per_task = frame.groupby("task_id")["dimension"].apply(set)
    assert all({"faithfulness", "calibration"} <= dims for dims in per_task)
    assert frame.drop_duplicates("task_id")["input_tokens"].gt(0).all()
    assert outcome.model_calls > 0


def test_the_server_returns_openai_tool_calls_within_max_tokens(served: str) -> None:
    model, base_url = served.removeprefix("openai:").split("@", 1)
    client = openai.OpenAI(api_key=os.environ["OPENAI_API_KEY"], base_url=base_url, timeout=300)
    tool: Any = {
        "type": "function",
        "function": {
            "name": "search_wikipedia",
            "description": "Search English Wikipedia.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
    messages: list[Any] = [{"role": "user", "content": "Search Wikipedia for Grace Hopper."}]
    reply = client.chat.completions.create(
        model=model, messages=messages, tools=[tool], tool_choice="required", max_tokens=64
    )
    choice = reply.choices[0]
    assert choice.message.tool_calls and choice.finish_reason in {"tool_calls", "length"}
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "search_wikipedia"
    if choice.finish_reason == "tool_calls":  # a call the grammar closed parses
        assert isinstance(json.loads(call.function.arguments)["query"], str)
    assert reply.usage is not None and reply.usage.completion_tokens <= 64
    plain = client.chat.completions.create(model=model, messages=messages, max_tokens=16)
    assert plain.choices[0].message.tool_calls is None
    assert plain.usage is not None and plain.usage.completion_tokens <= 16


def test_a_judge_on_the_local_server_gets_json_of_its_schema(served: str) -> None:
    """llama-cpp-python's server refuses OpenAI's `json_schema` format (a 500); the provider
    falls back to `json_object` with the schema once, and the handler decodes under it: even a
    135M model's verdict then parses strictly, with no fallback."""
    from wikiqa.evals.graders.judge import Judge
    from wikiqa.registry import open_model

    judge = Judge(open_model(served))
    outcome = judge.simpleqa("What is the capital of France?", "Paris", ["Paris"], "Paris.")
    assert outcome.verdict is not None, outcome.transcript["response"]
    assert outcome.transcript["fallback"] is None  # the whole reply is the JSON object
    assert outcome.verdict.grade in {"correct", "incorrect", "not_attempted"}
    again = judge.simpleqa("What is the capital of France?", "Paris", ["Paris"], "Lyon.")
    assert again.verdict is not None and again.transcript["fallback"] is None


def test_the_server_gives_each_tokens_logprob_when_asked(served: str) -> None:
    """What the reading mode's confidence signals are read from: one entry per generated token,
    the tokens spelling the reply, log-probabilities at most 0, the alternatives best first and
    the sampled token (greedy, no grammar) the likeliest of them."""
    model, base_url = served.removeprefix("openai:").split("@", 1)
    client = openai.OpenAI(api_key=os.environ["OPENAI_API_KEY"], base_url=base_url, timeout=300)
    messages: list[Any] = [{"role": "user", "content": "Who wrote Hamlet? Answer in two words."}]
    reply = client.chat.completions.create(
        model=model, messages=messages, max_tokens=8, logprobs=True, top_logprobs=5
    )
    choice = reply.choices[0]
    assert choice.logprobs is not None and choice.logprobs.content
    tokens = choice.logprobs.content
    assert "".join(t.token for t in tokens).strip() == (choice.message.content or "").strip()
    assert reply.usage is not None and len(tokens) <= reply.usage.completion_tokens
    for t in tokens:
        assert t.logprob <= 0.0 and len(t.top_logprobs) == 5
        alternatives = [a.logprob for a in t.top_logprobs]
        assert alternatives == sorted(alternatives, reverse=True)
        assert t.logprob == pytest.approx(alternatives[0], abs=1e-4)
    unasked = client.chat.completions.create(model=model, messages=messages, max_tokens=8)
    assert unasked.choices[0].logprobs is None
