"""`python -m wikiqa.bench retrieval`: recall of the expected article and the gold in the top 5,
per ranker, each figure printed beside its target and whether it holds."""

from __future__ import annotations

from wikiqa.bench.retrieval import bench_retrieval, report
from wikiqa.evals import load_tasks, resolve_suite
from wikiqa.evals.analysis.retrieval import answerable


def test_bm25_figures_on_the_dev_suite() -> None:
    figures = bench_retrieval("dev", configs=["bm25", "bm25+link"])
    tasks = [t for t in load_tasks(resolve_suite("dev")) if answerable(t)]
    assert figures["tasks"] == len(tasks) > 10
    for name in ("bm25", "bm25+link"):
        at = [figures[f"{name}_recall_at_{k}"] for k in (1, 3, 5)]
        assert 0 < at[0] <= at[1] <= at[2] <= 1  # recall grows with k
        assert 0 < figures[f"{name}_gold_in_top5"] <= 1
        assert figures[f"{name}_query_p50_ms"] <= figures[f"{name}_query_p95_ms"]
    assert not any(k.startswith(("dense", "hybrid")) for k in figures)  # not asked for
    text = report(figures)
    assert "retrieval on dev:" in text
    holds = "holds" if figures["bm25_recall_at_5"] >= 0.9 else "MISSED"
    assert f"target >= 0.9: {holds}" in next(
        line for line in text.splitlines() if line.startswith("bm25_recall_at_5")
    )
