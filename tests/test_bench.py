"""The benchmark's quality figures (not its timings) are asserted here; speed is printed by
`python -m wikiqa.bench sources`, never asserted in a timed test."""

from __future__ import annotations

from wikiqa.bench import latency_queries, load_pairs, recall_at
from wikiqa.sources import SnapshotSource


def test_recall_pairs_are_many_and_point_at_real_articles(snapshot: SnapshotSource) -> None:
    pairs = load_pairs()
    assert len(pairs) >= 40
    for pair in pairs:
        for title in pair.titles:
            article = snapshot.get_article(title)
            assert article is not None and article.title == title, title


def test_search_recall_meets_the_target(snapshot: SnapshotSource) -> None:
    pairs = load_pairs()
    assert recall_at(snapshot, pairs, 5) >= 0.9
    assert recall_at(snapshot, pairs, 1) <= recall_at(snapshot, pairs, 5)


def test_latency_queries_are_varied_and_reproducible(snapshot: SnapshotSource) -> None:
    queries = latency_queries(snapshot)
    assert len(queries) >= 500
    assert len(set(queries)) >= 0.95 * len(queries)
    assert queries == latency_queries(snapshot)
    assert min(map(len, queries)) < 30 < 120 < max(map(len, queries))


def test_load_bench_drives_a_real_server_without_errors() -> None:
    # Figures (req/s, p99) are printed by `python -m wikiqa.bench load`; here only correctness.
    from wikiqa.bench import bench_load

    figures = bench_load(clients=4, seconds=2.0)
    assert figures["errors"] == 0
    assert figures["requests"] > 0 and figures["server_peak_rss_mb"] > 0


def test_the_command_line_lists_every_benchmark() -> None:
    # `python -m wikiqa.bench` goes through __main__.py to wikiqa.bench.main; only --help, no figures.
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "wikiqa.bench", "--help"], check=True, capture_output=True, text=True
    )
    assert "{sources,ask,eval,public,injection,load,local}" in run.stdout
