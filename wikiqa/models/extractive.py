"""The offline answerer: a deterministic policy that drives the agent loop like a model would.

It calls the same tools through the same loop: search (the loop's forced first search), fetch the
top `hits_read` hits, score every sentence of the fetched text against the question, then submit
the best sentence verbatim with its citation, or refuse when the best score is under `threshold`.
It never paraphrases, so it cannot hallucinate; what it can get wrong is *which* sentence, and
whether to answer at all. Those are its levers:

    threshold     minimum score to answer (0..1)                       default 0.5
    hits_read     how many search hits to fetch                        default 3
    scoring       overlap: share of question words in the sentence;   default overlap
                  idf: the same, each word weighted by its rarity across the fetched sentences
    title_weight  credit for a question word found only in the article title   default 0.5
    reader        sentence: submit the best sentence whole;                   default sentence
                  typed: read the question's answer type (who, when, how many, where;
                  `wikiqa.models.reading`), prefer sentences stating a value of that type and
                  answer with that value, quoting its sentence
    type_bonus    (typed) score credit for a sentence stating a value of the asked type
                                                                             default 0.25
    short         (sentence) for a question with an answer type, answer with the value of that
                  type the chosen sentence states, quoting the sentence beside it, so the
                  answer can be graded without a judge; the best sentence above the threshold
                  that states such a value is chosen, and when none does it refuses (the
                  evidence does not carry an answer of the asked kind)   default on
    delay         seconds to sleep per call: a stand-in for a remote model's latency in
                  benchmarks and crash drills (never changes a decision)      default 0

Spec: `extractive` or `extractive:threshold=0.6,hits_read=2,scoring=idf`.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from wikiqa.models.protocol import (
    AssistantMessage,
    CallOptions,
    Message,
    ModelTurn,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from wikiqa.models.reading import answer_type, spans
from wikiqa.models.tools import FETCH, REFUSE, SEARCH, SUBMIT
from wikiqa.sources import Article, SearchHit, normalize_title
from wikiqa.text import content_words, sentences, stem, words

_OPTIONS = (
    "threshold", "hits_read", "scoring", "title_weight", "reader", "type_bonus", "span", "short",
    "delay",
)  # fmt: skip


@functools.cache
def _policy_hash() -> str:
    """A short hash of the source the extractive policy runs on."""
    from wikiqa import text
    from wikiqa.models import reading

    sources = [inspect.getsource(m) for m in (sys.modules[__name__], reading, text)]
    return hashlib.sha256("\n".join(sources).encode()).hexdigest()[:16]


def _flag(value: str) -> bool:
    if value.casefold() in ("1", "true", "on", "yes"):
        return True
    if value.casefold() in ("0", "false", "off", "no"):
        return False
    raise ValueError(f"expected on or off, got {value!r}")


Scoring = Literal["overlap", "idf"]
Reader = Literal["sentence", "typed"]


@dataclass(frozen=True)
class Candidate:
    score: float
    title: str
    sentence: str
    answer: str  # what is submitted: the sentence itself, or the span that answers (typed)


@dataclass(frozen=True)
class ExtractiveModel:
    threshold: float = 0.5
    hits_read: int = 3
    scoring: Scoring = "overlap"
    title_weight: float = 0.5
    reader: Reader = "sentence"
    span: bool = True
    type_bonus: float = 0.25
    short: bool = True
    delay: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.hits_read < 1:
            raise ValueError(f"hits_read must be at least 1, got {self.hits_read}")
        if self.scoring not in ("overlap", "idf"):
            raise ValueError(f"scoring must be overlap or idf, got {self.scoring!r}")
        if not 0.0 <= self.title_weight <= 1.0:
            raise ValueError(f"title_weight must be in [0, 1], got {self.title_weight}")
        if self.reader not in ("sentence", "typed"):
            raise ValueError(f"reader must be sentence or typed, got {self.reader!r}")
        if not 0.0 <= self.type_bonus <= 1.0:
            raise ValueError(f"type_bonus must be in [0, 1], got {self.type_bonus}")
        if not 0.0 <= self.delay <= 60.0:
            raise ValueError(f"delay must be in [0, 60] seconds, got {self.delay}")

    @classmethod
    def from_options(cls, options: dict[str, str]) -> ExtractiveModel:
        known: dict[str, Callable[[str], object]] = {
            "threshold": float, "hits_read": int, "scoring": str, "title_weight": float,
            "reader": str, "type_bonus": float, "span": _flag, "short": _flag, "delay": float,
        }  # fmt: skip
        if "abstain" in options:
            raise ValueError(
                "abstain is the agent's abstain_below lever (--abstain-below, ABSTAIN_BELOW), "
                "which every model shares"
            )
        unknown = set(options) - set(known)
        if unknown:
            raise ValueError(
                f"unknown extractive option(s) {sorted(unknown)}; known: {sorted(known)}"
            )
        try:
            values = {k: known[k](v) for k, v in options.items()}
        except ValueError as err:
            raise ValueError(f"bad extractive option: {err}") from None
        return cls(**values)  # type: ignore[arg-type]

    @property
    def spec(self) -> str:
        defaults = ExtractiveModel()
        changed = [
            f"{name}={getattr(self, name)}"
            for name in _OPTIONS
            if getattr(self, name) != getattr(defaults, name)
        ]
        return "extractive" + (":" + ",".join(changed) if changed else "")

    @property
    def cache_identity(self) -> str:
        """Besides the spec, what decides its turns: the code of its policy. A cached turn from
        older code must never be replayed."""
        return _policy_hash()

    # -- the policy -------------------------------------------------------------------------

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        if self.delay:
            time.sleep(self.delay)
        question = next(m.text for m in messages if isinstance(m, UserMessage))
        step = sum(isinstance(m, AssistantMessage) for m in messages)
        if not tools:
            return self._closed_book(question)
        results = [m for m in messages if isinstance(m, ToolResult)]
        asked = [c for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
        if not any(r.name == SEARCH for r in results):
            return self._turn(step, [(SEARCH, {"query": question})])
        if not any(c.name == FETCH for c in asked):
            hits: list[SearchHit] = next(
                r.artifact for r in reversed(results) if r.name == SEARCH and r.artifact
            )
            return self._turn(step, [(FETCH, {"title": h.title}) for h in hits[: self.hits_read]])
        articles = [r.artifact for r in results if isinstance(r.artifact, Article)]
        rejected = {
            c.arguments.get("answer") for c in asked if c.name == SUBMIT
        }  # a repair turn follows every rejected submission; never resubmit the same sentence
        ranked = [c for c in self.rank(question, articles) if c.answer not in rejected]
        if self.reader == "typed":
            ranked = self._typed(question, ranked)
        elif self.short and answer_type(question) != "other":
            return self._short(step, question, ranked)
        if ranked and ranked[0].score >= self.threshold:
            best = ranked[0]
            citation = {"title": best.title, "quote": best.sentence}
            answer = best.answer if self.span else best.sentence
            return self._turn(step, [(SUBMIT, {"answer": answer, "citations": [citation]})])
        score = f"{ranked[0].score:.2f}" if ranked else "none"
        note = f"best sentence score {score}, threshold {self.threshold:.2f}"
        reason = "No fetched article supports an answer to this question."
        return self._turn(step, [(REFUSE, {"reason": reason})], note)

    def _short(self, step: int, question: str, ranked: list[Candidate]) -> ModelTurn:
        """The best sentence above the threshold that states a value of the asked type: its
        first such value is the answer, the sentence its quote. None: a refusal, since a
        sentence that names no person cannot answer "who"."""
        kind = answer_type(question)
        for candidate in ranked:
            if candidate.score < self.threshold:
                break
            found = spans(candidate.sentence, kind, question)
            if not found and kind == "person" and re.match(r"(?:He|She)\b", candidate.sentence):
                # "She developed FLOW-MATIC." in the article on her: the title names her
                found = [re.sub(r"\s*\(.*\)$", "", candidate.title)]
            if found:
                # one value is the answer; of several, which one is a guess: the sentence
                # answers, and is graded as one
                answer = found[0] if len(found) == 1 else candidate.sentence
                citation = {"title": candidate.title, "quote": candidate.sentence}
                return self._turn(step, [(SUBMIT, {"answer": answer, "citations": [citation]})])
        score = f"{ranked[0].score:.2f}" if ranked else "none"
        note = f"no sentence above threshold {self.threshold:.2f} states a {kind} (best {score})"
        reason = "No fetched article supports an answer to this question."
        return self._turn(step, [(REFUSE, {"reason": reason})], note)

    def best(self, question: str, articles: Sequence[Article]) -> Candidate | None:
        """The candidate this policy would submit from `articles`, whatever its score (the
        threshold is the caller's to apply); None when there is no sentence, or the question has
        no content word. Lets another reader's answer be checked against this one's, with no
        model call."""
        ranked = self.rank(question, articles)
        if self.reader == "typed":
            ranked = self._typed(question, ranked)
        return ranked[0] if ranked else None

    def _typed(self, question: str, ranked: list[Candidate]) -> list[Candidate]:
        """Re-rank for the asked type: a sentence that states a value of that type gains
        `type_bonus` and answers with its first such value; `other` questions keep the order."""
        kind = answer_type(question)
        if kind == "other":
            return ranked
        rescored = []
        for order, candidate in enumerate(ranked):
            found = spans(candidate.sentence, kind, question)
            score = min(1.0, candidate.score + self.type_bonus) if found else candidate.score
            answer = found[0] if found else candidate.sentence
            better = replace(candidate, score=round(score, 4), answer=answer)
            rescored.append((-score, order, better))
        return [c for _, _, c in sorted(rescored, key=lambda x: (x[0], x[1]))]

    def _closed_book(self, question: str) -> ModelTurn:
        """With tools off it has no knowledge at all: it names the question's own subject (its
        capitalised phrase, else its content words). The no-retrieval baseline's floor."""
        subject = re.findall(
            r"\b[A-Z][\w'’:-]*(?:\s+(?:of\s+|the\s+)?[A-Z0-9][\w'’:-]*)*", question[1:]
        )
        text = (subject[-1] if subject else " ".join(content_words(question)).capitalize()) + "."
        return ModelTurn(
            message=AssistantMessage(text=text), model=self.spec, stop_reason="end_turn"
        )

    def rank(self, question: str, articles: Sequence[Article]) -> list[Candidate]:
        """Every sentence of every article, best first (ties: earlier article, earlier sentence)."""
        terms = list(dict.fromkeys(stem(w) for w in content_words(question)))
        if not terms:
            return []
        seen: set[str] = set()
        rows: list[tuple[str, str, set[str], set[str]]] = []
        for article in articles:
            key = normalize_title(article.title)
            if key in seen:
                continue
            seen.add(key)
            title_terms = {stem(w) for w in words(article.title)}
            for sentence in sentences(article.text):
                rows.append(
                    (article.title, sentence, {stem(w) for w in words(sentence)}, title_terms)
                )
        weights = self._weights(terms, [row[2] for row in rows])
        total = sum(weights.values())
        scored = []
        for order, (title, sentence, sentence_terms, title_terms) in enumerate(rows):
            got = sum(
                weights[t]
                * (1.0 if t in sentence_terms else self.title_weight if t in title_terms else 0.0)
                for t in terms
            )
            candidate = Candidate(round(got / total, 4), title, sentence, sentence)
            scored.append((-got / total, order, candidate))
        return [c for _, _, c in sorted(scored, key=lambda x: (x[0], x[1]))]

    def _weights(self, terms: list[str], sentence_terms: list[set[str]]) -> dict[str, float]:
        if self.scoring == "overlap":
            return dict.fromkeys(terms, 1.0)
        n = len(sentence_terms)
        return {t: math.log(1 + n / (1 + sum(t in s for s in sentence_terms))) for t in terms}

    def _turn(
        self, step: int, calls: list[tuple[str, dict[str, object]]], note: str = ""
    ) -> ModelTurn:
        tool_calls = [
            ToolCall(id=f"ext_{step}_{i}", name=name, arguments=args)
            for i, (name, args) in enumerate(calls)
        ]
        return ModelTurn(
            message=AssistantMessage(text=note, tool_calls=tool_calls),
            model=self.spec,
            stop_reason="tool_use",
        )
