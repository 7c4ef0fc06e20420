"""The `ask` benchmark: offline answer latency, in process and as a fresh `wikiqa ask` process."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from wikiqa.bench.report import _percentile
from wikiqa.bench.sources import load_pairs
from wikiqa.sources import SnapshotSource


def bench_ask(processes: int = 10, pairs_path: Path | None = None) -> dict[str, float]:
    """Offline `ask` latency: in-process over the recall questions, and as new processes."""
    from wikiqa.agent import Agent
    from wikiqa.models import ExtractiveModel

    questions = [p.question for p in load_pairs(pairs_path)]
    agent = Agent(ExtractiveModel(), SnapshotSource())
    for question in questions[:3]:  # the first run opens the index and warms caches
        agent.ask(question)
    in_process, answered = [], 0
    for question in questions:
        start = time.perf_counter()
        result = agent.ask(question)
        in_process.append((time.perf_counter() - start) * 1000)
        answered += result.output.kind == "answer"
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
        "ask_in_process_p95_ms": _percentile(in_process, 95),
        "processes": len(new_process),
        "ask_new_process_p50_s": statistics.median(new_process),
        "ask_new_process_max_s": max(new_process),
    }
