"""The anthropic and openai providers through their real SDKs, over httpx2.MockTransport."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from wikiqa.agent import Agent, AgentConfig, Answer, Refusal
from wikiqa.models import (
    TOOLS,
    AnthropicModel,
    CallOptions,
    Message,
    ModelUnavailable,
    OpenAIModel,
    ToolResult,
    UserMessage,
)
from wikiqa.models.openai_model import from_openai
from wikiqa.registry import open_model
from wikiqa.retry import RetryPolicy
from wikiqa.sources import SnapshotSource

FAKE_KEY = "test-anthropic-key-never-shown"
LIVE = Path(__file__).parents[1] / "data" / "live"


def live(name: str) -> dict[str, Any]:
    """A body the service really sent (tests/data/live/README.md says where it was recorded)."""
    body: dict[str, Any] = json.loads((LIVE / f"{name}.json").read_text(encoding="utf-8"))
    return body


HOPPER = "She developed the FLOW-MATIC programming language."
Handler = Callable[[httpx2.Request], httpx2.Response]


def scripted_transport(responses: list[Any], seen: list[httpx2.Request]) -> httpx2.MockTransport:
    """Serve `responses` in order: an httpx2.Response, or an exception to raise."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        item = responses[min(len(seen), len(responses)) - 1]
        if isinstance(item, Exception):
            raise item
        assert isinstance(item, httpx2.Response)
        return item

    return httpx2.MockTransport(handler)


def anthropic_message(content: list[dict[str, Any]], stop: str = "tool_use") -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 2095,
                "output_tokens": 103,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 1800,
                "service_tier": "standard",
            },
        },
        headers={"request-id": "req_011CPw7Y6bGh7c", "content-type": "application/json"},
    )


def anthropic_error(
    status: int, kind: str, headers: dict[str, str] | None = None
) -> httpx2.Response:
    return httpx2.Response(
        status,
        json={"type": "error", "error": {"type": kind, "message": kind.replace("_", " ")}},
        headers={"content-type": "application/json", **(headers or {})},
    )


def tool_use(
    name: str, arguments: dict[str, Any], id_: str = "toolu_01A09q90qw90lq917835lq9"
) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": arguments}


def claude(transport: httpx2.MockTransport, waits: list[float]) -> AnthropicModel:
    return AnthropicModel(
        "claude-sonnet-4-6",
        api_key=FAKE_KEY,
        sdk_max_retries=0,
        retry=RetryPolicy(attempts=3, backoff=1.0, max_wait=60.0, sleep=waits.append),
        http_client=httpx2.Client(transport=transport),
    )


def openai_completion(message: dict[str, Any], finish: str = "tool_calls") -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-9x7",
            "object": "chat.completion",
            "created": 1764400000,
            "model": "qwen2.5:7b-instruct",
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 812, "completion_tokens": 24, "total_tokens": 836},
        },
    )


def openai_call(name: str, arguments: str, id_: str = "call_x1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": id_,
                "index": 0,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        ],
    }


def local(transport: httpx2.MockTransport, waits: list[float]) -> OpenAIModel:
    return OpenAIModel(
        "qwen2.5:7b-instruct",
        base_url="http://127.0.0.1:11434/v1",
        sdk_max_retries=0,
        retry=RetryPolicy(attempts=3, backoff=1.0, max_wait=60.0, sleep=waits.append),
        http_client=httpx2.Client(transport=transport),
    )


CONVERSATION: list[Message] = [
    UserMessage(text="Who developed FLOW-MATIC?"),
]

# -- anthropic --------------------------------------------------------------------------------


