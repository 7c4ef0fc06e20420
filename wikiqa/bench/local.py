"""The `local` benchmark: how fast the real local model is (needs the `local` extra), served raw
and answering as the agent's model."""

from __future__ import annotations

import statistics
import time

from wikiqa.bench.report import percentile
from wikiqa.bench.sources import load_pairs
from wikiqa.sources import SnapshotSource


def bench_local(questions: int = 5) -> dict[str, float]:
    """The local model (needs the `local` extra): raw decode and prompt speed of the served
    SmolLM2, then agent questions through it (read_first=1) for per-call latency and seconds
    per question. Decoding is greedy; every prompt differs so llama.cpp's prefix cache cannot
    flatter the prompt figure."""
    import openai

    from wikiqa.agent import Agent
    from wikiqa.models import local as local_model
    from wikiqa.registry import open_model

    process, spec = local_model.start()
    try:
        name, base_url = spec.removeprefix("openai:").split("@", 1)
        client = openai.OpenAI(api_key="not-needed", base_url=base_url, timeout=600)
        source = SnapshotSource()
        leads = [source.get_article(p.titles[0]) for p in load_pairs()[:30]]
        text = " ".join(a.text for a in leads if a is not None)

        def rate(content: str, max_tokens: int) -> tuple[float, float]:
            """(prompt, completion) tokens per second of wall time for one request."""
            start = time.perf_counter()
            reply = client.chat.completions.create(
                model=name, messages=[{"role": "user", "content": content}], max_tokens=max_tokens
            )
            elapsed = time.perf_counter() - start
            assert reply.usage is not None
            return reply.usage.prompt_tokens / elapsed, reply.usage.completion_tokens / elapsed

        decode = [rate(f"Tell me about the number {i + 7}.", 128)[1] for i in range(3)]
        prompt = [rate(f"{i}: {text[: 4000 + 500 * i]}", 1)[0] for i in range(3)]
        agent = Agent(open_model(spec), source, read_first=1)
        calls: list[float] = []
        per_question: list[float] = []
        for pair in load_pairs()[:questions]:
            result = agent.ask(pair.question)
            calls += [e.latency_ms / 1000 for e in result.trace if e.kind == "model"]
            per_question.append(result.latency_ms / 1000)
    finally:
        process.terminate()
        process.wait(timeout=30)
    return {
        "decode_tokens_per_s": statistics.median(decode),
        "prompt_tokens_per_s": statistics.median(prompt),
        "questions": float(questions),
        "model_calls": float(len(calls)),
        "call_p50_s": statistics.median(calls),
        "call_p95_s": percentile(calls, 95),
        "seconds_per_question": statistics.mean(per_question),
    }
