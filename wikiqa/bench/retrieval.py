"""The `retrieval` benchmark: each ranker on a suite's answerable tasks, against the targets.

For every answerable task (`wikiqa.evals.analysis.retrieval.answerable`) the question is searched
as the agent's first search does (top 5), with each configuration: BM25, BM25 with linked titles,
dense, hybrid, hybrid with linked titles. Printed per configuration: recall@1/3/5 of the expected
article, the share whose top 5 leads state a gold alias (the text a reader of the top 5 reads),
and query latency p50/p95. Then the dense index: how long embedding takes, measured on a sample of
leads and scaled to the snapshot, or the full build's own time when this run built it: wall time,
the CPU time this process spent on it, and the load average before and after (the cores may be
shared, and a build's wall time says little without them).

Targets (on the rebuilt public suite's held-out split): expected article in the top 5 >= 0.90,
a gold alias in the top 5 leads >= 0.90, a query <= 20 ms p50, the index built in <= 300 s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from wikiqa.bench.report import line, percentile
from wikiqa.evals import load_tasks, resolve_suite
from wikiqa.evals.analysis.retrieval import RECALL_AT, answerable, gold_in
from wikiqa.sources import SnapshotSource, normalize_title
from wikiqa.sources.dense import dense_available, encode_passages, passage_text
from wikiqa.sources.ranked import RankedSource, Ranker, dense_index

CONFIGS: dict[str, tuple[Ranker, bool]] = {
    "bm25": ("bm25", False),
    "bm25+link": ("bm25", True),
    "dense": ("dense", False),
    "hybrid": ("hybrid", False),
    "hybrid+link": ("hybrid", True),
}
SAMPLE = 128  # leads embedded to time the index build


def bench_retrieval(
    suite: str = "public2", holdout: bool = False, configs: Sequence[str] | None = None
) -> dict[str, Any]:
    """The figures of `configs` (default: all, the dense ones when the extra is installed)."""
    source = SnapshotSource()
    tasks = [t for t in load_tasks(resolve_suite(suite, holdout)) if answerable(t)]
    chosen = list(configs) if configs is not None else list(CONFIGS)
    dense = dense_available() and any(CONFIGS[c][0] != "bm25" for c in chosen)
    figures: dict[str, Any] = {
        "suite": suite + ("_holdout" if holdout else ""),
        "tasks": len(tasks),
    }
    built: dict[str, float] = {}
    if dense:
        load = os.getloadavg()[0]
        start, cpu = time.perf_counter(), time.process_time()
        index = dense_index(source)
        if index.built:
            built = {
                "index_build_s": round(time.perf_counter() - start, 1),
                "index_cpu_s": round(time.process_time() - cpu, 1),
                "load_average_before_build": round(load, 2),
                "load_average_after_build": round(os.getloadavg()[0], 2),
            }
    for name in chosen:
        ranker, link = CONFIGS[name]
        if ranker != "bm25" and not dense:
            continue
        ranked = RankedSource(source, ranker, link)
        ranked.search("warm up", 5)
        hits_at: dict[int, int] = dict.fromkeys(RECALL_AT, 0)
        gold = 0
        latencies = []
        for task in tasks:
            start = time.perf_counter()
            hits = ranked.search(task.question, 5)
            latencies.append((time.perf_counter() - start) * 1000)
            expected = {normalize_title(t) for t in task.expected_sources}
            titles = [normalize_title(h.title) for h in hits]
            rank = next((i for i, t in enumerate(titles, 1) if t in expected), None)
            for k in RECALL_AT:
                hits_at[k] += rank is not None and rank <= k
            leads = [a.text for h in hits if (a := source.get_article(h.title)) is not None]
            gold += gold_in(leads, task.answers)
        n = len(tasks) or 1
        for k in RECALL_AT:
            figures[f"{name}_recall_at_{k}"] = round(hits_at[k] / n, 4)
        figures[f"{name}_gold_in_top5"] = round(gold / n, 4)
        figures[f"{name}_query_p50_ms"] = round(percentile(latencies, 50), 2)
        figures[f"{name}_query_p95_ms"] = round(percentile(latencies, 95), 2)
    if dense:
        titles = list(source.titles())[:: max(1, len(list(source.titles())) // SAMPLE)][:SAMPLE]
        texts = [passage_text(t, a.text if (a := source.get_article(t)) else "") for t in titles]
        start = time.perf_counter()
        encode_passages(texts)
        per_lead = (time.perf_counter() - start) / len(texts)
        figures["index_build_estimate_s"] = round(per_lead * source.info().articles, 1)
        figures.update(built)
    return figures


TARGETS = {"recall_at_5": 0.90, "gold_in_top5": 0.90, "query_p50_ms": 20.0, "index_build": 300.0}


def report(figures: dict[str, Any]) -> str:
    lines = [
        f"retrieval on {figures['suite']}: {figures['tasks']} answerable tasks, the question "
        "searched as the agent's first search (top 5); targets: recall@5 >= 0.90, gold in the "
        "top 5 leads >= 0.90, query p50 <= 20 ms, dense index build <= 300 s"
    ]
    for key, value in figures.items():
        if key in ("suite", "tasks"):
            continue
        target = next((t for t in TARGETS if key.endswith(t) or key.startswith(t)), None)
        if target is None:
            lines.append(line(key, value, "{:.4g}"))
            continue
        bound = TARGETS[target]
        higher = target in ("recall_at_5", "gold_in_top5")
        holds = value >= bound if higher else value <= bound
        sign = ">=" if higher else "<="
        lines.append(
            f"{key:<34} {value:>9.4g}   target {sign} {bound:g}: {'holds' if holds else 'MISSED'}"
        )
    if not any(k.startswith("dense") for k in figures) and not dense_available():
        lines.append("dense, hybrid: skipped (the dense extra is not installed: make dense)")
    return "\n".join(lines)