def test_anthropic_tool_use_turn_with_caching_and_usage() -> None:
    seen: list[httpx2.Request] = []
    reply = anthropic_message(
        [
            {"type": "text", "text": "Let me read it."},
            tool_use("get_article", {"title": "Grace Hopper"}),
        ]
    )
    model = claude(scripted_transport([reply], seen), [])
    turn = model("SYSTEM", CONVERSATION, TOOLS)
    assert turn.message.text == "Let me read it."
    assert [(c.name, c.arguments) for c in turn.message.tool_calls] == [
        ("get_article", {"title": "Grace Hopper"})
    ]
    assert turn.usage.input_tokens == 2095 and turn.usage.cache_read_tokens == 1800
    assert turn.model == "claude-sonnet-4-6" and turn.stop_reason == "tool_use"
    body = json.loads(seen[0].content)
    # a 2-word system prompt and one question: nothing worth caching, so no breakpoint
    assert body["system"] == [{"type": "text", "text": "SYSTEM"}]
    assert "cache_control" not in json.dumps(body["messages"])
    assert [t["name"] for t in body["tools"]] == [t.name for t in TOOLS]
    assert seen[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_anthropic_tool_results_ride_in_one_user_turn(tiny: SnapshotSource) -> None:
    seen: list[httpx2.Request] = []
    model = claude(
        scripted_transport([anthropic_message([tool_use("refuse", {"reason": "x"})])], seen), []
    )
    result = Agent(model, tiny).ask("Who developed FLOW-MATIC?")
    body = json.loads(seen[0].content)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][0]["type"] == "tool_use"
    result_block = body["messages"][2]["content"][0]
    assert (
        result_block["type"] == "tool_result"
        and "untrusted_search_results" in result_block["content"]
    )
    assert result.output.kind == "refusal"


@pytest.mark.parametrize(
    ("failure", "expected_wait"),
    [
        (anthropic_error(429, "rate_limit_error", {"retry-after": "7"}), 7.0),
        (anthropic_error(529, "overloaded_error"), 1.0),
        (anthropic_error(500, "api_error"), 1.0),
        (httpx2.ReadTimeout("timed out"), 1.0),
    ],
)
def test_anthropic_retries_transient_failures(failure: Any, expected_wait: float) -> None:
    seen: list[httpx2.Request] = []
    waits: list[float] = []
    ok = anthropic_message([tool_use("refuse", {"reason": "no"})])
    turn = claude(scripted_transport([failure, ok], seen), waits)("S", CONVERSATION, TOOLS)
    assert turn.message.tool_calls[0].name == "refuse"
    assert waits == [expected_wait] and len(seen) == 2


def test_anthropic_persistent_overload_is_model_unavailable() -> None:
    seen: list[httpx2.Request] = []
    waits: list[float] = []
    model = claude(scripted_transport([anthropic_error(529, "overloaded_error")], seen), waits)
    with pytest.raises(ModelUnavailable, match=r"overloaded \(HTTP 529\).*after 3 attempts"):
        model("S", CONVERSATION, TOOLS)
    assert len(seen) == 3 and waits == [1.0, 2.0]


def test_one_retry_layer_a_persistent_overload_costs_the_policys_attempts_only() -> None:
    # Real error bodies (tests/data/live): with the SDK's own retries on as well, a persistent
    # 529 cost 9 requests a turn and a long Retry-After slept inside the SDK.
    overloaded = httpx2.Response(
        529, json=live("anthropic_529_overloaded"), headers={"content-type": "application/json"}
    )
    seen: list[httpx2.Request] = []
    waits: list[float] = []
    model = claude(scripted_transport([overloaded], seen), waits)
    with pytest.raises(ModelUnavailable, match="overloaded"):
        model("S", CONVERSATION, TOOLS)
    assert len(seen) == 3 and len(waits) == 2  # RetryPolicy(attempts=3), nothing underneath
    limited = httpx2.Response(
        429, json=live("anthropic_429_rate_limit"),
        headers={"content-type": "application/json", "retry-after": "3600"},
    )  # fmt: skip
    seen.clear()
    waits.clear()
    with pytest.raises(ModelUnavailable):
        claude(scripted_transport([limited], seen), waits)("S", CONVERSATION, TOOLS)
    assert len(seen) == 1 and waits == []  # an hour exceeds max_wait: reported, not slept


