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

import re
from collections.abc import Sequence
from typing import Any

from wikiqa.agent.result import AgentResult, Refusal
from wikiqa.evals.graders._calibration import soft_refusal
from wikiqa.evals.graders.aliases import asked_kind, stated, values
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.graders.verdict import Grade, maker
from wikiqa.evals.tasks import asserts
from wikiqa.evals.tasks.task import Task
from wikiqa.text import content_words, sentences, stem, words

UNDECIDED = "no alias stated and no contradiction found"
_correct = maker("correctness", "offline")
_complete = maker("completeness", "offline")


def correctness(task: Task, result: AgentResult, judge: Judge | None = None) -> list[Grade]:
    """Correctness and completeness, for whichever of the two the task declares: one grader,
    because the judge decides both in one call."""
    wanted = [d for d in ("correctness", "completeness") if d in task.dimensions]
    if not wanted:
        return []
    output = result.output
    if isinstance(output, Refusal):
        refused = maker("completeness", "code")(
            "fail", 0.0, reason="refused an answerable question"
        )
        grades = {"correctness": maker("correctness", "code")("n/a"), "completeness": refused}
        return [grades[d] for d in wanted]
    text = output.text
    grades = {"correctness": correctness_of(task, text), "completeness": _completeness(task, text)}
    undecided = [d for d in wanted if grades[d].verdict == "needs_judge"]
    if undecided and judge is not None and task.reference_answer:
        grades |= _judged(judge, task, text, undecided)
    return [grades[d] for d in wanted]


def correctness_of(task: Task, text: str) -> Grade:
    """The offline tier's correctness verdict on one answer text (no judge): also what a
    reader of a recorded run grades its answers with, without the run's judge."""
    negative = [s for s in task.asserts if asserts.is_negative(s)]
    contradicting = [s for s in negative if not asserts.check(s, text)[0]]
    if contradicting:
        claims = [_claim(s, text) for s in contradicting]
        return _correct("fail", outcome="incorrect", contradicting=claims)
    found = stated(text, task.answers)
    if found:
        doubt = _doubt(task, text)
        if doubt:
            return _correct("needs_judge", stated=found, reason=doubt)
        return _correct("pass", outcome="correct", stated=found)
    if soft_refusal(text):
        return _correct("n/a", outcome="not_attempted", reason="the answer reads as a refusal")
    other = _other_value(task.answers, text) or _other_entity(task, text) or _off_topic(task, text)
    if other:
        return _correct("fail", outcome="incorrect", other_value=other)
    return _correct(
        "needs_judge", reason=UNDECIDED if task.answers else "the task has no answers aliases"
    )


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
    if entity and _hedged(task, text):
        return "states an alias as one of several names: a hedge may be wrong"
    return None


_LIST_SEPARATOR = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


def _hedged(task: Task, text: str) -> bool:
    """The answer lists names and the gold one is only one of them ("Alexander Fleming, Hans
    Christian Ørsted, and Otto Hahn discovered penicillin"): SimpleQA counts a hedge among
    candidates as incorrect, but a list can also be the answer ("Watson and Crick"), so it is
    left to the judge. Only the first sentence's list is read: that is where a model answers."""
    first = (sentences(text) or [text])[0]
    items = [item.strip(" .;:") for item in _LIST_SEPARATOR.split(first)]
    named = [
        item for item in items
        if item and len(item.split()) <= 4 and all(w[:1].isupper() for w in item.split())
    ]  # fmt: skip
    asked = task.question.casefold()
    others = [n for n in named if not stated(n, task.answers) and n.casefold() not in asked]
    return any(stated(n, task.answers) for n in named) and bool(others)


_NEGATION = frozenset(
    "not never no nobody none neither nor didn't doesn't isn't wasn't weren't aren't cannot "
    "can't".split()
)


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
        return _complete("needs_judge", stated=found, reason=doubt)
    if task.category == "adversarial" and not _NEGATION & set(words(text)):
        # the key points may all be there inside an answer that accepts the premise
        return _complete("needs_judge", reason="denies nothing of the false premise")
    if len(points) == 1 and found:  # one key point, stated in one of its gold forms
        return _complete("pass", 1.0, stated=found, asserts=points)
    if points:
        covered = [s for s in points if asserts.check(s, text)[0]]
        if len(covered) == len(points) and task.answers and not found:
            # the key points' words are there, but no gold form is ("Edward Hopper")
            reason = "every key point's words, but no gold form of the answer"
            return _complete("needs_judge", reason=reason)
        return _complete(
            "pass" if len(covered) == len(points) else "fail",
            round(len(covered) / len(points), 3),
            missing=[s for s in points if s not in covered],
            asserts=points,
        )
    if found:
        return _complete("pass", 1.0, stated=found)
    off = _off_topic(task, text)
    if off:  # about something else: it covers nothing of the reference
        reason = "no alias stated, and the answer is about something else"
        return _complete("fail", 0.0, reason=reason, **off)
    return _complete("needs_judge", reason="no key-point asserts, and no alias stated")


# SimpleQA's grades as correctness verdicts: an answer that attempts nothing is not correct
# (a refusal is `n/a`; a submitted non-answer is a failed answer, as the human labels call it).
SIMPLEQA_VERDICTS = {"correct": "pass", "incorrect": "fail", "not_attempted": "fail"}


def _judged(judge: Judge, task: Task, text: str, undecided: Sequence[str]) -> dict[str, Grade]:
    """Judge C (SimpleQA) for correctness where the task has gold aliases; judge B for the rest."""
    grades: dict[str, Grade] = {}
    rest = list(undecided)
    if "correctness" in rest and task.answers:
        rest.remove("correctness")
        grades["correctness"] = _simpleqa(judge, task, text)
    if rest:
        grades |= _referenced(judge, task, text, rest)
    return grades


def _simpleqa(judge: Judge, task: Task, text: str) -> Grade:
    assert task.reference_answer is not None
    outcome = judge.simpleqa(task.question, task.reference_answer, task.answers, text)
    make = maker("correctness", "judge")
    if outcome.verdict is None:
        return make("needs_judge", judge=outcome.transcript)
    grade = outcome.verdict.grade
    return make(SIMPLEQA_VERDICTS[grade], simpleqa=grade, judge=outcome.transcript)


def _referenced(judge: Judge, task: Task, text: str, undecided: Sequence[str]) -> dict[str, Grade]:
    assert task.reference_answer is not None
    outcome = judge.reference(task.question, task.reference_answer, text)
    v, transcript = outcome.verdict, outcome.transcript
    if v is None:
        return {d: maker(d, "judge")("needs_judge", judge=transcript) for d in undecided}
    contradicting = [v.contradicting_claim] if v.contradicting_claim else []
    judged = {
        "correctness": maker("correctness", "judge")(
            v.correctness, contradicting=contradicting, judge=transcript
        ),
        "completeness": maker("completeness", "judge")(
            v.completeness, v.key_points_covered, missing=v.missing_points, judge=transcript
        ),
    }
    return {d: judged[d] for d in undecided}


def _claim(spec: str, answer: str) -> dict[str, str]:
    _, value = asserts.parse(spec)
    needle = value.casefold()
    claim = next((s for s in sentences(answer) if needle and needle in s.casefold()), answer)
    return {"assert": spec, "claim": claim}
