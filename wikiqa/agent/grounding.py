"""Citation-forced grounding: every quote is a verbatim span of an article fetched in this run.

Matching forgives only what copying text through a model changes without changing meaning:
runs of whitespace and the shape of quote marks. Everything else (case, words, punctuation,
ellipses) must match, so a quote that passes is text Wikipedia really contains.
"""

from __future__ import annotations

from collections.abc import Callable

from wikiqa.agent.render import infobox_lines
from wikiqa.models import CitationArg
from wikiqa.sources import Article, normalize_title
from wikiqa.text import content_words, normalize_quote, sentences, stem, words

MIN_QUOTE_WORDS = 3
Repair = Callable[["CitationArg", "Fetched"], "CitationArg | None"]


def strip_wrapping(quote: str) -> str:
    # Models often wrap a quote in quote marks; the marks are not part of the span.
    q = normalize_quote(quote)
    while len(q) > 2 and q[0] == q[-1] and q[0] in "\"'":
        q = q[1:-1].strip()
    return q


def quotable_text(article: Article) -> str:
    return normalize_quote("\n".join([article.text, *infobox_lines(article)]))


class Fetched:
    """The articles fetched in one run, findable by any title the model used for them."""

    def __init__(self) -> None:
        self.articles: dict[str, Article] = {}
        self._aliases: dict[str, str] = {}

    def add(self, requested: str, article: Article) -> None:
        key = normalize_title(article.title)
        self.articles[key] = article
        self._aliases[normalize_title(requested)] = key
        self._aliases[key] = key

    def get(self, title: str) -> Article | None:
        key = self._aliases.get(normalize_title(title))
        return self.articles.get(key) if key else None

    def titles(self) -> list[str]:
        return [a.title for a in self.articles.values()]

    def __len__(self) -> int:
        return len(self.articles)


def citation_problems(citations: list[CitationArg], fetched: Fetched) -> list[str]:
    """Everything wrong with a submission's citations, each named exactly (empty = grounded)."""
    if not len(fetched):
        return ["nothing was fetched in this run: call get_article, then quote what it returned"]
    problems = []
    for i, citation in enumerate(citations, start=1):
        article = fetched.get(citation.title)
        if article is None:
            problems.append(
                f"citation {i}: {citation.title!r} was not fetched in this run "
                f"(fetched: {', '.join(fetched.titles())})"
            )
            continue
        quote = strip_wrapping(citation.quote)
        if len(words(quote)) < MIN_QUOTE_WORDS:
            problems.append(
                f"citation {i}: quote {quote!r} is too short; quote at least "
                f"{MIN_QUOTE_WORDS} words of the passage that supports the answer"
            )
        elif quote not in quotable_text(article):
            problems.append(
                f"citation {i}: quote is not a verbatim passage of {article.title!r}: "
                f"{quote[:120]!r}; copy the words exactly as fetched, without ellipses"
            )
    return problems


def trimmed(citation: CitationArg, fetched: Fetched) -> CitationArg | None:
    """The citation cut to the longest run of its quote's leading whole sentences that is
    verbatim in a fetched article, the cited one first (else re-attributed to the article that
    has them); None when not even its first sentence is, or what is left is too short.

    Why (the `trim_quotes` lever): a small model copying a long passage often gets its first
    sentences exactly right and garbles the end ("... on March 4, 1789. Originally包括七个").
    Trimming only drops words the model wrote; it never adds one, so the answer must still be
    backed by what is left (`support_problems` runs after it)."""
    quote = strip_wrapping(citation.quote)
    found = sentences(quote)
    ends, offset = [], 0
    for sentence in found:
        offset = quote.index(sentence, offset) + len(sentence)
        ends.append(offset)
    cited = fetched.get(citation.title)
    order = [cited] if cited is not None else []
    order += [a for a in fetched.articles.values() if a is not cited]
    for end in reversed(ends):
        prefix = quote[:end]
        if len(words(prefix)) < MIN_QUOTE_WORDS:
            return None
        for article in order:
            if prefix in quotable_text(article):
                return CitationArg(title=article.title, quote=prefix)
    return None


def repaired(citations: list[CitationArg], fetched: Fetched, repair: Repair) -> list[CitationArg]:
    """Each citation the verbatim check rejects replaced by `repair`'s version, where it has
    one (the same object otherwise). The loop's `trim_quotes` lever and the readers of recorded
    runs (`wikiqa.experiment.losses`) both go through here, so a reader repairs as the agent did."""
    return [
        c if not citation_problems([c], fetched) else repair(c, fetched) or c for c in citations
    ]


def coverage(answer: str, quotes: list[str]) -> float:
    """Fraction of the answer's content words found in its quotes: a grounding signal."""
    terms = {stem(w) for w in content_words(answer)}
    if not terms:
        return 0.0
    quoted = {stem(w) for q in quotes for w in words(q)}
    return len(terms & quoted) / len(terms)