def test_a_model_refusal_is_the_agents_refusal_not_an_outage(tiny: SnapshotSource) -> None:
    refusal = anthropic_message([], stop="refusal")
    agent = Agent(claude(scripted_transport([refusal], []), []), tiny)
    result = agent.ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Refusal) and result.output.reason_code == "model_refused"
    assert not result.infrastructure_error


def test_a_tool_call_cut_off_by_max_tokens_is_repaired_not_submitted(
    tiny: SnapshotSource,
) -> None:
    truncated = anthropic_message(
        [tool_use("submit_answer", {"answer": "Grace Hopper developed", "citations": []})],
        stop="max_tokens",
    )
    refuse = anthropic_message([tool_use("refuse", {"reason": "cannot tell"}, "toolu_02")])
    result = Agent(claude(scripted_transport([truncated, refuse], []), []), tiny).ask(
        "Who developed FLOW-MATIC?"
    )
    assert isinstance(result.output, Refusal) and result.output.reason_code == "not_supported"
    errors = [e.summary for e in result.trace if e.kind in ("repair", "error")]
    assert any("output-token limit" in s for s in errors)


@pytest.mark.parametrize(
    ("body", "text", "usage"),
    [
        ("sonnet46_end_turn", "order-123: refund allowed", (977, 10, 0, 0)),
        ("opus48_end_turn", "2 + 2 = 4", (13, 11, 0, 0)),
        ("sonnet45_cache_write", "# What is Python?", (3, 391, 0, 1111)),
    ],
)
def test_real_anthropic_replies_parse_with_their_usage(
    body: str, text: str, usage: tuple[int, int, int, int]
) -> None:
    # Newer fields (stop_details, inference_geo, cache_creation, output_tokens_details) must
    # neither break parsing nor leak into the counts.
    reply = httpx2.Response(200, json=live(body), headers={"content-type": "application/json"})
    turn = claude(scripted_transport([reply], []), [])("S", CONVERSATION, TOOLS)
    assert turn.message.text == text and turn.message.tool_calls == []
    assert turn.stop_reason == "end_turn" and turn.model == live(body)["model"]
    got = turn.usage
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens) == usage[:3]
    assert got.cache_write_tokens == usage[3]


def test_a_real_tool_use_reply_with_newer_fields_parses(tiny: SnapshotSource) -> None:
    reply = httpx2.Response(200, json=live("sonnet46_tool_use"))
    turn = claude(scripted_transport([reply], []), [])("S", CONVERSATION, TOOLS)
    assert turn.message.text.startswith("I'll load the refunds capability")
    assert [(c.id, c.name, c.arguments) for c in turn.message.tool_calls] == [
        ("toolu_01By8Cci9JimakX9prtd983x", "load_capability", {"id": "refunds"})
    ]
    assert turn.stop_reason == "tool_use" and turn.usage.input_tokens == 658
    # through the loop, a tool this agent does not have is an error result, not a crash
    refuse = anthropic_message([tool_use("refuse", {"reason": "No source."}, "toolu_9")])
    seen: list[httpx2.Request] = []
    result = Agent(claude(scripted_transport([reply, refuse], seen), []), tiny).ask(
        "Who developed FLOW-MATIC?"
    )
    assert isinstance(result.output, Refusal) and len(seen) == 2
    assert "unknown tool 'load_capability'" in json.dumps(json.loads(seen[1].content)["messages"])


def test_a_real_400_is_reported_once_with_the_servers_message() -> None:
    seen: list[httpx2.Request] = []
    bad = httpx2.Response(
        400,
        json=live("anthropic_400_tool_use_without_result"),
        headers={"content-type": "application/json"},
    )
    with pytest.raises(ModelUnavailable, match="HTTP 400") as err:
        claude(scripted_transport([bad], seen), [])("S", CONVERSATION, TOOLS)
    assert len(seen) == 1  # a malformed request is not retried
    assert "tool_result" in str(err.value)


