"""How well does the evidence behind an answer back it? Signals that vary, and one fitted score.

An answer's confidence should say how likely it is to be right. The model's own say-so is not
evidence, so the signals come from what the answer was grounded in:

    support      share of the answer's content words its quotes contain
    focus        share of the question's content words the quotes or the cited titles state:
                 does the evidence talk about what was asked ("Western Australia" quoted for
                 "Australia" shares the word, not the focus: the title test below catches it)
    named        the question names a cited article: every content word of its title is asked
    rank         1 / (1 + where the cited article ranked in the question's search), 0 if absent
    typed        the question asks for a person, place, date or number (`reading.answer_type`)
    type_match   ... and a quote states a value of that type that the question does not
    short        the answer is a value (six words or fewer), not a sentence

`score` is a logistic model over them. Its weights are fitted (`wikiqa confidence fit`) on the
public suite's development part, against the graders' decided correctness, and checked on its
holdout; they ship in `wikiqa/data/confidence.json` (the tools mode) and
`confidence-reading.json` (the reading mode), each with what it was fitted on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from typing import Literal

from pydantic import BaseModel

from wikiqa.models.reading import answer_type, names, spans, without_names
from wikiqa.text import content_words, stem, words

FEATURES = ("support", "focus", "named", "rank", "typed", "type_match", "short")
# The model's own signals, where its provider gives token log-probabilities (the reading mode's
# `belief`): recorded beside the evidence signals, read only by weights fitted on them.
MODEL_FEATURES = ("answer_logprob", "p_unknown")
# The agent's agreement signals (`wikiqa.agent.agreement`): across samples of the reading call,
# and with the extractive answerer over the same articles. Any signal an answer records can be
# fitted on once its name is listed in SIGNALS.
AGREEMENT_FEATURES = (
    "sample_agreement", "sample_distinct", "sample_unknown", "extractive_agrees",
    "extractive_score",
)  # fmt: skip
# How the rest of what was read bears on the answer (`wikiqa.agent.corroboration`).
CORROBORATION_FEATURES = (
    "valued", "corroborating_sentences", "corroborating_articles", "contradicted", "disputed",
)  # fmt: skip
SIGNALS = (*FEATURES, *MODEL_FEATURES, *AGREEMENT_FEATURES, *CORROBORATION_FEATURES)
# Each answering mode has its own fitted weights: the tools mode's answers (the extractive
# answerer's among them) and the reading mode's short answers carry different signals and fail
# in different ways, so one mode's fit says little about the other's.
Mode = Literal["tools", "reading"]
WEIGHTS_FILES: dict[str, str] = {"tools": "confidence.json", "reading": "confidence-reading.json"}


class Weights(BaseModel):
    """A fitted logistic model, with where it came from and its review threshold."""

    features: list[str]
    weights: list[float]
    bias: float
    review_below: float  # answers under this confidence are flagged for human review
    fitted_on: str  # the run (and suite) the weights were fitted on
    points: int
    auroc_fit: float


def _stems(text: str, content: bool = True) -> set[str]:
    return {stem(w) for w in (content_words(text) if content else words(text))}


def features(
    question: str, answer: str, quotes: Sequence[str], titles: Sequence[str], hits: Sequence[str]
) -> dict[str, float]:
    """The signals for one answer: its text, its quotes, its cited titles, and the titles the
    question's first search returned, best first."""
    asked = _stems(question)
    quoted = set().union(*(_stems(q, content=False) for q in quotes))
    focused = set().union(*(_stems(q, content=False) - _elsewhere(q, asked) for q in quotes))
    titled = set().union(*(_stems(t, content=False) for t in titles)) if titles else set()
    said = _stems(answer)
    kind = answer_type(question)
    ranks = [hits.index(t) for t in titles if t in hits]
    named = any(_stems(t) and _stems(t) <= asked for t in titles)
    return {
        "support": len(said & quoted) / len(said) if said else 0.0,
        "focus": len(asked & (focused | titled)) / len(asked) if asked else 0.0,
        "named": float(named),
        "rank": 1.0 / (1 + min(ranks)) if ranks else 0.0,
        "typed": float(kind != "other"),
        "type_match": float(kind != "other" and any(spans(q, kind, question) for q in quotes)),
        "short": float(len(words(answer)) <= 6),
    }


def _elsewhere(quote: str, asked: set[str]) -> set[str]:
    """Asked words a quote states only inside another name: "Western Australia" does not
    state "Australia" when the question does not say "western". A name whose every content
    word is asked ("the Soviet Union") states them."""
    inside: set[str] = set()
    for name in names(quote):
        found = _stems(name)
        if found - asked:
            inside |= found & asked
    return inside - _stems(without_names(quote), content=False)


def _text(mode: Mode) -> str:
    return files("wikiqa.data").joinpath(WEIGHTS_FILES[mode]).read_text(encoding="utf-8")


@cache
def weights(mode: Mode = "tools") -> Weights:
    """The shipped weights of an answering mode, read once per process."""
    return Weights.model_validate(json.loads(_text(mode)))


def weights_for(signals: dict[str, float], mode: Mode = "tools") -> Weights:
    """`mode`'s shipped weights when the answer carries every signal they read, else the tools
    mode's, which read only the evidence signals every answer carries (a reading answer from a
    provider without log-probabilities, or drawn once, has no `answer_logprob` or
    `sample_agreement` to weigh). Its `review_below` goes with it."""
    found = weights(mode)
    return found if all(f in signals for f in found.features) else weights("tools")


def score(signals: dict[str, float], fitted: Weights | None = None, mode: Mode = "tools") -> float:
    """The fitted probability that an answer with these signals is correct (by `fitted`, or
    the shipped weights `weights_for` picks)."""
    fitted = fitted or weights_for(signals, mode)
    z = fitted.bias + sum(
        w * signals[f] for f, w in zip(fitted.features, fitted.weights, strict=True)
    )
    return 1.0 / (1.0 + math.exp(-z))
