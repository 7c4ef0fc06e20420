"""Attribution: did the answer cite the articles the task expects (any of them; all for multi-hop)?

Decided by code: cited titles are matched against `expected_sources`, case- and
underscore-insensitively, allowing a disambiguator the task did not spell out.
"""

from __future__ import annotations

from wikiqa.agent import AgentResult, Refusal
from wikiqa.evals.graders.verdict import Grade
from wikiqa.evals.tasks import Task
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


def attribution(task: Task, result: AgentResult) -> Grade:
    output = result.output
    if isinstance(output, Refusal):
        return Grade(dimension="attribution", verdict="n/a", tier="code")
    cited = list(dict.fromkeys(c.title for c in output.citations))
    pairs = []
    for expected in task.expected_sources:
        match = next(((c, kind) for c in cited if (kind := _title_match(expected, c))), None)
        pairs.append(
            {
                "expected": expected,
                "cited": match[0] if match else None,
                "match": match[1] if match else None,
            }
        )
    found = sum(p["cited"] is not None for p in pairs)
    rule = "all-of" if task.category == "multi_hop" else "any-of"
    ok = found == len(pairs) if rule == "all-of" else found > 0
    return Grade(
        dimension="attribution",
        verdict="pass" if ok else "fail",
        tier="code",
        fraction=round(found / len(pairs), 3),
        detail={"rule": rule, "pairs": pairs, "cited": cited},
    )
