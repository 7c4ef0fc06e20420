"""Plain-text helpers shared by search and (later) answer scoring: tokens and stopwords."""

from __future__ import annotations

import re
from functools import lru_cache

# English function words plus the question words that open most queries ("what", "who", ...);
# they carry no topic, so dropping them keeps BM25 from ranking on "the" and "is".
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having he
    he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if
    in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off on
    once only or other ought our ours ourselves out over own same shan't she she'd she'll she's
    should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up
    very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's with won't would wouldn't you you'd you'll you're you've
    your yours yourself yourselves
    many much tell name called known whose does did ever
    """.split()
)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits, keeping inner apostrophes)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.casefold())]


def content_words(text: str) -> list[str]:
    """Words with stopwords dropped, first occurrence order, no duplicates."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)


# A sentence ends at . ! or ? followed by space and an upper-case letter, digit or quote;
# abbreviations like "c." or "U.S." before a lower-case word are therefore not split.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]?\s+(?=[\"'“‘(]?[A-Z0-9])")
_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Mt|Ft|Jr|Sr|Gen|Col|Lt|Capt|Gov|Rev|No|Vol|vs|c|ca|approx)"
    r"|\b[A-Z](?:\.[A-Z])*)\.$"
)


def sentences(text: str) -> list[str]:
    """Split prose into sentences, keeping each a verbatim span of `text`."""
    spans: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        candidate = text[start : match.start()].rstrip()
        if _ABBREVIATION.search(candidate):
            continue
        if candidate:
            spans.append(text[start : match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        spans.append(tail)
    return [s for s in (span.strip() for span in spans) if s]


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude suffix stripper, enough to match 'mountains' with 'mountain' in snippets."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def best_sentence(text: str, query: str, max_chars: int = 240) -> str:
    """The sentence of `text` sharing most content words with `query`, trimmed for display."""
    terms = {stem(w) for w in content_words(query)}
    candidates = sentences(text) or [text]
    best = max(candidates, key=lambda s: len(terms & {stem(w) for w in words(s)}))
    return best if len(best) <= max_chars else best[: max_chars - 1].rstrip() + "…"
