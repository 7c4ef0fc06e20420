"""Does an answer state one of the task's gold aliases? The positive evidence correctness needs.

Matching forgives what changes the form of an answer but not its content, the normalisation
SQuAD, NQ and SimpleQA use plus numbers and dates: case, punctuation, articles, Unicode
(accents, dashes, quote marks), thousands separators, small number words ("three" = "3") and
date forms ("14 April 1912" = "April 14, 1912" = "1912-04-14"). An alias is stated when its
normalised words occur contiguously in the normalised answer, so "Fleming" is stated by
"Alexander Fleming discovered it" but "Paris" is not stated by "Parisian".

`values` reads the dates, years and numbers an answer states, so a grader can tell "states a
different date than asked" (incorrect) from "says something else" (undecided).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

ValueKind = Literal["date", "year", "number"]

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?,?\s+(\d{{3,4}})\b"
)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{3,4}})\b")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{3,4}})\b")
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0 ](?=\d{3}\b)")
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
# Words that spell a number, for "a number was asked; does the answer name one?" ("Four").
NUMBER_WORDS = frozenset(_NUMBER_WORDS) | frozenset(
    "thirty forty fifty sixty seventy eighty ninety hundred thousand million billion dozen".split()
)
_ARTICLES = frozenset({"a", "an", "the"})
_TOKEN = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)*[+#]*")  # C++ and C# are not C
_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


def _fold(text: str) -> str:
    """Unicode folded to plain lowercase ASCII where it can be: accents off, dashes and quotes
    plain, so "Pelé" = "Pele" and "German–British" = "German-British"."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text)
    text = re.sub(r"[\u2018\u2019\u201b\u2032]", "'", text)
    return text.casefold()


def _date(year: str, month: int, day: int | None = None) -> str:
    return f"{int(year):04d}_{month:02d}" + (f"_{day:02d}" if day else "")


def _canonical_dates(text: str) -> str:
    text = _ISO_DATE.sub(lambda m: _date(m[1], int(m[2]), int(m[3])), text)
    text = _DAY_MONTH_YEAR.sub(lambda m: _date(m[3], _MONTHS[m[2]], int(m[1])), text)
    text = _MONTH_DAY_YEAR.sub(lambda m: _date(m[3], _MONTHS[m[1]], int(m[2])), text)
    return _MONTH_YEAR.sub(lambda m: _date(m[2], _MONTHS[m[1]]), text)


def tokens(text: str) -> list[str]:
    """The normalised words of a text: folded, dates canonical, numbers plain, articles gone."""
    text = _canonical_dates(_THOUSANDS.sub("", _fold(text)))
    words = [_NUMBER_WORDS.get(w, w) for w in _TOKEN.findall(re.sub(r"'s\b", "", text))]
    return [w.rstrip(".") for w in words if w not in _ARTICLES]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


_DATE_TOKEN = re.compile(r"^\d{4}_\d{2}(?:_\d{2})?$")


def _coarser(words: list[str]) -> list[list[str]]:
    """The answer's words, then with each date cut to its month, then to its year: a date states
    its year ("1928" is stated by "28 September 1928")."""
    return [words, [w[:7] if _DATE_TOKEN.match(w) else w for w in words],
            [w[:4] if _DATE_TOKEN.match(w) else w for w in words]]  # fmt: skip


def stated(answer: str, aliases: list[str]) -> list[str]:
    """The aliases the answer states, in the task's order."""
    forms = _coarser(tokens(answer))
    found = [a for a in aliases if any(_contains(words, tokens(a)) for words in forms)]
    return [a for a in found if not _someone_else(answer, a, aliases)]


def _someone_else(answer: str, alias: str, aliases: list[str]) -> bool:
    """A one-word name stated only as part of another name: "Hopper" in "Edward Hopper" is not
    Grace Hopper. Each occurrence preceded by a capitalised word that no alias includes is
    someone else's; the alias counts if any occurrence is not."""
    if len(alias.split()) != 1 or not alias[:1].isupper():
        return False
    spans = [tokens(a) for a in aliases]
    others = 0
    occurrences = list(re.finditer(rf"\b{re.escape(alias)}\b", answer, re.IGNORECASE))
    for match in occurrences:
        before = re.search(r"([A-Z][\w'.-]*)\s+$", answer[: match.start()])
        if before and not any(_contains(s, tokens(f"{before[1]} {alias}")) for s in spans):
            others += 1
    return bool(occurrences) and others == len(occurrences)


def values(text: str) -> dict[ValueKind, set[str]]:
    """The dates (YYYY_MM[_DD]), years and other numbers a text states, normalised."""
    found: dict[ValueKind, set[str]] = {"date": set(), "year": set(), "number": set()}
    for word in tokens(text):
        if _DATE_TOKEN.match(word):
            found["date"].add(word)
        elif _YEAR.match(word):
            found["year"].add(word)
        elif _NUMBER.match(word):
            found["number"].add(word)
    return found


def asked_kind(aliases: list[str]) -> ValueKind | None:
    """The kind of value the aliases are, when every alias is one value of one kind."""
    kinds = set()
    for alias in aliases:
        parts = values(alias)
        present = [k for k, v in parts.items() if v]
        if len(present) != 1 or len(parts[present[0]]) != 1:
            return None
        if len(tokens(alias)) > 2:  # a value with words around it ("about 3 km"): not bare
            return None
        kinds.add(present[0])
    return kinds.pop() if len(kinds) == 1 else None
