"""Benchmarks that print figures: `python -m wikiqa.bench NAME` (`--help` lists them).

Speed is measured here, never asserted in timed unit tests: the figures go into issue notes with
the command that printed them. Targets (2-core machine) are printed beside each figure.

One module per benchmark, named after its command: `sources` (which also holds the recall pairs
the others reuse), `ask`, `eval`, `public`, `reading` (where the answerer loses its correct
answers), `injection`, `load`, `local`; `report` formats the figures against their targets and
`main` is the command line.
"""

from __future__ import annotations

from wikiqa.bench.ask import bench_ask
from wikiqa.bench.eval import bench_eval
from wikiqa.bench.load import bench_load
from wikiqa.bench.local import bench_local
from wikiqa.bench.main import main
from wikiqa.bench.public import bench_public
from wikiqa.bench.reading import bench_reading
from wikiqa.bench.sources import SearchPair, bench_sources, latency_queries, load_pairs, recall_at
from wikiqa.evals.drills.injection import bench_injection

__all__ = [
    "SearchPair",
    "bench_ask",
    "bench_eval",
    "bench_injection",
    "bench_load",
    "bench_local",
    "bench_public",
    "bench_reading",
    "bench_sources",
    "latency_queries",
    "load_pairs",
    "main",
    "recall_at",
]
