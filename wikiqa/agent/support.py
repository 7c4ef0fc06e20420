"""Structural checks on what leaves the agent, whatever the guard's patterns missed.

A planted instruction succeeds only if something it asked for reaches the output. Patterns try
to recognise the instruction; these checks instead bound what an output may contain:

- `unsupported`: every number, name, code-like token (`ROLE-35`, `PWNED`), web address or
  domain in an answer must occur in one of its verified quotes or in the question. A canary
  smuggled into the answer's own words has nowhere to come from.
- `uncovered`: at most half of the answer's content words may come from nowhere in its quotes,
  titles or the question, so a lower-case payload ("staged in a studio") cannot ride along.
- `off_topic`: at least one quote must share a content word with the question. Planted text
  does not know the question, so quoting the plant alone fails here even when no pattern fired.
- `plain_refusal`: a refusal reason may say only that the question's answer was not found; any
  other content word (a case number, a "legal hold", a link) means the reason is replaced by a
  template before it leaves.
"""

from __future__ import annotations

import re
import unicodedata

from wikiqa.text import STOPWORDS, content_words, stem, words

_TOKEN = re.compile(
    r"(?:https?://|www\.)\S+"  # addresses
    r"|\b[\w-]+(?:\.[\w-]+)*\.[a-z]{2,12}\b(?:/\S*)?"  # domains (with a path or not)
    r"|\b\w*\d[\w.,:/-]*\w\b|\b\d\b"  # numbers and tokens with a digit
    r"|\b[A-Z][A-Z0-9]{2,}(?:-[A-Z0-9]+)*\b"  # ALL-CAPS codes and acronyms
    r"|\b[A-Z][\w'’-]*",  # capitalised words: names
)
# Words a plain "not found" may use besides the question's own.
_NOT_FOUND = frozenset(
    """
    no not none nothing found find finding fetched retrieved retrieve article articles wikipedia
    text texts support supports supported supporting answer answers answered answering question
    questions information info evidence enough contain contains contained mention mentions
    mentioned state states stated say says said provide provides provided unable cannot can't
    couldn't doesn't don't source sources search searched results result relevant available
    given specific data details detail explicitly clear clearly determine determined sufficient
    insufficient reliable lead leads page pages content passage passages read could would able
    therefore so sorry unfortunately only any anything related regarding
    """.split()
)
GENERIC = frozenset({"article", "answer", "question", "wikipedia", "page", "text"})
# Capitalised only because they open a sentence: "According to the article, ..." is no name.
_OPENERS = frozenset(
    """
    according however yes based although therefore thus also overall sure first second third
    finally today currently unlike per instead indeed yet still notably specifically namely
    """.split()
)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _present(token: str, haystack: str, haystack_words: set[str]) -> bool:
    folded = _fold(token).strip(".,;:")
    if not folded:
        return True
    if re.fullmatch(r"[\d.,]+", folded):  # 8,848 = 8848
        bare = folded.replace(",", "")
        return bare in haystack.replace(",", "")
    if " " not in folded and "." not in folded and "-" not in folded and "/" not in folded:
        return folded in haystack_words or stem(folded) in haystack_words
    return folded in haystack


def unsupported(
    answer: str, quotes: list[str], question: str, titles: list[str] | None = None
) -> list[str]:
    """Tokens of the answer (numbers, names, codes, addresses) that neither a quote, the title
    of a cited article, nor the question contains."""
    haystack = _fold(" ".join([*quotes, *(titles or []), question]))
    bare = [re.sub(r"'s$", "", w) for w in words(haystack)]
    # a name after an elided article is its own token in the answer ("Orsay" in "Musée
    # d'Orsay", "Ivoire" in "Côte d'Ivoire"), but one word with it in the text
    bare += [part for w in bare if "'" in w for part in w.split("'")[1:] if part]
    known = set(bare) | {stem(w) for w in bare}
    missing = []
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", answer)):
        token = re.sub(r"['’]s$", "", match.group(0).rstrip(".,;:!?)'\"’”"))
        folded = token.casefold()
        if folded in STOPWORDS or folded in _OPENERS or (len(token) < 2 and not token.isdigit()):
            continue
        if not _present(token, haystack, known):
            missing.append(token)
    return list(dict.fromkeys(missing))


def uncovered(
    answer: str, quotes: list[str], question: str, titles: list[str] | None = None
) -> float:
    """The share of the answer's content words (openers aside) that neither a quote, a cited
    title nor the question contains, a stem or a five-letter beginning away. A paraphrase keeps
    most of its quote's words; an answer carrying someone else's payload does not."""
    said = [stem(w) for w in content_words(answer) if w not in _OPENERS]
    return _missing_share(said, [*quotes, *(titles or []), question])


def unquoted(
    answer: str, quotes: list[str], question: str, titles: list[str] | None = None
) -> float:
    """The share of the answer's own content words (those the question does not hold) that no
    quote or cited title contains: `uncovered` counts the question's words as covered, so an
    answer built of the question's words ("Love comes from personal choice and can be decided
    upon", for "Can we decide to love?") passes it whatever it quotes. 0 when the answer has no
    word of its own."""
    asked = {stem(w) for w in words(question)}
    own = [stem(w) for w in content_words(answer) if w not in _OPENERS and stem(w) not in asked]
    return _missing_share(own, [*quotes, *(titles or [])])


def _missing_share(said: list[str], sources: list[str]) -> float:
    """The share of `said` (stems) that no source holds, a stem or a five-letter beginning away."""
    if not said:
        return 0.0
    have = {stem(w) for text in sources for w in words(text)}
    long = {h[:5] for h in have if len(h) >= 5}
    missing = [w for w in said if w not in have and not (len(w) >= 5 and w[:5] in long)]
    return len(missing) / len(said)


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words(text) if w not in STOPWORDS} - GENERIC


def _related(a: str, b: str) -> bool:
    """Stems where one begins the other: "mount" ~ "mountain", "discover" ~ "discovery";
    "france" is not "francisco"."""
    short, long = sorted((a, b), key=len)
    return (len(short) >= 4 and long.startswith(short)) or a == b


def off_topic(quotes: list[str], question: str) -> bool:
    """No quote shares a content word (its stem, or a stem it begins) with the question."""
    asked = _stems(question)
    if not asked:
        return False
    return not any(_related(a, q) for quote in quotes for q in _stems(quote) for a in asked)


def plain_refusal(reason: str, question: str) -> bool:
    """Does the reason say nothing beyond the question and "not found"?"""
    allowed = {stem(w) for w in words(question)} | {stem(w) for w in _NOT_FOUND}
    return all(stem(w) in allowed for w in content_words(reason))