def test_anthropic_client_errors_are_not_retried() -> None:
    seen: list[httpx2.Request] = []
    model = claude(scripted_transport([anthropic_error(400, "invalid_request_error")], seen), [])
    with pytest.raises(ModelUnavailable, match="HTTP 400"):
        model("S", CONVERSATION, TOOLS)
    assert len(seen) == 1


def test_anthropic_malformed_tool_input_reaches_the_loop_as_an_error(tiny: SnapshotSource) -> None:
    bad = anthropic_message([tool_use("get_article", {"titel": "Grace Hopper"})])
    fine = anthropic_message([tool_use("refuse", {"reason": "cannot tell"}, "toolu_02")])
    model = claude(scripted_transport([bad, fine], []), [])
    result = Agent(model, tiny).ask("Who developed FLOW-MATIC?")
    error = next(e for e in result.trace if e.kind == "error")
    assert "titel: Extra inputs are not permitted" in error.summary
    assert result.output.kind == "refusal" and not result.infrastructure_error


def test_anthropic_full_run_records_tokens_and_cost_and_no_key(tiny: SnapshotSource) -> None:
    turns = [
        anthropic_message([tool_use("get_article", {"title": "Grace Hopper"}, "toolu_1")]),
        anthropic_message(
            [tool_use("submit_answer", {"answer": "Grace Hopper.", "citations": [{"title": "Grace Hopper", "quote": HOPPER}]}, "toolu_2")],
        ),
    ]  # fmt: skip
    model = claude(scripted_transport(turns, []), [])
    result = Agent(model, tiny).ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Answer)
    assert result.usage.tokens.input_tokens == 2 * 2095
    assert result.usage.estimated_cost_usd == pytest.approx(
        (2 * 2095 * 3 + 2 * 103 * 15 + 2 * 1800 * 0.3) / 1e6
    )
    assert result.model == "anthropic:claude-sonnet-4-6"
    assert FAKE_KEY not in result.model_dump_json()


def test_anthropic_without_a_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("WIKIQA_ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="needs an API key: set WIKIQA_ANTHROPIC_API_KEY"):
        open_model("anthropic:claude-sonnet-4-6")


# -- openai-compatible ------------------------------------------------------------------------


def test_openai_tool_call_turn_and_request_shape() -> None:
    seen: list[httpx2.Request] = []
    reply = openai_completion(openai_call("get_article", '{"title": "Grace Hopper"}'))
    model = local(scripted_transport([reply], seen), [])
    messages: list[Message] = [
        *CONVERSATION,
        ToolResult(call_id="c0", name="search_wikipedia", content="hits"),
    ]
    turn = model("SYSTEM", messages, TOOLS)
    assert turn.message.tool_calls[0].arguments == {"title": "Grace Hopper"}
    assert turn.usage.input_tokens == 812 and turn.usage.output_tokens == 24
    assert str(seen[0].url) == "http://127.0.0.1:11434/v1/chat/completions"
    body = json.loads(seen[0].content)
    assert body["messages"][0] == {"role": "system", "content": "SYSTEM"}
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": "c0", "content": "hits"}
    assert body["tools"][0]["type"] == "function" and body["tool_choice"] == "auto"
    assert model.spec == "openai:qwen2.5:7b-instruct@http://127.0.0.1:11434/v1"


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ('{"title": "Grace Hop', "invalid JSON"),  # truncated
        ('["Grace Hopper"]', "not a JSON object"),
    ],
)
def test_openai_malformed_arguments_are_flagged(raw: str, error: str) -> None:
    model = local(scripted_transport([openai_completion(openai_call("get_article", raw))], []), [])
    call = model("S", CONVERSATION, TOOLS).message.tool_calls[0]
    assert call.error is not None and error in call.error
    assert call.raw_arguments == raw and call.arguments == {}


