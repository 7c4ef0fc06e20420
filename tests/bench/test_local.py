"""The speed bench's reading of the server's call log (recorded lines from a real Qwen run), and
the spec a known model is served with. No llama.cpp needed."""

from __future__ import annotations

import json
from pathlib import Path

from wikiqa.bench.local import _call, report
from wikiqa.models import local as local_model
from wikiqa.models.local.catalog import known
from wikiqa.models.openai_model import OpenAIModel
from wikiqa.registry import open_model

LOG = Path(__file__).parents[1] / "data" / "qwen" / "server_log.jsonl"


def test_each_logged_call_gives_prefill_and_decode_rates_and_the_cached_prefix() -> None:
    records = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]
    calls = [_call(0, r) for r in records]
    for call, record in zip(calls, records, strict=True):
        assert call["prompt"] == call["cached"] + call["prefill"]  # every prompt token counted once
        assert call["prefill_per_s"] > 0 and call["decode_per_s"] > 0
        assert call["seconds"] * 1000 >= record["timings"]["prompt_ms"]
    # the second turn of a task reads the whole first prompt from the KV cache; a new task
    # still reads the system prompt and tool specs (the same for every task)
    assert calls[1]["cached"] == calls[0]["prompt"]
    assert 0 < calls[2]["cached"] < calls[2]["prompt"]


def test_the_report_prints_every_call_and_the_task_percentiles() -> None:
    records = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]
    figures = {
        "model": "qwen", "spec": "openai:q@http://h/v1", "read_first": 3,
        "calls": [_call(i // 2, r) for i, r in enumerate(records)],
        "tasks": [{"task": "a", "seconds": 44.7, "calls": 2, "outcome": "refusal", "answer": None, "reason": "not_supported"}],
        "task_p50_s": 44.7, "task_p95_s": 44.7, "prefill_tokens_per_s_p50": 53.6, "decode_tokens_per_s_p50": 13.6,
    }  # fmt: skip
    text = report(figures)
    assert len([line for line in text.splitlines() if "'<tool_call>" in line]) == len(records)
    assert "per task: p50 44.70 s, p95 44.70 s (1 tasks)" in text


def test_qwen_is_served_with_the_measured_spec_options_and_smollm2_without() -> None:
    qwen = local_model.spec("127.0.0.1", 8080, known("qwen").alias)
    assert qwen == (
        "openai:qwen2.5-coder-1.5b-instruct-q4_k_m@http://127.0.0.1:8080/v1;tool_choice=required"
    )
    model = open_model(qwen)
    assert isinstance(model, OpenAIModel) and model.tool_choice == "required" and model.spec == qwen
    assert (
        local_model.spec("127.0.0.1", 8080)
        == "openai:smollm2-135m-instruct@http://127.0.0.1:8080/v1"
    )


def test_the_bench_reports_a_steps_agent_levers() -> None:
    figures = {
        "model": "qwen", "spec": "openai:q@http://h/v1", "read_first": 3,
        "levers": ["cite_sentences", "strict_support"], "calls": [], "tasks": [],
        "task_p50_s": 1.0, "task_p95_s": 1.0, "prefill_tokens_per_s_p50": 1.0,
        "decode_tokens_per_s_p50": 1.0,
    }  # fmt: skip
    assert "read_first 3, levers cite_sentences, strict_support:" in report(figures)
