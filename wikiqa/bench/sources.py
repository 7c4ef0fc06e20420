"""The `sources` benchmark and the recall pairs it scores, shared with the other benchmarks.

Build, reopen and search latency of the offline snapshot, and search recall over the bundled
question/title pairs (which `ask`, `load` and `local` reuse as their questions).
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

from pydantic import BaseModel

from wikiqa.bench.report import percentile
from wikiqa.inputs import MiB, parse_jsonl, read_jsonl, validate
from wikiqa.sources import SnapshotSource
from wikiqa.text import sentences


class SearchPair(BaseModel):
    """A question and the snapshot articles whose lead answers it (any of them counts)."""

    question: str
    titles: list[str]


def load_pairs(path: Path | None = None) -> list[SearchPair]:
    if path is not None:
        return read_jsonl(path, SearchPair, "pairs file", 16 * MiB)
    data = files("wikiqa.data").joinpath("search_pairs.jsonl")
    return [
        validate(SearchPair, obj, f"{data}:{n}")
        for n, obj in parse_jsonl(data.read_text(), str(data))
    ]


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
            "search_p50_ms": percentile(latencies, 50),
            "search_p95_ms": percentile(latencies, 95),
            "pairs": len(pairs),
            "recall_at_1": recall_at(source, pairs, 1),
            "recall_at_5": recall_at(source, pairs, 5),
        }