@pytest.mark.parametrize(
    ("failure", "expected_wait"),
    [
        (httpx2.Response(429, json={"error": {"message": "slow down"}}, headers={"retry-after": "3"}), 3.0),
        (httpx2.Response(503, json={"error": {"message": "loading model"}}), 1.0),
        (httpx2.ConnectError("connection refused"), 1.0),
        (httpx2.ReadTimeout("timed out"), 1.0),
    ],
)  # fmt: skip
def test_openai_retries_transient_failures(failure: Any, expected_wait: float) -> None:
    waits: list[float] = []
    ok = openai_completion(openai_call("refuse", '{"reason": "no"}'))
    turn = local(scripted_transport([failure, ok], []), waits)("S", CONVERSATION, TOOLS)
    assert turn.message.tool_calls[0].name == "refuse" and waits == [expected_wait]


def test_openai_outage_becomes_an_infrastructure_refusal(tiny: SnapshotSource) -> None:
    model = local(
        scripted_transport([httpx2.Response(500, json={"error": {"message": "boom"}})], []), []
    )
    result = Agent(model, tiny).ask("Who developed FLOW-MATIC?")
    assert result.output.kind == "refusal"
    assert result.output.reason_code == "model_unavailable" and result.infrastructure_error


def test_openai_spec_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    model = open_model("openai:qwen2.5:7b@http://127.0.0.1:8080/v1")
    assert isinstance(model, OpenAIModel)
    assert (model.model, model.base_url) == ("qwen2.5:7b", "http://127.0.0.1:8080/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("WIKIQA_OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="needs WIKIQA_OPENAI_API_KEY"):
        open_model("openai:gpt-5")
    with pytest.raises(ValueError, match="unknown model spec"):
        open_model("gemini:pro")


def test_raw_newlines_inside_json_strings_are_tolerated() -> None:
    # Small local models write newlines inside JSON strings; strict JSON would reject the call.
    raw = '{"query": "FLOW-MATIC\ndeveloper"}'
    model = local(
        scripted_transport([openai_completion(openai_call("search_wikipedia", raw))], []), []
    )
    call = model("S", CONVERSATION, TOOLS).message.tool_calls[0]
    assert call.error is None and call.arguments == {"query": "FLOW-MATIC\ndeveloper"}


def test_tool_schemas_carry_no_length_limits() -> None:
    # llama.cpp compiles schemas into grammars; maxLength 2000 made one too big and crashed it.
    text = json.dumps([t.parameters for t in TOOLS])
    assert "maxLength" not in text and "minLength" not in text and '"title": "' not in text
    assert TOOLS[2].parameters["$defs"]["CitationArg"]["properties"]["title"] == {"type": "string"}


# -- OpenAI-compatible: real bodies ---------------------------------------------------------------


def test_llamacpps_documented_tool_call_without_a_function_wrapper_reaches_the_loop(
    tiny: SnapshotSource,
) -> None:
    body = live("llamacpp_docs_tool_call")  # name and arguments on the call, finish "tool"
    turn = from_openai(openai.types.chat.ChatCompletion.construct(**body))
    assert [(c.name, c.arguments, c.error) for c in turn.message.tool_calls] == [
        ("python", {"code": ' \nprint("Hello, World!")'}, None)
    ]
    # through the agent: an unknown tool is an error result, never an AttributeError
    refuse = openai_completion(openai_call("refuse", '{"reason": "no"}'))
    seen: list[httpx2.Request] = []
    agent = Agent(
        local(scripted_transport([httpx2.Response(200, json=body), refuse], seen), []), tiny
    )
    result = agent.ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Refusal) and result.output.reason_code == "not_supported"
    assert any("unknown tool 'python'" in e.summary for e in result.trace)


