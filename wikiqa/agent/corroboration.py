"""Is one sentence enough? What the rest of the fetched text says about an answer's value.

Every quote is verified verbatim, but a verbatim quote of a false sentence (a vandalised lead,
a planted "X was developed by Y.") passes that check: it gives no order, so the guard has
nothing to find. What gives such a sentence away is the rest of what was read. A lead states
its subject's key facts more than once or in more than one way, and the articles fetched for the
question were chosen because they are about it. So, for an answer's *value* (the span of the
asked type it states: a person, place, date or number, `wikiqa.models.reading`; for other
questions, the name it gives):

- `valued`: whether the answer gives a value at all (0 for an answer that only repeats the
  question's words, and then the counts below are 0);
- `corroborating_sentences`: how many fetched sentences state the value;
- `corroborating_articles`: how many different fetched articles state it (in a sentence or
  their title);
- `contradicted`: no other sentence of the cited article states the value, and another sentence
  of it that carries the question's own words (beyond the article's title: what is asked, not
  what the article is about) states a different value of the asked type. The answer's only
  support disagrees with the rest of its article.
- `disputed`: the value is stated by one sentence only, and another fetched article, in a
  sentence that carries the question's words, states a different value of the asked type.

`evidence_problems` turns them into a decision: a contradicted answer is refused
(`contradicted`); an uncorroborated one (one sentence, when other articles were read) is flagged
for review; an answer the question's own numbers are missing from (the year in "the 2030 World
Cup") is refused, because its evidence is about another occasion.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from wikiqa.models.reading import AnswerType, answer_type, spans
from wikiqa.sources import Article
from wikiqa.text import STOPWORDS, sentences, stem, words

SHORT = 6  # words: an answer this short is its value
_NUMBER = re.compile(r"\b\d[\d,.]*\d\b|\b\d\b")
_WORD_NUMBERS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
}  # fmt: skip
# Words that name the asked type ("what year", "which country"): they say what kind of value
# is wanted, and a sentence need not repeat them to give one.
_TYPE_WORDS = frozenset(
    """year decade century date time period country city state region continent island river
    mountain capital nation town place person man woman""".split()
)


@dataclass(frozen=True)
class Corroboration:
    """What the fetched text says about one answer's value (`corroborate`)."""

    value: str | None  # None: the answer states no value to look for
    sentences: int
    articles: int
    contradicted: bool
    disputed: bool
    read: int  # sentences fetched

    @property
    def uncorroborated(self) -> bool:
        """No second sentence or article states it, though more than one sentence was read."""
        return self.value is not None and self.sentences <= 1 and self.read > 1

    def signals(self) -> dict[str, float]:
        """The named signals recorded beside the evidence ones. An answer with no value of its
        own (nothing beyond the question's words: "Group", "books") records `valued` 0 and no
        corroboration, so a fit can weigh that too rather than drop the answer."""
        return {
            "valued": float(self.value is not None),
            "corroborating_sentences": float(self.sentences),
            "corroborating_articles": float(self.articles),
            "contradicted": float(self.contradicted),
            "disputed": float(self.disputed),
        }


def value_of(answer: str, question: str) -> str | None:
    """The value an answer gives: the first span of the asked type in it (for a question of no
    type, its first name the question does not say); else a short answer itself, or the one or
    two words a sentence adds to the question ("The currency of Japan is the won."). None when
    there is none to look for."""
    kind = answer_type(question)
    found = spans(answer, kind if kind != "other" else "place", question)
    if found:
        return found[0]
    if len(words(answer)) <= SHORT and _terms(answer) - _terms(question):
        return answer.strip().rstrip(".")
    own = [w for w in words(answer) if w not in STOPWORDS and stem(w) not in _terms(question)]
    if kind == "other" and 0 < len(own) <= 2:  # "The currency of Japan is the won."
        return " ".join(own)
    return None


def _terms(text: str) -> set[str]:
    """Stemmed words, stopwords and possessives aside ("Mozart's" is "mozart")."""
    return {stem(re.sub(r"'s$", "", w)) for w in words(text)} - STOPWORDS


def _numbers(text: str) -> set[str]:
    found = {n.replace(",", "") for n in _NUMBER.findall(text)}
    return found | {_WORD_NUMBERS[w] for w in words(text) if w in _WORD_NUMBERS}


