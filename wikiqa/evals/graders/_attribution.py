"""Attribution: do the answer's citations point at the articles that carry the answer?

Decided by code. A citation counts when it names an expected source (titles matched case- and
underscore-insensitively, allowing a disambiguator the task did not spell out), or when it is an
article fetched in the run whose quote states one of the task's `answers` aliases: citing
"Gustave Eiffel" for the Statue of Liberty's framework is as good as citing the listed article.
Factual tasks need one such citation (any-of); multi-hop tasks need every hop (all-of), where one
quote that states the whole answer (alias and key points) and names a hop's article covers that
hop too. Whether the answer is right is correctness's question, not attribution's. An answer
that reads as a refusal, like a refusal, cites nothing to grade (n/a).
"""

from __future__ import annotations

from typing import Any

from wikiqa.agent.result import AgentResult, Citation, Refusal
from wikiqa.evals.graders._calibration import soft_refusal
from wikiqa.evals.graders.aliases import stated, tokens
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.graders.verdict import Grade, maker
from wikiqa.evals.tasks import asserts
from wikiqa.evals.tasks.task import Task
from wikiqa.sources import base_title, normalize_title


def _title_match(expected: str, cited: str) -> str | None:
    """'exact' if the folded titles agree; 'base' if `expected` has no disambiguator and the
    cited title only adds one ('Mercury' vs 'Mercury (planet)'); otherwise None."""
    e, c = normalize_title(expected), normalize_title(cited)
    if e == c:
        return "exact"
    if normalize_title(base_title(expected)) == e and normalize_title(base_title(cited)) == e:
        return "base"
    return None


def _names(quote: str, title: str) -> bool:
    """Whether a quote names an article (its title without disambiguator, as words)."""
    want, have = tokens(base_title(title)), tokens(quote)
    return bool(want) and any(have[i : i + len(want)] == want for i in range(len(have)))


def attribution(task: Task, result: AgentResult, judge: Judge | None = None) -> list[Grade]:
    """The attribution grade, when the task declares the dimension (code: no judge)."""
    return [_attribution(task, result)] if "attribution" in task.dimensions else []


def _attribution(task: Task, result: AgentResult) -> Grade:
    output = result.output
    if isinstance(output, Refusal) or soft_refusal(output.text):
        return maker("attribution", "code")("n/a")
    cited = list(dict.fromkeys(c.title for c in output.citations))
    fetched = {normalize_title(r.title) for r in result.retrieved}
    usable = [c for c in output.citations if normalize_title(c.title) in fetched]
    carrying = [c for c in usable if stated(c.quote, task.answers)]
    points = [s for s in task.asserts if not asserts.is_negative(s)]
    whole = [c for c in carrying if all(asserts.check(s, c.quote)[0] for s in points)]
    pairs = _pairs(task, cited, whole)
    found = sum(p["cited"] is not None for p in pairs)
    rule = "all-of" if task.category == "multi_hop" else "any-of"
    ok = found == len(pairs) if rule == "all-of" else (found > 0 or bool(carrying))
    return maker("attribution", "code")(
        "pass" if ok else "fail",
        round(found / len(pairs), 3) if pairs else None,
        rule=rule,
        pairs=pairs,
        cited=cited,
        carrying_answer=list(dict.fromkeys(c.title for c in carrying)),
        unfetched=[c for c in cited if normalize_title(c) not in fetched],
    )


def _pairs(task: Task, cited: list[str], whole: list[Citation]) -> list[dict[str, Any]]:
    """Each expected article with the citation that covers it, and how."""
    pairs = []
    for expected in task.expected_sources:
        match = next(((c, kind) for c in cited if (kind := _title_match(expected, c))), None)
        if match is None:
            via = next((c for c in whole if _names(c.quote, expected)), None)
            match = (via.title, "quote") if via is not None else None
        pairs.append(
            {
                "expected": expected,
                "cited": match[0] if match else None,
                "match": match[1] if match else None,
            }
        )
    return pairs
