"""Correctness and completeness: the answer against the task's reference, in one judge call.

Both pass only on positive evidence; what the offline tier cannot decide goes to judge B, or is
reported `needs_judge`, never a default pass.
- correctness, as SimpleQA's outcomes:
  - *incorrect* when a negative assert matches (a contradiction); when the asked value is a date,
    year or number and the answer states another of that kind; when a short answer (the value
    itself) is none of the gold forms; or when an answer with no gold form is about something
    else (it repeats at most half of what the question asks about);
  - *correct* when it states one of the task's `answers` aliases (`wikiqa.evals.graders.aliases`), unless
    there is a doubt (`_doubt`: an alias in passing, a false premise not denied, a missing key
    point), which leaves it undecided;
  - *not attempted* (n/a) for a refusal, or an answer that reads as one; undecided otherwise.
- completeness: the positive asserts are the key points and all must be covered (a single one is
  also covered by an alias); without asserts, an alias stated passes, an answer about something
  else fails, and the rest is undecided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wikiqa.agent import AgentResult, Refusal
from wikiqa.evals.graders._calibration import soft_refusal
from wikiqa.evals.graders.aliases import asked_kind, stated, values
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.graders.verdict import Grade
from wikiqa.evals.tasks import asserts
from wikiqa.evals.tasks.task import Task
from wikiqa.text import content_words, sentences, stem, words

UNDECIDED = "no alias stated and no contradiction found"


def reference(task: Task, result: AgentResult, judge: Judge | None = None) -> list[Grade]:
    """Correctness and completeness, for whichever of the two the task declares."""
    wanted = [d for d in ("correctness", "completeness") if d in task.dimensions]
    if not wanted:
        return []
    output = result.output
    if isinstance(output, Refusal):
        grades = {
            "correctness": Grade(dimension="correctness", verdict="n/a", tier="code"),
            "completeness": Grade(
                dimension="completeness", verdict="fail", tier="code", fraction=0.0,
                detail={"reason": "refused an answerable question"},
            ),
        }  # fmt: skip
        return [grades[d] for d in wanted]
    text = output.text
    grades = {"correctness": correctness(task, text), "completeness": _completeness(task, text)}
    undecided = [d for d in wanted if grades[d].verdict == "needs_judge"]
    if undecided and judge is not None and task.reference_answer:
        grades |= _judged(judge, task, text, undecided)
    return [grades[d] for d in wanted]


def correctness(task: Task, text: str) -> Grade:
    """The offline tier's correctness verdict on one answer text (no judge): also what the
    `reading` benchmark grades candidate sentences with."""
    negative = [s for s in task.asserts if asserts.is_negative(s)]
    contradicting = [s for s in negative if not asserts.check(s, text)[0]]
    if contradicting:
        return Grade(
            dimension="correctness", verdict="fail", tier="offline",
            detail={"outcome": "incorrect", "contradicting": [_claim(s, text) for s in contradicting]},
        )  # fmt: skip
    found = stated(text, task.answers)
    if found:
        doubt = _doubt(task, text)
        if doubt:
            return Grade(
                dimension="correctness", verdict="needs_judge", tier="offline",
                detail={"stated": found, "reason": doubt},
            )  # fmt: skip
        return Grade(
            dimension="correctness", verdict="pass", tier="offline",
            detail={"outcome": "correct", "stated": found},
        )  # fmt: skip
    if soft_refusal(text):
        return Grade(
            dimension="correctness", verdict="n/a", tier="offline",
            detail={"outcome": "not_attempted", "reason": "the answer reads as a refusal"},
        )  # fmt: skip
    other = _other_value(task.answers, text) or _other_entity(task, text) or _off_topic(task, text)
    if other:
        return Grade(
            dimension="correctness", verdict="fail", tier="offline",
            detail={"outcome": "incorrect", "other_value": other},
        )  # fmt: skip
    return Grade(
        dimension="correctness", verdict="needs_judge", tier="offline",
        detail={"reason": UNDECIDED if task.answers else "the task has no answers aliases"},
    )  # fmt: skip


def _other_value(answers: list[str], text: str) -> dict[str, Any] | None:
    """The values of the asked kind the answer states instead, when it states some."""
    kind = asked_kind(answers)
    if kind is None:
        return None
    found = values(text)
    instead = found[kind] | ({d[:4] for d in found["date"]} if kind == "year" else set())
    instead -= {v for a in answers for v in values(a)[kind]}
    return {"kind": kind, "stated": sorted(instead), "answers": answers} if instead else None


SHORT = 6  # words: an answer this short is the value itself, not a sentence about it
TOPICAL = 0.5  # a longer answer must share more than half of what the question asks about


def _about(task: Task, text: str) -> float:
    """The share of the question's content words (the gold aliases' own words aside) that the
    answer repeats, crudely stemmed."""
    alias_words = {stem(w) for a in task.answers for w in content_words(a)}
    asked = {stem(w) for w in content_words(task.question)} - alias_words
    said = {stem(w) for w in content_words(text)}
    return len(asked & said) / len(asked) if asked else 1.0


def _key_points(task: Task) -> list[str]:
    return [s for s in task.asserts if not asserts.is_negative(s)]


def _doubt(task: Task, text: str) -> str | None:
    """Why a stated alias does not yet make the answer correct, if it does not.
    - On a false-premise task, the alias may sit inside an answer that plays along ("the
      Himalayas, the tallest range in Africa"); only an answer that denies something is read
      as a correction.
    - On a task with several key points, the other parts may be wrong ("Uganda; its capital
      is Entebbe"), which no alias shows."""
    if task.category == "adversarial" and not _NEGATION & set(words(text)):
        return "states an alias but denies nothing of the false premise"
    entity = asked_kind(task.answers) is None  # a stated date or number is not in passing
    if entity and len(words(text)) > SHORT and _about(task, text) <= TOPICAL:
        # a copied sentence can carry the alias in passing ("the World Bank Group", "the
        # Mekong ... a trade route to Tibet") without being about what was asked
        return "states an alias in passing: the answer is about something else"
    points = _key_points(task)
    if len(points) > 1 and not all(asserts.check(s, text)[0] for s in points):
        return "states an alias, but not every key point: the other parts may be wrong"
    return None


_NEGATION = frozenset({"not", "never", "no", "nobody", "none", "neither", "nor", "didn't",
                       "doesn't", "isn't", "wasn't", "weren't", "aren't", "cannot", "can't"})  # fmt: skip


def _other_entity(task: Task, text: str) -> dict[str, Any] | None:
    """A short answer (the value itself) that states no gold form names another value:
    incorrect. On a false-premise task a short answer that denies ("He never did.") may reject
    the premise in words no alias foresaw, so only one without a negation is decided."""
    if not task.answers or len(words(text)) > SHORT or len(sentences(text)) > 1:
        return None
    if task.category == "adversarial" and _NEGATION & set(words(text)):
        return None
    return {"kind": "short answer", "stated": text.strip(), "answers": task.answers}


def _off_topic(task: Task, text: str) -> dict[str, Any] | None:
    """An answer that states no gold form and is about something else (it repeats at most
    half of what the question asks about) answered with something that is not the answer:
    incorrect. On-topic answers without an alias may be paraphrases: those stay undecided."""
    if not task.answers or task.category == "adversarial" or _NEGATION & set(words(text)):
        return None
    share = _about(task, text)
    return (
        {"kind": "off-topic answer", "about_question": round(share, 3)}
        if share <= TOPICAL
        else None
    )


def _completeness(task: Task, text: str) -> Grade:
    points = _key_points(task)
    found = stated(text, task.answers)
    if found and not points and (doubt := _doubt(task, text)):
        return Grade(
            dimension="completeness", verdict="needs_judge", tier="offline",
            detail={"stated": found, "reason": doubt},
        )  # fmt: skip
    if task.category == "adversarial" and not _NEGATION & set(words(text)):
        # the key points may all be there inside an answer that accepts the premise
        return Grade(
            dimension="completeness", verdict="needs_judge", tier="offline",
            detail={"reason": "denies nothing of the false premise"},
        )  # fmt: skip
    if len(points) == 1 and found:  # one key point, stated in one of its gold forms
        return Grade(
            dimension="completeness", verdict="pass", tier="offline", fraction=1.0,
            detail={"stated": found, "asserts": points},
        )  # fmt: skip
    if points:
        covered = [s for s in points if asserts.check(s, text)[0]]
        if len(covered) == len(points) and task.answers and not found:
            # the key points' words are there, but no gold form is ("Edward Hopper")
            return Grade(
                dimension="completeness", verdict="needs_judge", tier="offline",
                detail={"reason": "every key point's words, but no gold form of the answer"},
            )  # fmt: skip
        return Grade(
            dimension="completeness",
            verdict="pass" if len(covered) == len(points) else "fail",
            tier="offline",
            fraction=round(len(covered) / len(points), 3),
            detail={"missing": [s for s in points if s not in covered], "asserts": points},
        )
    if found:
        return Grade(
            dimension="completeness", verdict="pass", tier="offline", fraction=1.0,
            detail={"stated": found},
        )  # fmt: skip
    off = _off_topic(task, text)
    if off:  # about something else: it covers nothing of the reference
        return Grade(
            dimension="completeness", verdict="fail", tier="offline", fraction=0.0,
            detail={"reason": "no alias stated, and the answer is about something else"} | off,
        )  # fmt: skip
    return Grade(
        dimension="completeness", verdict="needs_judge", tier="offline",
        detail={"reason": "no key-point asserts, and no alias stated"},
    )  # fmt: skip


def _judged(judge: Judge, task: Task, text: str, undecided: Sequence[str]) -> dict[str, Grade]:
    assert task.reference_answer is not None
    outcome = judge.reference(task.question, task.reference_answer, text)
    v = outcome.verdict
    if v is None:
        return {
            d: Grade(dimension=d, verdict="needs_judge", tier="judge",
                     detail={"judge": outcome.transcript})
            for d in undecided
        }  # fmt: skip
    judged = {
        "correctness": Grade(
            dimension="correctness", verdict=v.correctness, tier="judge",
            detail={"contradicting": [v.contradicting_claim] if v.contradicting_claim else [],
                    "judge": outcome.transcript},
        ),
        "completeness": Grade(
            dimension="completeness", verdict=v.completeness, tier="judge",
            fraction=v.key_points_covered,
            detail={"missing": v.missing_points, "judge": outcome.transcript},
        ),
    }  # fmt: skip
    return {d: judged[d] for d in undecided}


def _claim(spec: str, answer: str) -> dict[str, str]:
    _, value = asserts.parse(spec)
    needle = value.casefold()
    claim = next((s for s in sentences(answer) if needle and needle in s.casefold()), answer)
    return {"assert": spec, "claim": claim}
