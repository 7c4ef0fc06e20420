"""Judges against the replies real models send: parsed robustly, at temperature 0, asking for
structured output, with the transcript recorded. Bodies are replayed through the real SDKs over
httpx2.MockTransport (tests/data/live/README.md says where each was recorded)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from wikiqa.evals.graders.judge import (
    FaithfulnessVerdict,
    Judge,
    ReferenceVerdict,
    first_json_object,
    parse_verdict,
)
from wikiqa.models import AnthropicModel, OpenAIModel
from wikiqa.retry import RetryPolicy

LIVE = Path(__file__).parents[2] / "data" / "live"
VERDICT = {"verdict": "fail", "supported_fraction": 0.5, "unsupported_claims": ["won a prize"]}


def body(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((LIVE / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def verdict_reply() -> dict[str, Any]:
    """A real gpt-4o body with its tool call replaced by the verdict as text."""
    reply = copy.deepcopy(body("openai_gpt4o_tool_call"))
    message = reply["choices"][0]["message"]
    message.pop("tool_calls", None)
    message["content"] = json.dumps(VERDICT)
    reply["choices"][0]["finish_reason"] = "stop"
    return reply


def serve(replies: list[dict[str, Any]], seen: list[httpx2.Request]) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=replies[len(seen) - 1])

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def claude(replies: list[dict[str, Any]], seen: list[httpx2.Request]) -> Judge:
    return Judge(
        AnthropicModel(
            "claude-opus-4-8",
            api_key="test-anthropic-key-never-shown",
            sdk_max_retries=0,
            retry=RetryPolicy(attempts=1, backoff=0.0, max_wait=0.0, sleep=lambda _: None),
            http_client=serve(replies, seen),
        )
    )


def test_a_real_plain_json_reply_is_read_strictly() -> None:
    reply = body("sonnet45_json_text")
    assert parse_verdict(reply["content"][0]["text"], FaithfulnessVerdict) == (
        None, "schema_mismatch",
    )  # fmt: skip
    reply["content"][0]["text"] = json.dumps(VERDICT)
    seen: list[httpx2.Request] = []
    outcome = claude([reply], seen).faithfulness("q", "a", ["text"])
    assert outcome.verdict == FaithfulnessVerdict.model_validate(VERDICT)
    assert outcome.transcript["fallback"] is None
    assert outcome.transcript["model"] == "claude-sonnet-4-5-20250929"  # from the real body


def test_a_real_fenced_reply_with_prose_and_nested_braces_is_found() -> None:
    text = body("claude_sonnet4_fenced_json")["content"][0]["text"]
    found = first_json_object(text)
    assert found is not None and found["discount"]["range"] == {"lower": 60, "upper": 100}
    reply = body("claude_sonnet4_fenced_json")
    reply["content"][0]["text"] = text.replace(
        text[text.index("{") : text.rindex("}") + 1], json.dumps(VERDICT, indent=2)
    )
    seen: list[httpx2.Request] = []
    outcome = claude([reply], seen).faithfulness("q", "a", ["text"])
    assert outcome.verdict is not None and outcome.verdict.verdict == "fail"
    assert outcome.transcript["fallback"] == "extracted_json_object"


def test_judges_ask_claude_for_the_verdict_schema_and_send_no_sampling_parameters() -> None:
    # API version 2026-10-21 answers 400 to temperature/top_p/top_k on every Claude model, so
    # determinism comes from the schema and the response cache, and the transcript says so.
    reply = body("sonnet45_json_text")
    reply["content"][0]["text"] = json.dumps(VERDICT)
    seen: list[httpx2.Request] = []
    outcome = claude([reply], seen).faithfulness("q", "a", ["text"])
    sent = json.loads(seen[0].content)
    assert not {"temperature", "top_p", "top_k"} & set(sent)
    schema = sent["output_config"]["format"]["schema"]
    assert sent["output_config"]["format"]["type"] == "json_schema"
    assert schema["additionalProperties"] is False and set(schema["required"]) == {
        "verdict", "supported_fraction",
    }  # fmt: skip
    assert outcome.verdict == FaithfulnessVerdict.model_validate(VERDICT)
    assert outcome.transcript["options"] == {"temperature": 0.0, "schema_name": "verdict"}


def test_judges_ask_openai_compatible_servers_for_a_json_schema() -> None:
    reply = verdict_reply()
    seen: list[httpx2.Request] = []
    judge = Judge(
        OpenAIModel(
            "gpt-4o",
            base_url="http://127.0.0.1:9/v1",
            sdk_max_retries=0,
            retry=RetryPolicy(attempts=1, backoff=0.0, max_wait=0.0, sleep=lambda _: None),
            http_client=serve([reply], seen),
        )
    )
    outcome = judge.faithfulness("q", "a", ["text"])
    sent = json.loads(seen[0].content)
    assert sent["temperature"] == 0.0
    assert sent["response_format"]["type"] == "json_schema"
    again: list[httpx2.Request] = []
    reasoning = OpenAIModel(
        "gpt-5.2", base_url="http://127.0.0.1:9/v1", sdk_max_retries=0,
        http_client=serve([reply], again),
    )  # fmt: skip
    Judge(reasoning).faithfulness("q", "a", ["text"])
    assert "temperature" not in json.loads(again[0].content)  # reasoning models reject it
    assert sent["response_format"]["json_schema"]["schema"] == (
        FaithfulnessVerdict.model_json_schema()
    )
    assert outcome.verdict == FaithfulnessVerdict.model_validate(VERDICT)


def test_a_server_that_takes_schemas_only_as_json_object_is_believed_once() -> None:
    # llama-cpp-python's server (what `wikiqa local-model serve` runs) answers OpenAI's
    # json_schema format with this 500; the provider resends the schema as json_object at once
    # (no retry, no backoff) and sends it so from then on.
    refused = body("llamacpp_python_500_json_schema")
    reply = verdict_reply()
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        sent = json.loads(request.content)["response_format"]
        if sent["type"] == "json_schema":
            return httpx2.Response(500, json=refused)
        return httpx2.Response(200, json=reply)

    model = OpenAIModel(
        "qwen2.5-coder-1.5b-instruct-q4_k_m", base_url="http://127.0.0.1:9/v1", sdk_max_retries=0,
        retry=RetryPolicy(attempts=1, backoff=0.0, max_wait=0.0, sleep=lambda _: None),
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )  # fmt: skip
    judge = Judge(model)
    first = judge.faithfulness("q", "a", ["text"])
    assert first.verdict == FaithfulnessVerdict.model_validate(VERDICT)
    formats = [json.loads(r.content)["response_format"] for r in seen]
    assert [f["type"] for f in formats] == ["json_schema", "json_object"]
    assert formats[1]["schema"] == FaithfulnessVerdict.model_json_schema()
    judge.faithfulness("q", "b", ["text"])
    assert json.loads(seen[-1].content)["response_format"]["type"] == "json_object"
    assert len(seen) == 3  # believed: the second call asked once


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # a brace in the prose before the JSON (the old greedy {.*} swallowed both)
        ('I checked {each claim}. {"verdict": "fail", "supported_fraction": 0.5}', "fail"),
        ('{"verdict": "Pass", "supported_fraction": 1, "unsupported_claims": []}', "pass"),
        ('{"verdict": " FAIL ", "supported_fraction": "50%", "unsupported_claims": null}', "fail"),
        ('{"verdict": "pass", "supported_fraction": 85, "unsupported_claims": null}', "pass"),
    ],
)
def test_verdicts_parse_robustly(reply: str, expected: str) -> None:
    verdict, _ = parse_verdict(reply, FaithfulnessVerdict)
    assert verdict is not None and verdict.verdict == expected
    assert 0.0 <= verdict.supported_fraction <= 1.0 and verdict.unsupported_claims is not None


def test_fractions_as_percentages_and_null_lists_in_reference_verdicts() -> None:
    reply = (
        '{"correctness": "Pass", "contradicting_claim": null, "completeness": "Fail", '
        '"key_points_covered": "50%", "missing_points": null}'
    )
    verdict, fallback = parse_verdict(reply, ReferenceVerdict)
    assert verdict == ReferenceVerdict(
        correctness="pass", completeness="fail", key_points_covered=0.5, missing_points=[]
    )
    assert fallback is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("It passes, I think.", "unparseable"),
        ('{"verdict": "maybe", "supported_fraction": 0.5}', "schema_mismatch"),
        ('{"verdict": "pass", "supported_fraction": 250}', "schema_mismatch"),
    ],
)
def test_what_cannot_be_read_is_never_a_guess(reply: str, reason: str) -> None:
    assert parse_verdict(reply, FaithfulnessVerdict) == (None, reason)
