"""Benchmarks that print figures: `python -m wikiqa.bench NAME` (`--help` lists them).

Speed is measured here, never asserted in timed unit tests: the figures go into issue notes with
the command that printed them. Targets (2-core machine) are printed beside each figure.

One module per benchmark of the product, named after its command: `sources` (which also holds
the recall pairs the others reuse), `ask`, `eval`, `public`, `cassette`, `load`, `local`,
`scale`; `report` formats the figures against their targets and `main` is the command line.
`injection` runs the guard's drill, which lives with the other drills
(`wikiqa.evals.drills.injection`).
"""

from __future__ import annotations

from wikiqa.bench.ask import bench_ask
from wikiqa.bench.eval import bench_eval
from wikiqa.bench.load import bench_load
from wikiqa.bench.local import bench_local
from wikiqa.bench.main import main
from wikiqa.bench.public import bench_public
from wikiqa.bench.sources import SearchPair, bench_sources, latency_queries, load_pairs, recall_at

__all__ = [
    "SearchPair",
    "bench_ask",
    "bench_eval",
    "bench_load",
    "bench_local",
    "bench_public",
    "bench_sources",
    "latency_queries",
    "load_pairs",
    "main",
    "recall_at",
]
