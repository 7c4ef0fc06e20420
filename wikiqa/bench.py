"""Benchmarks that print figures: `python -m wikiqa.bench sources|ask [--json]`.

Speed is measured here, never asserted in timed unit tests: the figures go into issue notes with
the command that printed them. Targets (2-core machine) are printed beside each figure.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

from pydantic import BaseModel

from wikiqa.snapshot import SnapshotSource
from wikiqa.text import sentences


class SearchPair(BaseModel):
    """A question and the snapshot articles whose lead answers it (any of them counts)."""

    question: str
    titles: list[str]


def load_pairs(path: Path | None = None) -> list[SearchPair]:
    text = (
        path.read_text(encoding="utf-8")
        if path is not None
        else files("wikiqa.data").joinpath("search_pairs.jsonl").read_text(encoding="utf-8")
    )
    return [SearchPair.model_validate_json(line) for line in text.splitlines() if line.strip()]


def recall_at(source: SnapshotSource, pairs: Sequence[SearchPair], k: int) -> float:
    """Fraction of questions with an expected title among the top k hits."""
    found = 0
    for pair in pairs:
        titles = {hit.title for hit in source.search(pair.question, k)}
        found += any(title in titles for title in pair.titles)
    return found / len(pairs)


def latency_queries(source: SnapshotSource, n: int = 600, seed: int = 0) -> list[str]:
    """Varied natural-language queries drawn from the snapshot itself, reproducibly.

    A third ask about a title, a third paraphrase a short description, a third are a sentence
    lifted from a lead: short, medium and long queries with common and rare words.
    """
    rng = random.Random(seed)
    titles = sorted(source.titles())
    queries: list[str] = []
    for i, title in enumerate(rng.sample(titles, n)):
        article = source.get_article(title)
        assert article is not None
        if i % 3 == 0:
            template = rng.choice(["What is {}?", "Who was {}?", "Tell me about {}", "{} history"])
            queries.append(template.format(title))
        elif i % 3 == 1 and article.description:
            queries.append(f"Which {article.description.lower()} is this?")
        else:
            queries.append(rng.choice(sentences(article.text) or [article.text]))
    return queries


def _percentile(values: Sequence[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def bench_sources(pairs_path: Path | None = None) -> dict[str, float]:
    """Build, reopen, search latency and recall figures for the offline snapshot."""
    with tempfile.TemporaryDirectory(prefix="wikiqa-bench-") as home:
        start = time.perf_counter()
        source = SnapshotSource(home=Path(home))
        build_s = time.perf_counter() - start
        assert source.built, "the benchmark must time a real first build"
        reopens = []
        for _ in range(5):
            start = time.perf_counter()
            reopened = SnapshotSource(home=Path(home))
            reopens.append(time.perf_counter() - start)
            assert not reopened.built
        pairs = load_pairs(pairs_path)
        queries = latency_queries(source) + [p.question for p in pairs]
        for query in queries[:20]:  # warm the page cache; timed below all the same
            source.search(query, 5)
        latencies = []
        for query in queries:
            start = time.perf_counter()
            source.search(query, 5)
            latencies.append((time.perf_counter() - start) * 1000)
        info = source.info()
        return {
            "articles": info.articles,
            "skipped": info.skipped,
            "first_build_s": build_s,
            "reopen_s": statistics.median(reopens),
            "queries": len(queries),
            "search_p50_ms": _percentile(latencies, 50),
            "search_p95_ms": _percentile(latencies, 95),
            "pairs": len(pairs),
            "recall_at_1": recall_at(source, pairs, 1),
            "recall_at_5": recall_at(source, pairs, 5),
        }


def bench_ask(processes: int = 10, pairs_path: Path | None = None) -> dict[str, float]:
    """Offline `ask` latency: in-process over the recall questions, and as new processes."""
    from wikiqa.agent import Agent
    from wikiqa.extractive import ExtractiveModel

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


_TARGETS = {
    "first_build_s": ("<=", 15.0),
    "reopen_s": ("<=", 0.3),
    "search_p50_ms": ("<=", 5.0),
    "search_p95_ms": ("<=", 20.0),
    "recall_at_5": (">=", 0.9),
    "ask_in_process_p50_ms": ("<=", 50.0),
    "ask_new_process_p50_s": ("<=", 1.5),
}


def _report_ask(figures: dict[str, float]) -> str:
    lines = [
        f"ask (offline: snapshot + extractive): {figures['questions']:.0f} questions in process "
        f"({figures['answered']:.0f} answered), {figures['processes']:.0f} as new processes"
    ]
    for key in ("ask_in_process_p50_ms", "ask_in_process_p95_ms"):
        lines.append(_line(key, figures[key], "{:.2f}"))
    for key in ("ask_new_process_p50_s", "ask_new_process_max_s"):
        lines.append(_line(key, figures[key], "{:.3f}"))
    return "\n".join(lines)


def _report(figures: dict[str, float]) -> str:
    lines = [
        f"snapshot: {figures['articles']:.0f} articles ({figures['skipped']:.0f} skipped), "
        f"{figures['queries']:.0f} latency queries, {figures['pairs']:.0f} recall pairs"
    ]
    for key in ("first_build_s", "reopen_s", "search_p50_ms", "search_p95_ms"):
        lines.append(_line(key, figures[key], "{:.3f}"))
    lines.append(_line("recall_at_1", figures["recall_at_1"], "{:.2f}"))
    lines.append(_line("recall_at_5", figures["recall_at_5"], "{:.2f}"))
    return "\n".join(lines)


def _line(key: str, value: float, fmt: str) -> str:
    text = f"{key:<22} {fmt.format(value):>8}"
    if key in _TARGETS:
        op, bound = _TARGETS[key]
        ok = value <= bound if op == "<=" else value >= bound
        text += f"   target {op} {bound:g}   {'ok' if ok else 'MISSED'}"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wikiqa.bench")
    parser.add_argument("suite", choices=["sources", "ask"])
    parser.add_argument("--pairs", type=Path, help="JSONL of {question, titles} (default: bundled)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.suite == "sources":
        figures = bench_sources(args.pairs)
        report = _report(figures)
    else:
        figures = bench_ask(pairs_path=args.pairs)
        report = _report_ask(figures)
    print(json.dumps(figures, indent=2) if args.json else report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
