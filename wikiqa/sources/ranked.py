"""Search by another ranking than the source's own: dense, hybrid, and titles the query names.

`RankedSource` wraps the source the agent reads from (a snapshot, or a wrapper of one: the run's
cassette recorder, an injection) and answers `search` by one of three rankers:

- `bm25`: the snapshot's own FTS5 ranking, unchanged;
- `dense`: cosine similarity of MiniLM embeddings (`wikiqa.sources.dense`);
- `hybrid`: both lists fused by reciprocal-rank fusion (Cormack et al. 2009): each title scores
  the sum of 1 / (`RRF_K` + rank) over the lists it is in. Fusion needs no calibration between a
  BM25 score and a cosine, which have nothing in common.

With `link_titles`, the titles the query names (`wikiqa.sources.names`, the rule the suite's
answerability uses) are one more list in the fusion, in the order the query names them, so an
article a question asks about by name is not lost below articles that share its other words.

The rankers read the snapshot under the wrappers directly (BM25 without snippets, for speed);
each hit returned is then read through the wrapped source (`get_article`), so a run's cassette
records it and planted text reaches its snippet. `get_article` passes through unchanged. Without
a lever set, `search` is the wrapped source's own, untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from wikiqa.sources.dense import DenseIndex
from wikiqa.sources.names import TitleNames
from wikiqa.sources.protocol import SourceWrapper, WikiSource
from wikiqa.sources.records import SearchHit
from wikiqa.sources.snapshot import SnapshotSource
from wikiqa.text import best_sentence

__all__ = ["RRF_K", "RankedSource", "Ranker", "fuse", "snapshot_of"]

Ranker = Literal["bm25", "dense", "hybrid"]
RRF_K = 60  # the constant of the original paper; it damps how much rank 1 outweighs rank 10
DEPTH = 20  # hits taken from each ranker before fusing


def fuse(lists: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: titles by the sum of 1/(k + rank) over the lists, best first
    (ties in the order first seen)."""
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, title in enumerate(ranked, start=1):
            scores[title] = scores.get(title, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def snapshot_of(source: WikiSource) -> SnapshotSource | None:
    """The snapshot under a stack of wrappers, if there is one."""
    inner: object = source
    while not isinstance(inner, SnapshotSource) and hasattr(inner, "inner"):
        inner = inner.inner
    return inner if isinstance(inner, SnapshotSource) else None


class _Cache:
    """Per snapshot: its title names and its dense index, built once per process."""

    names: ClassVar[dict[str, TitleNames]] = {}
    dense: ClassVar[dict[str, DenseIndex]] = {}


def _names(snapshot: SnapshotSource) -> TitleNames:
    if snapshot.sha256 not in _Cache.names:
        _Cache.names[snapshot.sha256] = TitleNames(snapshot.titles())
    return _Cache.names[snapshot.sha256]


def dense_index(snapshot: SnapshotSource, progress: bool = True) -> DenseIndex:
    """The snapshot's dense index, opened (or built, once, with a progress bar) on first use."""
    if snapshot.sha256 not in _Cache.dense:
        titles = list(snapshot.titles())
        texts = [a.text if (a := snapshot.get_article(t)) else "" for t in titles]
        _Cache.dense[snapshot.sha256] = DenseIndex(
            snapshot.sha256, titles, texts, home=snapshot.index_path.parent, progress=progress
        )
    return _Cache.dense[snapshot.sha256]


class RankedSource(SourceWrapper):
    """`inner`, searched by `ranker` (and the titles a query names, with `link_titles`)."""

    def __init__(self, inner: WikiSource, ranker: Ranker = "bm25", link_titles: bool = False):
        super().__init__(inner)
        self.ranker = ranker
        self.link_titles = link_titles
        snapshot = self.snapshot = snapshot_of(inner)
        if snapshot is None and (ranker != "bm25" or link_titles):
            raise ValueError(
                f"retrieval {ranker!r}{' with linked titles' if link_titles else ''} needs the "
                "snapshot source: it ranks the snapshot's own leads"
            )
        self.names = _names(snapshot) if snapshot is not None and link_titles else None
        self.dense = dense_index(snapshot) if snapshot is not None and ranker != "bm25" else None

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        if self.ranker == "bm25" and self.names is None:
            return self.inner.search(query, limit)
        assert self.snapshot is not None
        depth = max(limit, DEPTH)
        lists = []
        if self.ranker != "dense":
            lists.append([title for title, _ in self.snapshot.rank(query, depth)])
        if self.dense is not None:
            lists.append([title for title, _ in self.dense.rank(query, depth)])
        if self.names is not None:
            lists.append(self.names.named_in(query))
        hits: list[SearchHit] = []
        for title, score in fuse(lists):
            if len(hits) >= limit:
                break
            article = self.inner.get_article(title)  # through the wrappers: recorded, planted
            if article is None or article.is_disambiguation:
                continue
            if article.title not in {h.title for h in hits}:
                snippet = best_sentence(article.text, query)
                hits.append(SearchHit(title=article.title, snippet=snippet, score=round(score, 6)))
        return hits