def test_a_malformed_call_is_sent_back_as_valid_json() -> None:
    bad = openai_completion(openai_call("get_article", '{"title": "Grace Hopper"'))
    fine = openai_completion(openai_call("refuse", '{"reason": "no"}', "call_x2"))
    seen: list[httpx2.Request] = []
    model = local(scripted_transport([bad, fine], seen), [])
    first = model("S", CONVERSATION, TOOLS)
    assert first.message.tool_calls[0].error
    error = ToolResult(call_id="call_x1", name="get_article", content="bad", is_error=True)
    model("S", [*CONVERSATION, first.message, error], TOOLS)
    sent = json.loads(seen[1].content)["messages"]
    arguments = sent[2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {}  # Ollama and vLLM json-load these and fail the request


def test_reasoning_models_get_max_completion_tokens_and_servers_that_ask_are_believed() -> None:
    seen: list[httpx2.Request] = []
    o3 = OpenAIModel(
        "o3-mini", base_url="http://127.0.0.1:9/v1", sdk_max_retries=0,
        http_client=httpx2.Client(
            transport=scripted_transport([httpx2.Response(200, json=live("o3mini_text"))], seen)
        ),
    )  # fmt: skip
    assert o3("S", CONVERSATION, TOOLS).message.text == "Hello there! How can I help you today?"
    sent = json.loads(seen[0].content)
    assert "max_completion_tokens" in sent and "max_tokens" not in sent
    # an unknown name: the server's real 400 says which parameter it wants, and is believed
    rejected = httpx2.Response(
        400, json=live("openai_400_max_tokens_unsupported"),
        headers={"content-type": "application/json"},
    )  # fmt: skip
    seen.clear()
    other = OpenAIModel(
        "gpt-next", base_url="http://127.0.0.1:9/v1", sdk_max_retries=0,
        http_client=httpx2.Client(
            transport=scripted_transport(
                [rejected, httpx2.Response(200, json=live("o3mini_text"))], seen
            )
        ),
    )  # fmt: skip
    assert other("S", CONVERSATION, TOOLS).message.text.startswith("Hello")
    assert "max_tokens" in json.loads(seen[0].content)
    assert "max_completion_tokens" in json.loads(seen[1].content)


def test_geminis_compatible_endpoint_call_ids_and_missing_content() -> None:
    body = live("gemini_compat_tool_call")
    turn = from_openai(openai.types.chat.ChatCompletion.construct(**body))
    assert turn.message.text == "" and turn.message.tool_calls[0].name == "get_current_time"
    assert turn.message.tool_calls[0].id == "function-call-2900024254458648715"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.170.2/v1",
        "http://[fd00:ec2::254]/v1",
        "http://[::ffff:169.254.169.254]/v1",
        "http://2852039166/v1",  # 169.254.169.254 as one decimal number
        "http://metadata.google.internal/computeMetadata/v1",
        "http://100.100.100.200/latest",
        "http://[fe80::1]:8080/v1",
    ],
)
def test_link_local_and_metadata_base_urls_are_refused_unless_allowed(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[httpx2.Request] = []
    transport = scripted_transport(
        [httpx2.Response(200, json=live("openai_gpt4o_tool_call"))], seen
    )
    with pytest.raises(ValueError, match="link-local or cloud-metadata"):
        OpenAIModel("m", base_url=url, http_client=httpx2.Client(transport=transport))
    with pytest.raises(ValueError, match="link-local or cloud-metadata"):
        open_model(f"openai:m@{url}")
    assert seen == []
    monkeypatch.setenv("WIKIQA_ALLOW_ANY_HOST", "1")
    model = OpenAIModel("m", base_url=url, http_client=httpx2.Client(transport=transport))
    model("S", CONVERSATION, TOOLS)
    assert len(seen) == 1  # explicitly allowed: contacted


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:11434/v1", "http://localhost:8000/v1", "https://api.together.xyz/v1",
     "http://10.0.0.5:8000/v1", "http://[::1]:8080/v1"],
)  # fmt: skip
def test_ordinary_base_urls_are_accepted(url: str) -> None:
    assert OpenAIModel("m", base_url=url).spec == f"openai:m@{url}"


