"""Reading a sentence for what the question asks: its answer type, and the span that answers.

The extractive answerer's typed reader (`reader=typed`) uses these pure functions:
- `answer_type`: what kind of value the question wants, from its wh-phrase ("who" → a person,
  "when"/"what year" → a date, "how many" → a number, "where"/"which country" → a place);
  anything else is `other`, for which no span is cut and the whole sentence answers.
- `spans`: the values of that type a sentence states, in order, leaving out words the question
  already says (the answer to "who wrote Dracula?" is not "Dracula").

A span must be a verbatim piece of its sentence, so the submitted answer stays grounded in the
quote that cites it.
"""

from __future__ import annotations

import re
from typing import Literal

from wikiqa.text import STOPWORDS, stem, words

AnswerType = Literal["person", "place", "date", "number", "other"]

_TYPES: list[tuple[AnswerType, re.Pattern[str]]] = [
    ("date", re.compile(r"^(?:when\b|(?:in |since |by )?(?:what|which) (?:year|decade|century|date)\b|what time period\b|how long ago\b)")),
    ("number", re.compile(r"^(?:approximately |roughly |about )?(?:how (?:many|much|long|old|far|tall|high|big|large|deep|wide|fast|heavy)\b|what (?:is the |was the )?(?:population|number|percentage|height|length|age|area)\b)")),
    ("person", re.compile(r"^(?:who\b|whom\b|whose\b|(?:what|which) (?:person|man|woman|artist|composer|author|writer|poet|painter|scientist|president|king|queen|emperor|leader|actor|actress|singer|player|architect|inventor|philosopher|explorer|rapper|director)s?\b)")),
    ("place", re.compile(r"^(?:where\b|in what (?:country|city|state|region|continent)\b|(?:what|which) (?:country|city|state|continent|island|region|river|mountain|ocean|sea|capital|nation|planet|town)s?\b)")),
]  # fmt: skip


def answer_type(question: str) -> AnswerType:
    """The kind of value asked for, read from the question's wh-phrase: its opening one, else
    the first one inside it ("the 2002 film 8mile is based on which rapper's life")."""
    text = " ".join(words(question))
    wh = _WH.search(text)
    for tail in [text, *([text[wh.start() :]] if wh else [])]:
        for kind, pattern in _TYPES:
            if pattern.search(tail):
                return kind
    return "other"


_WH = re.compile(r"\b(?:which|what|who|whom|whose|when|where|how)\b")


_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
_DATE = re.compile(
    rf"\b(?:\d{{1,2}} {_MONTH},? \d{{3,4}}|{_MONTH} \d{{1,2}},? \d{{3,4}}|{_MONTH} \d{{3,4}}"
    r"|(?:the )?\d{1,2}(?:st|nd|rd|th) century(?: (?:BC|BCE|AD|CE))?"
    r"|\d{3,4}s|\d{1,4} (?:BC|BCE|AD|CE)|(?<![\d,.])1\d{3}(?![\d,])|(?<![\d,.])20\d{2}(?![\d,]))\b"
)
_NUMBER = re.compile(
    r"(?<![\w.,])(?:about |around |over |nearly |approximately |some )?"
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\w)(?: (?:million|billion|trillion))?"
    r"(?:\s(?:[a-z]+|km|m|kg|mi|ft)\b)?"
    r"|(?<![\w.,])\d+(?:\.\d+)?(?!\w)(?: (?:million|billion|trillion|percent|per cent|%))?"
    r"(?:\s(?:[a-z]+|km|m|kg|mi|ft)\b)?"
    r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred|"
    r"thousand|million|billion)(?:\s(?:[a-z]+))?\b"
)
_NAME_WORD = r"(?:[A-Z][\w'’.-]*[\w]|[A-Z]\.)"
_NAME = re.compile(
    rf"{_NAME_WORD}(?:\s+(?:(?:of|the|de|da|di|del|van|von|der|la|le|y|bin|al)\s+)*{_NAME_WORD})*"
)
_DEMONYM = re.compile(r"(?:ish|ese|ic|ian|ean)$")  # "Irish author", "Gothic novel": not names
_NOT_NAMES = frozenset(
    "the a an in on at of for and but it its this that these those he she they his her their "
    "there it's during after before since while although however".split()
)


def names(sentence: str) -> list[str]:
    """The capitalised names a sentence contains ("Western Australia", "Bram Stoker")."""
    return [m.group(0) for m in _NAME.finditer(sentence)]


def without_names(sentence: str) -> str:
    """The sentence with its capitalised names blanked out."""
    return _NAME.sub(" ", sentence)


def spans(sentence: str, kind: AnswerType, question: str) -> list[str]:
    """The values of `kind` that `sentence` states, in order, none made of the question's words.

    Person and place spans are capitalised names; the sentence's first word counts only when
    it starts a name of two words or more ("Bram Stoker wrote", not "In 1897")."""
    if kind == "other":
        return []
    asked = {stem(w) for w in words(question)} - STOPWORDS
    if kind == "date":
        found = [m.group(0) for m in _DATE.finditer(sentence)]
    elif kind == "number":
        found = [m.group(0).strip() for m in _NUMBER.finditer(sentence)]
        found = [f for f in found if not re.fullmatch(r"(?:1\d{3}|20\d{2})", f)]
        # "24 letters" answers "how many letters": a count of the asked unit comes first
        found.sort(key=lambda f: not ({stem(w) for w in words(f)} & asked))
    else:
        found = []
        for m in _NAME.finditer(sentence):
            name = m.group(0)
            first = name.split()[0].casefold()
            if first in _NOT_NAMES:
                name = name.split(None, 1)[1] if " " in name else ""
            if not name or (m.start() == 0 and " " not in name and first in STOPWORDS):
                continue
            found.append(name)
    if kind in ("person", "place"):
        found = [f for f in found if " " in f or not _DEMONYM.search(f)]
        found.sort(key=lambda f: kind == "person" and " " not in f)  # full names first
    novel = []
    for span in found:
        span_words = {stem(w) for w in words(span)} - STOPWORDS
        fresh = not span_words & asked if kind in ("person", "place") else not span_words <= asked
        if span_words and fresh:
            novel.append(span)
    return novel
