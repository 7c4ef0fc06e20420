"""Which article titles a question names: the title matching both the suite's answerability
rules and the agent's title-linking retrieval lever use, so the two agree on what "named" means.

Titles and questions are compared as folded words: diacritics, case, punctuation, possessives and
the articles "the"/"a"/"an" ignored, whole words only. A title that folds to a number or to
stopwords only ('1', 'The The') would match far too often and never counts; a title with a
disambiguator also answers to its base ('Dune (novel)' to 'dune') when no other title shares it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cached_property

from wikiqa.sources.protocol import base_title
from wikiqa.text import STOPWORDS, words

__all__ = ["TitleNames", "fold", "is_numberish", "padded", "usable"]

ARTICLES = frozenset({"the", "a", "an"})
_DIGITS = re.compile(r"^\d+(?:p\d+)?(?:st|nd|rd|th|s)?$")
# "1,000" is one number, and "241.5" must not state "5": thousands commas go, a decimal point
# becomes a letter so the number stays one word ("241p5").
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
# Words that, alone or with digits, make an alias a bare number, date or quantity.
_NUMBERISH = frozenset(
    """
    zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
    hundred thousand million billion trillion first second third fourth fifth sixth seventh eighth
    ninth tenth dozen half january february march april may june july august september october
    november december bc ad bce ce century centuries year years percent per cent
    """.split()
)
MAX_TITLE_WORDS = 8


def fold(text: str) -> list[str]:
    """Words for alias matching: diacritics stripped, lower case, punctuation, possessives and
    articles gone."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    plain = _DECIMAL.sub("p", _THOUSANDS.sub("", plain))
    # "swift's" must match "Swift": the possessive is punctuation for matching purposes
    return [w.removesuffix("'s") for w in words(plain) if w not in ARTICLES]


def padded(tokens: list[str]) -> str:
    """Folded words as ' w1 w2 ... ', so a substring test matches whole words only."""
    return " " + " ".join(tokens) + " "


def is_numberish(tokens: list[str]) -> bool:
    """True for aliases like '1988', 'nine', '15 April 1912', '19th century'."""
    return bool(tokens) and all(_DIGITS.match(t) or t in _NUMBERISH for t in tokens)


def usable(alias: str) -> bool:
    """An alias can decide anything only if it folds to some non-stopword word, and to more
    than one letter ('l', a TriviaQA normalisation left-over, sits in every text)."""
    tokens = fold(alias)
    return any(t not in STOPWORDS for t in tokens) and (
        len("".join(tokens)) > 1 or is_numberish(tokens)
    )


def _plain(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _whole_name(question: str, title: str) -> bool:
    """In a cased question, a title must not be a piece of a longer name: 'Wales' in 'New South
    Wales', 'David' in 'Niels Henrik David Bohr'. Lower-case questions (NQ) cannot tell."""
    text = _plain(question)
    if text == text.lower():
        return True
    parts = [re.escape(w) for w in re.findall(r"[^\W_]+", _plain(base_title(title)))]
    pattern = re.compile(r"(?<![^\W_])" + r"\W+".join(parts) + r"(?![^\W_])", re.IGNORECASE)
    for match in pattern.finditer(text):
        before = re.search(r"([^\W_]+)[\s\"'“”‘’]+$", text[: match.start()])
        after = re.match(r"[\s\"'“”‘’]+([^\W_]+)", text[match.end() :])
        if not any(m and m.group(1)[0].isupper() for m in (before, after)):
            return True
    return False


class TitleNames:
    """The titles of a snapshot, as names a question can contain."""

    def __init__(self, titles: Iterable[str]) -> None:
        self.titles = sorted(set(titles))

    @cached_property
    def by_name(self) -> dict[str, str]:
        """Folded title -> title, for titles specific enough to count as named.

        A title with a disambiguator also answers to its base ('Dune (novel)' to 'dune') when
        no other article shares that base. Titles that fold to a number or to stopwords only
        ('1', 'The The') would match far too often.
        """
        names: dict[str, str] = {}
        bases: dict[str, list[str]] = {}
        for title in self.titles:
            key = " ".join(fold(title))
            if len(key) > 2 and usable(title) and not is_numberish(fold(title)):
                names.setdefault(key, title)
            base = " ".join(fold(base_title(title)))
            if base != key and base and usable(base) and not is_numberish(base.split()):
                bases.setdefault(base, []).append(title)
        for base, titles in bases.items():
            if len(titles) == 1:
                names.setdefault(base, titles[0])
        return names

    def named_in(self, question: str) -> list[str]:
        """Titles named in the question, longest match first; a name inside a longer one
        ('York' in 'New York City') does not count on its own."""
        tokens = fold(question)
        spans: list[tuple[int, int, str]] = []
        for i in range(len(tokens)):
            for j in range(min(len(tokens), i + MAX_TITLE_WORDS), i, -1):
                title = self.by_name.get(" ".join(tokens[i:j]))
                if title is not None:
                    spans.append((i, j, title))
                    break
        kept = [
            (i, j, t)
            for i, j, t in spans
            if not any(a <= i and j <= b and (a, b) != (i, j) for a, b, _ in spans)
        ]
        kept.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        return [t for t in dict.fromkeys(t for _, _, t in kept) if _whole_name(question, t)]
