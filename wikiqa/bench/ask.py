"""The `ask` benchmark: offline answer latency, in process and as a fresh `wikiqa ask` process."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from wikiqa.agent.config import AgentConfig
from wikiqa.bench.report import percentile
from wikiqa.bench.sources import load_pairs
from wikiqa.sources import SnapshotSource

# The climb's kept extractive agent, timed beside the default: it also scores its confidence.
CLIMBED = AgentConfig(abstain_below=0.4)


def _in_process(
    spec: str, questions: list[str], config: AgentConfig | None = None
) -> tuple[list[float], int]:
    from wikiqa.agent import Agent
    from wikiqa.agent.guard import is_instruction
    from wikiqa.registry import open_model
    from wikiqa.text import clear_memo

    agent = Agent(open_model(spec), SnapshotSource(), config)
    for question in questions[:3]:  # the first run opens the index and warms caches
        agent.ask(question)
    clear_memo()  # but no answerer is timed on articles another one has already split
    is_instruction.cache_clear()
    in_process, answered = [], 0
    for question in questions:
        start = time.perf_counter()
        result = agent.ask(question)
        in_process.append((time.perf_counter() - start) * 1000)
        answered += result.output.kind == "answer"
    return in_process, answered


def bench_ask(processes: int = 10, pairs_path: Path | None = None) -> dict[str, float]:
    """Offline `ask` latency: in-process over the recall questions (the default answerer and
    the climbed one, which also scores its confidence before answering), and as new
    processes."""
    questions = [p.question for p in load_pairs(pairs_path)]
    in_process, answered = _in_process("extractive", questions)
    climbed, _ = _in_process("extractive", questions, CLIMBED)
    script = Path(sys.executable).with_name("wikiqa")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "wikiqa.cli"]
    new_process = []
    for question in questions[:processes]:
        start = time.perf_counter()
        subprocess.run([*command, "ask", question], check=True, capture_output=True)
        new_process.append(time.perf_counter() - start)
    return {
        "questions": len(questions),
        "answered": answered,
        "ask_in_process_p50_ms": statistics.median(in_process),
        "ask_in_process_p95_ms": percentile(in_process, 95),
        "ask_climbed_in_process_p50_ms": statistics.median(climbed),
        "ask_climbed_in_process_p95_ms": percentile(climbed, 95),
        "processes": len(new_process),
        "ask_new_process_p50_s": statistics.median(new_process),
        "ask_new_process_max_s": max(new_process),
    }
