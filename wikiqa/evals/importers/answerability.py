"""Is a question answerable offline? Decided against the snapshot, from the gold aliases, with
no retriever involved: a suite chosen by what a ranker finds cannot measure that ranker.

A public question is worth grading offline only when the snapshot states its answer in an article
the question is about, otherwise the offline agent would be scored against text it cannot see. An
article is *about* the question by one of three rules, each recorded with the evidence:

- `named`: its title is named in the question;
- `dataset`: the dataset's own evidence names it (HotpotQA's supporting titles, when the copy
  carries them);
- `content`: any lead of the snapshot, all of them checked, has a sentence that states an alias
  and shares at least `min_shared` content words (stemmed, the alias's own left out) with the
  question, its title sharing a word with the question, naming the answer, or named in the lead
  of an article the question names; or two more shared words without that.

The answer is *stated* when one of the aliases occurs in the lead, matched on folded words:
case, punctuation, the articles "the"/"a"/"an" and diacritics ignored, whole words only.

A bare number or year ("1988", "nine", "June 1988") sits in hundreds of leads by chance, so for
such an alias the sentence that states it must share one more content word with the question,
and the article's title a word with the question, unless the question names the article. An
alias the question itself contains (a comparison's two candidates, a restated entity) proves
nothing and is ignored.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from wikiqa.evals.importers.common import Imported, make_task
from wikiqa.evals.tasks.task import TaskProvenance
from wikiqa.sources import SnapshotSource, base_title
from wikiqa.text import STOPWORDS, content_words, sentences, stem, words

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
# Content words a sentence of an article nobody named must share with the question.
MIN_SHARED = 2


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


def states(text: str, alias: str) -> bool:
    """Does `text` state `alias` (folded, whole words)?"""
    tokens = fold(alias)
    return bool(tokens) and padded(tokens) in padded(fold(text))


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


def _stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


Rule = Literal["named", "dataset", "content"]
RULES: tuple[Rule, ...] = ("named", "dataset", "content")


@dataclass(frozen=True)
class Evidence:
    """One article whose lead states an alias: which rule makes it about the question, the
    sentence that says it, and how many content words that sentence shares with the question."""

    title: str
    alias: str
    sentence: str
    rule: Rule
    shared: int

    @property
    def named(self) -> bool:
        return self.rule == "named"


@dataclass
class Decision:
    """What the snapshot says about one question."""

    named: list[str]
    evidence: list[Evidence] = field(default_factory=list)
    echoed: list[str] = field(default_factory=list)  # aliases the question itself contains

    @property
    def stated(self) -> bool:
        return bool(self.evidence)

    @property
    def sources(self) -> list[str]:
        """Titles that state the answer: named articles first, then the dataset's, then by
        words shared with the question."""
        return list(dict.fromkeys(e.title for e in self.evidence))

    @property
    def rule(self) -> Rule | None:
        """The rule that admits the question (the first evidence's), or None."""
        return self.evidence[0].rule if self.evidence else None


class Leads:
    """The snapshot's leads, folded once, with the title lookup "named in the question" needs."""

    def __init__(self, snapshot: SnapshotSource, min_shared: int = MIN_SHARED) -> None:
        self.snapshot = snapshot
        self.min_shared = min_shared
        self.text: dict[str, str] = {}
        for title in snapshot.titles():
            article = snapshot.get_article(title)
            if article is not None and not article.is_disambiguation and article.text.strip():
                self.text[article.title] = article.text
        self._folded: dict[str, str] = {}
        self._sentences: dict[str, list[tuple[str, str, set[str]]]] = {}

    @cached_property
    def by_name(self) -> dict[str, str]:
        """Folded title -> title, for titles specific enough to count as named.

        A title with a disambiguator also answers to its base ('Dune (novel)' to 'dune') when
        no other article shares that base. Titles that fold to a number or to stopwords only
        ('1', 'The The') would match far too often.
        """
        names: dict[str, str] = {}
        bases: dict[str, list[str]] = {}
        for title in sorted(self.text):
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

    def is_name(self, title: str) -> bool:
        """Is the title a proper name ('Sudan', 'Death of a Salesman') rather than a common noun
        ('Country', 'Rock (geology)')? A name is capitalised inside sentences of its own lead
        and never written in lower case there."""
        base = base_title(title)
        if " " in base or any(c.isupper() for c in base[1:]):
            return re.search(rf"\b{re.escape(base.lower())}\b", self.text[title]) is None
        pattern = re.compile(rf"(?<!^)(?<![.!?] )\b{re.escape(base)}(?:e?s)?\b", re.IGNORECASE)
        found = [m.group() for m in pattern.finditer(self.text[title])]
        return bool(found) and not any(m.islower() for m in found)

    def folded(self, title: str) -> str:
        if title not in self._folded:
            self._folded[title] = padded(fold(self.text[title]))
        return self._folded[title]

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

    @cached_property
    def _corpus(self) -> tuple[str, list[int], list[str]]:
        """Every lead, folded, in one string, with where each starts: one substring search
        asks the whole snapshot."""
        order = sorted(self.text)
        starts, at = [], 0
        for title in order:
            starts.append(at)
            at += len(self.folded(title)) + 1
        return "|".join(self.folded(t) for t in order), starts, order

    def anywhere(self, alias: str) -> bool:
        """Does any lead at all state `alias`?"""
        tokens = fold(alias)
        return bool(tokens) and padded(tokens) in self._corpus[0]

    def stating(self, alias: str) -> list[str]:
        """Every title whose lead states `alias`, in title order."""
        tokens = fold(alias)
        if not tokens:
            return []
        corpus, starts, order = self._corpus
        needle, found, at = padded(tokens), [], corpus.find(padded(tokens))
        while at >= 0:
            index = bisect_right(starts, at) - 1
            found.append(order[index])
            next_start = starts[index + 1] if index + 1 < len(starts) else len(corpus)
            at = corpus.find(needle, next_start)
        return found

    def _lead_sentences(self, title: str) -> list[tuple[str, str, set[str]]]:
        """(sentence, its folded words padded, its content stems) for each lead sentence."""
        if title not in self._sentences:
            self._sentences[title] = [
                (s, padded(fold(s)), _stems(s)) for s in sentences(self.text[title])
            ]
        return self._sentences[title]

    def _stating_sentence(
        self, title: str, alias: str, question: str, rule: Rule, named: Sequence[str] = ()
    ) -> tuple[str, int] | None:
        """The first lead sentence of `title` that states `alias` and is about the question,
        with how many content words it shares with the question.

        Shared words are content words of the question, stemmed, the alias's own words left
        out. An article the question names, or the dataset gives as evidence, may say "it" for
        its subject; any other needs `min_shared` shared words and a title that shares a word
        with the question, names the answer ('Cyprus' for "what island is half greek and half
        turkish") or is named in the lead of an article the question names ('Croatia' in the
        Slovenia lead, for "the capital of the country south of Slovenia"), or two shared words
        more (a sentence sharing just 'five' and 'world' with a
        question is about something else). A bare number needs more: in a
        named article, a shared word beyond the title's own ('20 clubs' in the Premier League
        lead does not say how many titles Manchester United won); elsewhere, one shared word
        more than `min_shared` and a title that shares a word with the question (a skater's
        'Grand Prix Final' of 2013 does not date a rugby club's last grand final).
        """
        tokens = fold(alias)
        needle = padded(tokens)
        if needle not in self.folded(title):
            return None
        numeric = is_numberish(tokens)
        wanted = _stems(question) - {stem(t) for t in tokens}
        titled = _stems(base_title(title))
        # the article is about the question's words, or about the answer itself, or an
        # article the question names names it (the bridge of a two-step question)
        base = padded(fold(base_title(title)))
        related = (
            bool(titled & wanted)
            or base in needle
            or needle in padded(fold(title))
            or any(base in self.folded(n) for n in named)
        )
        for sentence, folded_sentence, stems in self._lead_sentences(title):
            if needle not in folded_sentence:
                continue
            shared = len(stems & wanted)
            if rule != "content":
                ok = bool(stems & (wanted - titled)) if numeric else True
            elif numeric:
                ok = shared > self.min_shared and bool(titled & wanted)
            else:
                ok = shared >= self.min_shared and (related or shared >= self.min_shared + 2)
            if ok:
                return sentence, shared
        return None

    def decide(
        self, question: str, aliases: list[str], evidence_titles: Sequence[str] = ()
    ) -> Decision:
        """Which articles the question is about state one of its aliases, and by which rule:
        the articles it names, then those the dataset gives as evidence (`evidence_titles`),
        then every other lead that states an alias in a sentence sharing enough of the
        question's words (most shared first)."""
        named = self.named_in(question)
        asked = padded(fold(question))
        decision = Decision(named=named)
        live: list[str] = []
        for alias in dict.fromkeys(a.strip() for a in aliases):
            if not usable(alias):
                continue
            if padded(fold(alias)) in asked:
                decision.echoed.append(alias)
            else:
                live.append(alias)
        if not live:
            return decision
        given = [t for t in evidence_titles if t in self.text and t not in named]
        for rule, titles in (("named", named), ("dataset", given)):
            for title in titles:
                self._add(decision, title, live, question, rule)  # type: ignore[arg-type]
        seen = {*named, *given}
        content: list[Evidence] = []
        for alias in live:
            for title in dict.fromkeys(self.stating(alias)):
                if title in seen:
                    continue
                found = self._stating_sentence(title, alias, question, "content", named)
                if found is not None:
                    seen.add(title)
                    content.append(Evidence(title, alias, found[0], "content", found[1]))
        decision.evidence += sorted(content, key=lambda e: (-e.shared, e.title))
        return decision

    def _add(
        self, decision: Decision, title: str, aliases: list[str], question: str, rule: Rule
    ) -> None:
        for alias in aliases:
            found = self._stating_sentence(title, alias, question, rule)
            if found is not None:
                decision.evidence.append(Evidence(title, alias, found[0], rule, found[1]))
                return


def gap(leads: Leads, question: str, decision: Decision, aliases: list[str]) -> list[str] | str:
    """Where live Wikipedia would answer a question the snapshot does not: the articles it
    names by their proper names (the task's expected sources: live, the answer is most likely
    further down one of them), or why it is no retrieval gap.

    An alias stated in any lead at all could be found offline by a deeper search, so such a
    question is no gap; bare numbers are exempt, they sit in some lead by chance.
    """
    about = [t for t in decision.named if leads.is_name(t)]
    if not about:
        return "no snapshot article about it"
    if any(leads.anywhere(a) for a in aliases if not is_numberish(fold(a))):
        return "answer elsewhere in the snapshot"
    return about[:2]


HOW: dict[Rule, str] = {
    "named": "named in the question",
    "dataset": "the dataset's evidence",
    "content": "{shared} words shared with the question",
}


def open_task(
    leads: Leads,
    out: Imported,
    *,
    id: str,
    question: str,
    aliases: list[str],
    origin: TaskProvenance,
    note: str,
) -> None:
    """A one-article question (NQ-open, SelfAware answerable) into `out`: `factual` when the
    snapshot states an alias in an article the question is about (the rule that admits it
    recorded in `out.rules`), `retrieval_gap` when the question names a snapshot article by its
    proper name but no lead anywhere states the answer; otherwise the reason it is left out
    counted in `out.skipped`."""
    aliases = [a for a in dict.fromkeys(a.strip() for a in aliases) if usable(a)]
    if not aliases:
        out.skipped["no usable alias"] += 1
        return
    decision = leads.decide(question, aliases)
    if not decision.stated and decision.echoed:
        out.skipped["answer named in the question"] += 1
        return
    common = {
        "id": id, "question": question, "answers": aliases, "reference_answer": aliases[0],
        "should_refuse": False, "provenance": origin,
    }  # fmt: skip
    if decision.stated:
        first = decision.evidence[0]
        how = HOW[first.rule].format(shared=first.shared)
        out.add(
            make_task(
                **common, category="factual", expected_sources=decision.sources[:3],
                notes=f"{note}; the snapshot lead of {first.title!r} ({how}) states "
                f"{first.alias!r}.",
            ),
            first.rule,
        )  # fmt: skip
        return
    about = gap(leads, question, decision, aliases)
    if isinstance(about, str):
        out.skipped[about] += 1
        return
    out.add(
        make_task(
            **common, category="retrieval_gap", expected_sources=about,
            notes=f"{note}; no snapshot lead states the answer, though the question names "
            f"{about[0]!r}: answerable live only.",
        )
    )  # fmt: skip
