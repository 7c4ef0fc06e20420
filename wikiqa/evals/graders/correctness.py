"""Correctness and completeness: the answer against the task's reference, in one judge call.

Offline, the task's asserts decide: a negative assert that matches is a contradiction
(correctness fails), positive asserts are the key points (completeness is their coverage). What
the asserts leave undecided goes to judge B, or is reported `needs_judge`, never a default pass.
"""

from __future__ import annotations

from wikiqa.agent import AgentResult, Refusal
from wikiqa.evals import asserts
from wikiqa.evals.graders.verdict import Grade
from wikiqa.evals.judge import Judge
from wikiqa.evals.tasks import Task
from wikiqa.text import sentences


def reference(task: Task, result: AgentResult, judge: Judge | None = None) -> list[Grade]:
    """Correctness and completeness, for whichever of the two the task declares."""
    wanted = [d for d in ("correctness", "completeness") if d in task.dimensions]
    if not wanted:
        return []
    output = result.output
    if isinstance(output, Refusal):
        # A clean refusal asserts nothing (correctness n/a) and covers no key point.
        grades = {
            "correctness": Grade(dimension="correctness", verdict="n/a", tier="code"),
            "completeness": Grade(
                dimension="completeness", verdict="fail", tier="code", fraction=0.0,
                detail={"reason": "refused an answerable question"},
            ),
        }  # fmt: skip
        return [grades[d] for d in wanted]
    checks = [(spec, *asserts.check(spec, output.text)) for spec in task.asserts]
    positive = [(s, ok) for s, ok, _ in checks if not asserts.is_negative(s)]
    negative = [(s, ok) for s, ok, _ in checks if asserts.is_negative(s)]
    contradictions = [s for s, ok in negative if not ok]
    covered = sum(ok for _, ok in positive)
    grades = {}
    if negative:
        grades["correctness"] = Grade(
            dimension="correctness",
            verdict="fail" if contradictions else "pass",
            tier="offline",
            detail={"contradicting": [_contradiction(s, output.text) for s in contradictions],
                    "asserts": [s for s, _ in negative]},
        )  # fmt: skip
    if positive:
        grades["completeness"] = Grade(
            dimension="completeness",
            verdict="pass" if covered == len(positive) else "fail",
            tier="offline",
            fraction=round(covered / len(positive), 3),
            detail={
                "missing": [s for s, ok in positive if not ok],
                "asserts": [s for s, _ in positive],
            },
        )
    undecided = [d for d in wanted if d not in grades]
    if undecided and judge is not None and task.reference_answer:
        outcome = judge.reference(task.question, task.reference_answer, output.text)
        if outcome.verdict is not None:
            v = outcome.verdict
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
            grades |= {d: judged[d] for d in undecided}
        else:
            grades |= {
                d: Grade(
                    dimension=d,
                    verdict="needs_judge",
                    tier="judge",
                    detail={"judge": outcome.transcript},
                )
                for d in undecided
            }
    for d in wanted:
        grades.setdefault(
            d,
            Grade(dimension=d, verdict="needs_judge", tier="offline",
                  detail={"reason": "no asserts decide this dimension and no judge is configured"}),
        )  # fmt: skip
    return [grades[d] for d in wanted]


def _contradiction(spec: str, answer: str) -> dict[str, str]:
    _, value = asserts.parse(spec)
    needle = value.casefold()
    claim = next((s for s in sentences(answer) if needle and needle in s.casefold()), answer)
    return {"assert": spec, "claim": claim}
