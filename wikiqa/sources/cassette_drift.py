"""Drift between two runs' cassettes: the articles both fetched at different revisions, and the
searches both made (same query and limit) that returned different hits.

Two live runs a week apart compare agents on different text; this says how different. A
comparison is *confounded by drift* when more than `DRIFT_THRESHOLD` (5%) of the articles both
runs fetched, or of the searches both made, changed between them: past that, a difference in
pass rate may be Wikipedia's, not the agent's. The remedy is to replay both agents on one
frozen source (`wikiqa cassette merge`).

An article is matched by its resolved title and depth; it drifted when the two runs saw a
different set of (revision id, text): a new revision, or new text under no revision id (a
snapshot file changed). A search drifted when its hit titles, in order, differ.
"""

from __future__ import annotations

from pydantic import BaseModel, computed_field

from wikiqa.sources.cassette_files import Cassette
from wikiqa.sources.protocol import normalize_title
from wikiqa.sources.records import Article
from wikiqa.text import sentences

DRIFT_THRESHOLD = 0.05  # share of shared articles or searches; above it, drift confounds


class ArticleDrift(BaseModel):
    title: str
    depth: str
    a_revisions: list[int | None]
    b_revisions: list[int | None]
    removed: list[str]  # sentences only A's text has (A's first version against B's)
    added: list[str]  # sentences only B's text has


class SearchDrift(BaseModel):
    query: str
    limit: int
    a_hits: list[list[str]]  # each distinct hit list the run got (titles, in order)
    b_hits: list[list[str]]


class Drift(BaseModel):
    a: str
    b: str
    shared_articles: int
    shared_searches: int
    articles: list[ArticleDrift]
    searches: list[SearchDrift]
    threshold: float = DRIFT_THRESHOLD

    @computed_field  # type: ignore[prop-decorator]
    @property
    def drifted_articles(self) -> int:
        return len(self.articles)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def drifted_searches(self) -> int:
        return len(self.searches)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def confounded(self) -> bool:
        return _share(len(self.articles), self.shared_articles) > self.threshold or (
            _share(len(self.searches), self.shared_searches) > self.threshold
        )

    def line(self) -> str:
        """One line for beside a comparison's Δ."""
        text = (
            f"drift: {_count(len(self.articles), self.shared_articles)} shared articles at "
            f"different revisions, {_count(len(self.searches), self.shared_searches)} shared "
            "searches with different hits"
        )
        if self.confounded:
            text += (
                f"; CONFOUNDED (> {self.threshold:.0%}): replay both on one frozen source "
                "(wikiqa cassette merge)"
            )
        return text


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _count(part: int, whole: int) -> str:
    return f"{part} of {whole} ({_share(part, whole):.1%})"


Versions = dict[tuple[str, str], list[Article]]


def _versions(cassette: Cassette) -> Versions:
    found: Versions = {}
    for article in cassette.articles.values():
        versions = found.setdefault((normalize_title(article.title), article.depth), [])
        if all((v.revision_id, v.text) != (article.revision_id, article.text) for v in versions):
            versions.append(article)
    return found


def _hit_lists(cassette: Cassette) -> dict[tuple[str, int], list[list[str]]]:
    found: dict[tuple[str, int], list[list[str]]] = {}
    for search in cassette.searches:
        lists = found.setdefault((search.query, search.limit), [])
        titles = [h.title for h in search.hits]
        if titles not in lists:
            lists.append(titles)
    return found


def changed_sentences(old: str, new: str) -> tuple[list[str], list[str]]:
    """(sentences only `old` has, sentences only `new` has), each once, in text order.

    The sentence sets are compared, not the sequences: linear in the text, where an alignment
    (difflib's) is quadratic or worse on many near-identical sentences, which a handed-over
    cassette may hold. A sentence moved or repeated, with no other change, is not listed."""
    before, after = sentences(old), sentences(new)
    kept_before, kept_after = set(before), set(after)
    removed = list(dict.fromkeys(s for s in before if s not in kept_after))
    added = list(dict.fromkeys(s for s in after if s not in kept_before))
    return removed, added


def drift(a: Cassette, b: Cassette) -> Drift:
    """What changed between the text and searches two runs saw (A the baseline, B the change)."""
    va, vb = _versions(a), _versions(b)
    articles = []
    for key in sorted(set(va) & set(vb)):
        seen_a = {(v.revision_id, v.text) for v in va[key]}
        seen_b = {(v.revision_id, v.text) for v in vb[key]}
        if seen_a == seen_b:
            continue
        removed, added = changed_sentences(va[key][0].text, vb[key][0].text)
        articles.append(
            ArticleDrift(
                title=vb[key][0].title,
                depth=key[1],
                a_revisions=[v.revision_id for v in va[key]],
                b_revisions=[v.revision_id for v in vb[key]],
                removed=removed,
                added=added,
            )
        )
    ha, hb = _hit_lists(a), _hit_lists(b)
    searches = [
        SearchDrift(query=k[0], limit=k[1], a_hits=ha[k], b_hits=hb[k])
        for k in sorted(set(ha) & set(hb))
        if sorted(ha[k]) != sorted(hb[k])
    ]
    return Drift(
        a=a.header.run_id or a.path.name,
        b=b.header.run_id or b.path.name,
        shared_articles=len(set(va) & set(vb)),
        shared_searches=len(set(ha) & set(hb)),
        articles=articles,
        searches=searches,
    )


def render_drift(d: Drift) -> str:
    """`wikiqa cassette diff`: every drifted article with its changed sentences, every search
    whose hits changed."""
    out = [f"A {d.a}", f"B {d.b}", d.line()]
    for art in d.articles:
        revs = f"revision {_revs(art.a_revisions)} -> {_revs(art.b_revisions)}"
        out += ["", f"article {art.title} ({art.depth}): {revs}"]
        if not art.removed and not art.added:
            out.append("  (the same sentences: moved, repeated, or changed outside the text)")
        out += [f"  - {s}" for s in art.removed] + [f"  + {s}" for s in art.added]
    for s in d.searches:
        out += ["", f"search {s.query!r} (limit {s.limit})"]
        out += [f"  A: {', '.join(h)}" for h in s.a_hits] + [
            f"  B: {', '.join(h)}" for h in s.b_hits
        ]
    return "\n".join(out)


def _revs(revisions: list[int | None]) -> str:
    return "/".join("none" if r is None else str(r) for r in revisions)