def states(sentence: str, value: str) -> bool:
    """Does the sentence state the value: every number of it (in digits or words) and every
    other word of it, a stem away?"""
    numbers = _numbers(value)
    if numbers and not numbers <= _numbers(sentence):
        return False
    wanted = _terms(value) - numbers - set(_WORD_NUMBERS)
    return bool(numbers or wanted) and wanted <= _terms(sentence)


def _related(word: str, known: set[str]) -> bool:
    """The word, or a word with its first five letters ("composer" for "composed")."""
    return word in known or (len(word) >= 5 and any(k[:5] == word[:5] for k in known))


def _overlap(question: str, sentence: str) -> int:
    """How many of the question's words (those naming the asked type aside) the sentence
    carries: how well it could answer the question."""
    have = _terms(sentence)
    return sum(_related(w, have) for w in _terms(question) - _TYPE_WORDS)


def _others(sentence: str, kind: AnswerType, question: str, quote: str) -> list[str]:
    """Values of the asked type (names, for a question of no type) that the sentence states
    and the quote does not."""
    found = spans(sentence, kind if kind != "other" else "place", question)
    return [f for f in found if not states(quote, f)]


def _name_words(value: str, question: str) -> set[str]:
    """The value's capitalised words of four letters or more that the question does not say."""
    capitalised = " ".join(w for w in value.split() if w[:1].isupper() and len(w) >= 4)
    return _terms(capitalised) - _terms(question)


def _key(value: str) -> str:
    """A value's last word, stemmed: "Mozart" and "Wolfgang Amadeus Mozart" are one person."""
    bare = re.sub(r"['’]s\b", "", value)
    found = sorted(_terms(bare) - set(_WORD_NUMBERS), key=bare.casefold().rfind)
    return found[-1] if found else value.casefold()


def corroborate(
    question: str, answer: str, quote: str, title: str, articles: Sequence[Article]
) -> Corroboration:
    """Count the fetched sentences and articles that state the answer's value, and look for a
    sentence that answers the question at least as well as the quote does with another value:
    in the cited article (`contradicted`, when no other sentence of it backs the value) or in
    another one (`disputed`, when no other sentence at all does)."""
    value = value_of(answer, question)
    read = sum(len(sentences(a.text)) for a in articles)
    if value is None:
        return Corroboration(None, 0, 0, False, False, read)
    kind = answer_type(question)
    # a name is stated by any of its own words: "Kanishka" states "Kanishka the Great",
    # "Maldives" "Republic of Maldives"
    named, names = kind not in ("date", "number"), _name_words(value, question)
    count = backing = own_support = 0
    contradicted = disputed = False
    bar = _overlap(question, quote)
    for article in articles:
        own = article.title.casefold() == title.casefold()
        stated_here = states(article.title, value)
        rivals = False
        repeated: Counter[str] = Counter()
        near: set[str] = set()
        for sentence in sentences(article.text):
            if states(sentence, value) or (named and bool(names & _terms(sentence))):
                count += 1
                stated_here = True
                own_support += own and quote.strip() not in sentence
                continue
            others = _others(sentence, kind, question, quote)
            overlap = _overlap(question, sentence)
            # for a question of no type, a sentence as close to the question that does not
            # state a value given in a word or two answers it otherwise
            plain = kind == "other" and bar > 1 and len(words(value)) <= 2
            rivals = rivals or bool((others or plain) and overlap >= max(bar, 2))
            keys = {_key(o) for o in others}
            repeated.update(keys)
            near.update(keys if overlap >= max(bar - 1, 2) else ())
        # a value the article keeps naming, once nearly as close to the question as the quote,
        # is its answer too
        rivals = rivals or any(repeated[k] > 1 for k in near)
        backing += stated_here
        if own:
            contradicted = rivals
        else:
            disputed = disputed or rivals
    return Corroboration(
        value,
        count,
        backing,
        contradicted and not own_support,
        disputed and count <= 1,
        read,
    )


def missing_numbers(question: str, quotes: Sequence[str], articles: Sequence[Article]) -> list[str]:
    """Numbers of the question (a year, an edition; not an item's "6.") that neither a quote
    nor a cited article's title or text carries: the evidence is about another occasion."""
    asked = {n for n in _NUMBER.findall(question) if len(n) > 1}
    if not asked:
        return []
    carried = _numbers(" ".join([*quotes, *(f"{a.title} {a.text}" for a in articles)]))
    return sorted(n for n in asked if n.replace(",", "") not in carried)
