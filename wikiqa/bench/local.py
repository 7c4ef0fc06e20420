"""The `local` benchmark: how fast a real local model answers as the agent's model (needs the
`local` extra; `--model qwen` needs the `qwen` one too).

Each agent question runs through the ordinary `openai:` provider against llama.cpp's server, on
dev questions in suite order. Per call it prints llama.cpp's own counters, logged by our handler
(`WIKIQA_LOCAL_LOG`): prompt tokens evaluated (prefill) and read from the KV cache, prefill and
decode tokens per second; per task the wall time, with p50 and p95. The system prompt and tool
specs are the same for every task, so after the first task llama.cpp prefills only what follows
them (the question and the articles); within a task each turn reuses the previous turn's prefix.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from wikiqa.agent.config import AgentConfig
from wikiqa.bench.report import percentile
from wikiqa.sources import SnapshotSource


def bench_local(
    model: str = "smollm2",
    questions: int = 8,
    agent: AgentConfig | None = None,
    options: str = "",
) -> dict[str, Any]:
    """Figures for `questions` dev questions answered through the served `model` (a catalog
    name or GGUF path) by an agent configured as `agent` (a step's levers, so its speed is
    measured as it runs; by default three leads fetched up front); `options` are openai spec
    options (`tool_choice=auto`)."""
    from wikiqa.agent import Agent
    from wikiqa.evals import load_tasks, resolve_suite
    from wikiqa.models import local as local_model
    from wikiqa.registry import open_model

    config = agent if agent is not None else AgentConfig(read_first=3)
    tasks = [t for t in load_tasks(resolve_suite("dev")) if not t.injection][:questions]
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "calls.jsonl"
        log.touch()
        process, spec, key = local_model.start(model, log=log, timeout=300)
        try:
            if options:  # in place of the model's own (`tool_choice=auto` to compare)
                spec = spec.partition(";")[0] + f";{options}"
            asker = Agent(open_model(spec, api_key=key), SnapshotSource(), config)
            calls: list[dict[str, Any]] = []
            per_task: list[dict[str, Any]] = []
            for index, task in enumerate(tasks):
                seen, start = len(calls), time.perf_counter()
                result = asker.ask(task.question)
                wall = time.perf_counter() - start
                lines = log.read_text(encoding="utf-8").splitlines()
                calls += [_call(index, json.loads(line)) for line in lines[seen:]]
                per_task.append(
                    {
                        "task": task.id,
                        "seconds": round(wall, 2),
                        "calls": len(calls) - seen,
                        "outcome": result.output.kind,
                        "answer": getattr(result.output, "text", None),
                        "reason": getattr(result.output, "reason_code", None),
                    }
                )
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # mid-completion, llama.cpp may not stop in time
                process.kill()
                process.wait()
    seconds = [t["seconds"] for t in per_task]
    return {
        "model": model,
        "spec": spec,
        "read_first": config.read_first,
        "levers": sorted(k for k, v in config.changed().items() if k != "read_first"),
        "calls": calls,
        "tasks": per_task,
        "task_p50_s": round(statistics.median(seconds), 2),
        "task_p95_s": round(percentile(seconds, 95), 2),
        "prefill_tokens_per_s_p50": round(
            statistics.median(c["prefill_per_s"] for c in calls if c["prefill"]), 1
        ),
        "decode_tokens_per_s_p50": round(
            statistics.median(c["decode_per_s"] for c in calls if c["decode"]), 1
        ),
    }


def _call(task: int, record: dict[str, Any]) -> dict[str, Any]:
    timings, usage = record["timings"], record["usage"]
    return {
        "task": task,
        "prompt": usage["prompt_tokens"],
        "cached": usage["prompt_tokens_details"]["cached_tokens"],
        "prefill": timings["prompt_n"],
        "prefill_per_s": timings["prompt_per_second"],
        "decode": timings["predicted_n"],
        "decode_per_s": timings["predicted_per_second"],
        "seconds": round(timings["wall_ms"] / 1000, 2),
        "tool_choice": record["tool_choice"],
        "call": record["text"].lstrip()[:40],
    }


def report(figures: dict[str, Any]) -> str:
    """The per-call table, the per-task table and the summary, as printed."""
    lines = [
        f"local model {figures['model']} via llama.cpp (2 threads, greedy), read_first "
        f"{figures['read_first']}"
        + (f", levers {', '.join(figures['levers'])}" if figures.get("levers") else "")
        + f": {figures['spec']}",
        "task call  prompt cached prefill  prefill/s decode decode/s  wall_s  choice    reply",
    ]
    for number, c in enumerate(figures["calls"]):
        lines.append(
            f"{c['task']:>4} {number:>4} {c['prompt']:>7} {c['cached']:>6} {c['prefill']:>7} "
            f"{c['prefill_per_s']:>10.1f} {c['decode']:>6} {c['decode_per_s']:>8.1f} "
            f"{c['seconds']:>7.2f}  {c['tool_choice'] or '-':<9} {c['call']!r}"
        )
    lines.append("task                            seconds calls outcome")
    for t in figures["tasks"]:
        answer = t["answer"] if t["outcome"] == "answer" else t["reason"]
        lines.append(
            f"{t['task'][:30]:<30} {t['seconds']:>8.2f} {t['calls']:>5} {t['outcome']}: "
            f"{str(answer)[:60]!r}"
        )
    lines.append(
        f"per task: p50 {figures['task_p50_s']:.2f} s, p95 {figures['task_p95_s']:.2f} s "
        f"({len(figures['tasks'])} tasks); prefill p50 {figures['prefill_tokens_per_s_p50']} "
        f"tokens/s, decode p50 {figures['decode_tokens_per_s_p50']} tokens/s"
    )
    return "\n".join(lines)
