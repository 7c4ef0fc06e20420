"""The `cite_sentences` lever: fetched articles are shown with numbered sentences and cited by
number, and the loop puts each cited sentence in the quote itself.

Why: a small model often fails to copy a passage verbatim: its quotes are mostly right for a
sentence and then garbled, and a quote that is not verbatim loses an answer whose gold was in
reach. Asked for a number instead, the model has nothing to garble, and decodes a few tokens
where it decoded a passage.

Nothing downstream changes: once `resolve` has put the sentences in, a submission is an ordinary
one with verbatim quotes, checked, guarded and graded as any other. A citation that gives a quote
is left as it is (the offline answerers quote), and one that names an article not fetched or a
sentence it does not have is rejected with the repair turn, naming what exists. Such a citation
stays in the submission as a placeholder (`UNRESOLVED`) rather than being dropped: the trace
keeps the submission as the loop judged it, so a replay or a label never sees a submission
with only its good citations, which the loop never accepted.
"""

from __future__ import annotations

from typing import Any

from wikiqa.agent.grounding import Fetched
from wikiqa.agent.render import numbered

UNRESOLVED = "(no such sentence: the loop rejected this citation)"  # verbatim in no article


def resolve(arguments: dict[str, Any], fetched: Fetched) -> tuple[dict[str, Any], list[str]]:
    """A submission's arguments with each `{title, sentence}` citation turned into `{title,
    quote}` (the sentence itself, under the article's own title), and what could not be (each
    of those kept as an `UNRESOLVED` placeholder quote under the title the model gave)."""
    citations = arguments.get("citations")
    if not isinstance(citations, list):
        return arguments, []
    quoted: list[Any] = []
    problems: list[str] = []
    for i, citation in enumerate(citations, start=1):
        if not isinstance(citation, dict) or "quote" in citation or "sentence" not in citation:
            quoted.append(citation)
            continue
        title, number = citation.get("title"), citation["sentence"]
        article = fetched.get(title) if isinstance(title, str) else None
        placeholder = {
            "title": title if isinstance(title, str) and title else "?",
            "quote": UNRESOLVED,
        }
        if article is None:
            problems.append(
                f"citation {i}: {title!r} was not fetched in this run "
                f"(fetched: {', '.join(fetched.titles()) or 'nothing'})"
            )
            quoted.append(placeholder)
            continue
        found = numbered(article)
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(found):
            problems.append(
                f"citation {i}: {article.title!r} has sentences [1] to [{len(found)}]; "
                f"there is no [{number}]"
            )
            quoted.append(placeholder)
            continue
        quoted.append({"title": article.title, "quote": found[number - 1]})
    return arguments | {"citations": quoted}, problems