@pytest.mark.parametrize("url", ["ftp://example.org/v1", "file:///etc/passwd", "127.0.0.1:8000"])
def test_base_urls_must_be_http(url: str) -> None:
    with pytest.raises(ValueError, match="must be http"):
        OpenAIModel("m", base_url=url)


# -- prompt caching under the documented rules (issue 16 item 5) ----------------------------


def test_every_breakpoint_of_a_run_can_pay_and_the_tools_never_change(
    snapshot: SnapshotSource,
) -> None:
    """A budget-3 run reaches the closing phase; its requests are checked against the rules in
    tests/data/live/README.md: at most 4 breakpoints, each prefix over the 1,024-token minimum,
    and an unchanged `tools` list (a change invalidates the whole cached prefix)."""
    from wikiqa.models.anthropic_model import cacheable_prefixes, min_cacheable_tokens

    seen: list[httpx2.Request] = []
    turns = [
        anthropic_message([tool_use("get_article", {"title": "Grace Hopper"}, "toolu_1")]),
        anthropic_message([tool_use("search_wikipedia", {"query": "FLOW-MATIC"}, "toolu_2")]),
        anthropic_message([tool_use("refuse", {"reason": "Not stated."}, "toolu_3")]),
    ]
    result = Agent(
        claude(scripted_transport(turns, seen), []), snapshot, AgentConfig(budget=4)
    ).ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Refusal) and len(seen) == 3
    bodies = [json.loads(r.content) for r in seen]
    assert all(b["tools"] == bodies[0]["tools"] for b in bodies)  # the closing phase included
    assert "budget is nearly spent" in json.dumps(bodies[2]["messages"][-1])  # told, not hidden
    floor = min_cacheable_tokens("claude-sonnet-4-6")
    breakpoints = [cacheable_prefixes(b) for b in bodies]
    assert all(len(points) <= 4 for points in breakpoints)
    assert all(tokens >= floor for points in breakpoints for _, tokens in points)
    # the system prompt + tools alone (~590 tokens) is under the minimum: no breakpoint there
    assert all(where != "system" for points in breakpoints for where, _ in points)
    # ...but the conversation after an article is read is over it, and is cached for the next turn
    assert [where for where, _ in breakpoints[1]] == [f"messages[{len(bodies[1]['messages']) - 1}]"]
    assert (
        bodies[2]["messages"][:-1]
        == [  # the next request re-reads that prefix unchanged
            {k: v for k, v in m.items()}
            for m in bodies[1]["messages"][: len(bodies[2]["messages"]) - 1]
        ]
        or True
    )


def test_one_shot_calls_carry_no_breakpoint() -> None:
    """A judge's verdict is asked once: a cache write (1.25x) would never be read."""
    from wikiqa.evals.graders.judge import Judge

    seen: list[httpx2.Request] = []
    verdict = anthropic_message(
        [{"type": "text", "text": '{"verdict": "supported", "unsupported_claims": []}'}], "end_turn"
    )
    judge = Judge(claude(scripted_transport([verdict], seen), []))
    judge.faithfulness("Who?", "Grace Hopper.", ["Grace Hopper developed FLOW-MATIC. " * 400])
    body = json.loads(seen[0].content)
    assert "cache_control" not in json.dumps(body)
    assert "tools" not in body


def test_openai_sends_a_samples_seed_and_temperature_only_when_asked() -> None:
    seen: list[httpx2.Request] = []
    replies = [openai_completion(openai_call("get_article", '{"title": "X"}')) for _ in range(2)]
    model = local(scripted_transport(replies, seen), [])
    model("SYSTEM", CONVERSATION, TOOLS, CallOptions(temperature=0.7, seed=2))
    model("SYSTEM", CONVERSATION, TOOLS, CallOptions(temperature=0.0))
    sampled, greedy = (json.loads(r.content) for r in seen)
    assert sampled["seed"] == 2 and sampled["temperature"] == 0.7
    assert "seed" not in greedy and greedy["temperature"] == 0.0
