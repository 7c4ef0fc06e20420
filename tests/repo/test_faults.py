"""Faults across the stack, with mocked HTTP: every outage becomes an infrastructure-error
refusal (never an answer), the harness retries and reports it apart, and --resume finishes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
import requests
import responses

from tests.conftest import dns_failure
from tests.models.test_providers import (
    anthropic_error,
    anthropic_message,
    claude,
    scripted_transport,
    tool_use,
)
from tests.sources.test_live import API, mw
from wikiqa.agent import Agent, Refusal
from wikiqa.cli import main
from wikiqa.models import ExtractiveModel
from wikiqa.sources import SnapshotSource
from wikiqa.sources.live import LiveSource

QUESTION = "What is the highest mountain on Earth?"


def live() -> LiveSource:
    return LiveSource(
        attempts=3, backoff=0.0, contact="mailto:tests@example.org", sleep=lambda s: None
    )


MEDIAWIKI_FAULTS: dict[str, dict[str, Any]] = {
    "429-retry-after": {"status": 429, "body": "Too many requests", "headers": {"Retry-After": "1"}},
    "500": {"status": 500, "body": "Internal Server Error"},
    "503": {"status": 503, "body": "<html>Wikimedia Error</html>", "content_type": "text/html"},
    "timeout": {"body": requests.exceptions.ReadTimeout("read timed out")},
    "maxlag": {"json": {"error": {"code": "maxlag", "info": "Waiting for db: 7 seconds lagged."}}, "headers": {"Retry-After": "1", "X-Database-Lag": "7"}},
    "malformed-json": {"body": '{"batchcomplete": true, "query": {"sea', "content_type": "application/json"},
    "dns": {"body": dns_failure()},
}  # fmt: skip


@pytest.mark.parametrize("fault", sorted(MEDIAWIKI_FAULTS))
def test_mediawiki_faults_become_infrastructure_refusals(fault: str) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as http:
        http.get(API, **MEDIAWIKI_FAULTS[fault])
        result = Agent(ExtractiveModel(), live()).ask(QUESTION)
    assert isinstance(result.output, Refusal)
    assert result.output.reason_code == "source_unavailable"
    assert result.infrastructure_error and result.needs_human_review


@pytest.mark.parametrize("fault", ["429-retry-after", "503", "timeout", "maxlag", "malformed-json"])
def test_mediawiki_faults_mid_run_after_search_also_refuse(fault: str) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as http:
        http.get(
            API,
            json=mw("search_highest_mountain"),
            match=[responses.matchers.query_param_matcher({"list": "search"}, strict_match=False)],
        )
        http.get(API, **MEDIAWIKI_FAULTS[fault])
        result = Agent(ExtractiveModel(), live()).ask(QUESTION)
    assert isinstance(result.output, Refusal) and result.output.reason_code == "source_unavailable"
    assert [e.kind for e in result.trace][:2] == ["search", "model"]


def test_a_missing_page_is_not_an_outage() -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as http:
        http.get(
            API,
            json=mw("search_highest_mountain"),
            match=[responses.matchers.query_param_matcher({"list": "search"}, strict_match=False)],
        )
        http.get(API, json=mw("article_missing"))
        result = Agent(ExtractiveModel(), live()).ask(QUESTION)
    assert isinstance(result.output, Refusal)
    assert result.output.reason_code == "not_supported" and not result.infrastructure_error


MODEL_FAULTS: dict[str, Any] = {
    "429": anthropic_error(429, "rate_limit_error", {"retry-after": "1"}),
    "529-overloaded": anthropic_error(529, "overloaded_error"),
    "500": anthropic_error(500, "api_error"),
    "timeout": httpx2.ReadTimeout("timed out"),
}  # a model's `refusal` stop reason is its decision, not a fault (test_providers.py)


@pytest.mark.parametrize("fault", sorted(MODEL_FAULTS))
def test_model_faults_become_infrastructure_refusals(fault: str, tiny: SnapshotSource) -> None:
    model = claude(scripted_transport([MODEL_FAULTS[fault]], []), [])
    result = Agent(model, tiny).ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Refusal)
    assert result.output.reason_code == "model_unavailable"
    assert result.infrastructure_error


def test_persistently_malformed_tool_calls_never_become_an_answer(tiny: SnapshotSource) -> None:
    truncated = anthropic_message(
        [tool_use("submit_answer", {"answer": "Grace Hopper"})]
    )  # no citations
    model = claude(scripted_transport([truncated], []), [])
    result = Agent(model, tiny).ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Refusal)
    assert result.output.reason_code == "ungrounded" and not result.infrastructure_error
    assert (
        "citations: Field required" in next(e for e in result.trace if e.kind == "repair").summary
    )


@pytest.mark.slow
def test_eval_reports_outages_apart_and_resume_completes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "model.json"
    script.write_text(
        json.dumps([{"unavailable": "anthropic: overloaded (HTTP 529) (gave up after 3 attempts)"}])
    )
    out = tmp_path / "out"
    argv = [
        "eval",
        "--trials",
        "1",
        "--limit",
        "4",
        "--model",
        f"scripted:{script}",
        "--out",
        str(out),
    ]
    assert main(argv) == 3
    captured = capsys.readouterr()
    assert "infrastructure errors 4 (trials)" in captured.out
    run_id = next((out / "runs").glob("*.log.jsonl")).name.removesuffix(".log.jsonl")
    assert f"finish them with the same command and --resume {run_id}" in captured.err
    # The model comes back: the same spec now answers (it refuses, which is fine: not an outage).
    script.write_text(
        json.dumps([[{"name": "refuse", "arguments": {"reason": "Not in the fetched text."}}]])
    )
    # a resume names its model: the log never does (it could name any host, with your key)
    same = ["eval", "--resume", run_id, "--out", str(out), "--trials", "1", "--limit", "4"]
    assert main(same) == 1
    assert "was made with model=" in capsys.readouterr().err
    assert main([*same, "--model", f"scripted:{script}"]) == 0
    captured = capsys.readouterr()
    assert "4 trials run now" in captured.out and "infrastructure errors 0" in captured.out


@pytest.mark.slow
def test_a_run_that_met_only_outages_is_never_recorded_and_names_its_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "model.json"
    script.write_text(json.dumps([{"unavailable": "anthropic: overloaded (HTTP 529)"}]))
    out = tmp_path / "out"
    argv = ["eval", "--trials", "1", "--limit", "3", "--model", f"scripted:{script}",
            "--out", str(out), "--record"]  # fmt: skip
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "nothing recorded" in err and "overloaded (HTTP 529)" in err
    assert not (out / "changelog.jsonl").exists()
    # the same through the library: record_run refuses, naming the first cause
    from wikiqa.evals import InfrastructureFailure, RunConfig, record, run_eval

    outcome = run_eval(
        RunConfig(trials=1, limit=2, model=f"scripted:{script}", out=out, infra_backoff=0.0),
        progress=False,
    )
    assert outcome.all_failed and "overloaded" in (outcome.first_error or "")
    with pytest.raises(InfrastructureFailure, match="nothing was recorded"):
        record(outcome, "record")
    assert not (out / "changelog.jsonl").exists()


@pytest.mark.slow
def test_a_run_reports_as_it_goes_and_tells_the_first_outage_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "down.json"
    script.write_text(json.dumps([{"unavailable": "openai-compatible server: connection refused"}]))
    argv = ["eval", "--trials", "1", "--limit", "3", "--model", f"scripted:{script}",
            "--out", str(tmp_path / "out"), "--concurrency", "3"]  # fmt: skip
    assert main(argv) == 3
    err = capsys.readouterr().err.splitlines()
    # stderr is not a terminal here: a line as trials finish (every tenth) instead of a bar
    assert [line for line in err if line.endswith("trials done")] == [
        "wikiqa: 1/3 trials done", "wikiqa: 2/3 trials done", "wikiqa: 3/3 trials done",
    ]  # fmt: skip
    first = next(i for i, line in enumerate(err) if "infrastructure error on" in line)
    assert "connection refused" in err[first] and first == 0  # told with the first trial
    assert sum("infrastructure error on" in line for line in err) == 1
