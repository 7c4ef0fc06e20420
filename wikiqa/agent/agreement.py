"""Agreement signals: does a short answer hold when asked again, and does another reader find it?

A small model's own belief in its answer ranks right from wrong answers only a little better
than chance; what it does not say of itself, other evidence can. Two kinds are measured here,
both recorded beside the evidence signals (`wikiqa.models.evidence`) for the confidence model to
weigh, and neither changes the answer:

    sample_agreement  share of the k short answers (the greedy one submitted, and k - 1 samples
                      of the same prompt at `SAMPLE_TEMPERATURE`, each with its own seed: the
                      `samples` lever) that state the submitted answer (`same`)
    sample_distinct   distinct answers among the k, over k ("unknown" is one answer): 1/k when
                      every sample agrees, 1 when no two do
    sample_unknown    share of the k that said unknown

    extractive_agrees the deterministic extractive answerer (`reader=typed`), run over the same
                      articles the model read (no model call), states the answer: its typed span
                      and the answer state one another, or its best sentence states the answer
                      where the question asks for no type
    extractive_score  that best sentence's score (its share of the question's words, 0..1)

Samples agree when they say the same thing in other words ("Handel", "George Frideric Handel"):
`same` compares content-word stems, and one answer's stems within the other's is agreement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from wikiqa.agent.state import RunState
from wikiqa.models.extractive import ExtractiveModel
from wikiqa.sources import Article
from wikiqa.text import content_words, stem, words

# Hot enough for a 1.5B model to say something else where it is unsure, cool enough that a
# sample is still an answer, not noise (at 0.8, the server's default, it often rambles).
SAMPLE_TEMPERATURE = 0.7
SAMPLE_SIGNALS = ("sample_agreement", "sample_distinct", "sample_unknown")
EXTRACTIVE_SIGNALS = ("extractive_agrees", "extractive_score")

# the extractive answerer as the offline agent reads, typed (a span, not a sentence, where the
# question asks for a person, place, date or number); its threshold plays no part here
_READER = ExtractiveModel(reader="typed", threshold=0.0)


def _stems(text: str) -> frozenset[str]:
    found = content_words(text) or words(text)  # "The Who" is all stopwords
    return frozenset(stem(w) for w in found)


def same(a: str, b: str) -> bool:
    """Whether two short answers state the same thing: the content-word stems of one are all
    among the other's ("Handel" and "George Frideric Handel"; "1741" and "April 1741")."""
    x, y = _stems(a), _stems(b)
    return bool(x and y) and (x <= y or y <= x)


def sample_signals(chosen: str, answers: Sequence[str | None]) -> dict[str, float]:
    """The sample signals for the submitted answer `chosen`, from all k short answers read for
    it (the greedy one included; None for an "unknown"). Nothing for fewer than two."""
    k = len(answers)
    if k < 2:
        return {}
    stated = [a for a in answers if a is not None]
    groups: list[str] = []
    for answer in stated:
        if not any(same(answer, g) for g in groups):
            groups.append(answer)
    unknown = k - len(stated)
    return {
        "sample_agreement": round(sum(same(a, chosen) for a in stated) / k, 4),
        "sample_distinct": round((len(groups) + (1 if unknown else 0)) / k, 4),
        "sample_unknown": round(unknown / k, 4),
    }


def extractive_signals(question: str, answer: str, articles: Iterable[Article]) -> dict[str, float]:
    """Whether the extractive answerer, reading the same `articles`, finds `answer` (see the
    module docstring); 0 for both when it finds no sentence at all."""
    best = _READER.best(question, list(articles))
    if best is None:
        return dict.fromkeys(EXTRACTIVE_SIGNALS, 0.0)
    said = _stems(answer)
    if best.answer != best.sentence:  # a typed span
        agrees = same(answer, best.answer)
    else:
        agrees = bool(said) and said <= _stems(best.sentence)
    return {"extractive_agrees": float(agrees), "extractive_score": best.score}


def agreement(
    state: RunState, answer: str, samples: int, again: Callable[[int], str | None]
) -> None:
    """The agreement signals of an attributed `answer`, kept in `state.agreement`: the
    extractive answerer's reading of the articles fetched, and with `samples` > 1, the short
    answers `again(1)` ... `again(samples - 1)` (sample i of the call that gave the answer, read
    as that call's answer is) beside the greedy one."""
    found = extractive_signals(state.question, answer, state.fetched.articles.values())
    if samples > 1:
        said: list[str | None] = [answer, *(again(i) for i in range(1, samples))]
        found |= sample_signals(answer, said)
        state.event(
            "decision",
            f"{found['sample_agreement']:.2f} of {samples} short answers agree",
            samples=said,
        )
    state.agreement = found
