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
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from wikiqa.evals.importers.common import Imported, make_task
from wikiqa.evals.tasks.task import TaskProvenance
from wikiqa.sources import SnapshotSource, base_title
from wikiqa.sources.names import TitleNames, fold, is_numberish, padded, usable
from wikiqa.text import content_words, sentences, stem

__all__ = [
    "HOW", "MIN_SHARED", "RULES", "Decision", "Evidence", "Leads", "fold", "gap", "is_numberish",
    "open_task", "padded", "states", "usable",
]  # fmt: skip

# Content words a sentence of an article nobody named must share with the question.
MIN_SHARED = 2


def states(text: str, alias: str) -> bool:
    """Does `text` state `alias` (folded, whole words)?"""
    tokens = fold(alias)
    return bool(tokens) and padded(tokens) in padded(fold(text))


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
    def names(self) -> TitleNames:
        return TitleNames(self.text)

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
        """Titles named in the question (`wikiqa.sources.names`)."""
        return self.names.named_in(question)

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
