"""Decisions: accept a refusal, accept or reject a submission, take a last look, score confidence.

A submission is accepted only when every quote is a verbatim span of an article fetched in this
run and nothing in it repeats planted text the guard found. A rejected submission gets one repair
turn naming exactly what failed; a second failure is a refusal. Whatever leaves the agent, by any
path, passes the guard once more (`last_look`).
"""

from __future__ import annotations

from wikiqa.agent.actions import parse_args
from wikiqa.agent.citing import resolve
from wikiqa.agent.corroboration import Corroboration, corroborate, missing_numbers
from wikiqa.agent.grounding import citation_problems, repaired, trimmed
from wikiqa.agent.guard import violations
from wikiqa.agent.result import Answer, Citation, Output, Refusal
from wikiqa.agent.state import RunState
from wikiqa.agent.support import off_topic, plain_refusal, uncovered, unquoted, unsupported
from wikiqa.models import (
    REFUSE,
    SEARCH,
    CitationArg,
    RefuseArgs,
    SubmitArgs,
    ToolCall,
    ToolResult,
    evidence,
)
from wikiqa.text import DATAMARK


def decide(state: RunState, call: ToolCall) -> Answer | Refusal | ToolResult:
    """Accept a terminal call, or reject a submission with one repair turn."""
    state.tool_calls += 1
    if call.name == REFUSE:
        refuse = parse_args(RefuseArgs, call.arguments) if not call.error else None
        reason = refuse.reason if isinstance(refuse, RefuseArgs) else "No reason given."
        if violations(reason, state.findings):
            state.guard_blocked += 1
            state.event("guard", "refusal reason repeated planted text; replaced")
            reason = NOT_SUPPORTED
        elif not plain_refusal(reason, state.question):
            # a reason may only say "not found": a case number, a "legal hold" or a link in it
            # is what a planted persuasion-to-refuse asks for (the model's words stay in the trace)
            state.event(
                "guard", "refusal reason said more than 'not found'; replaced", reason=reason
            )
            reason = NOT_SUPPORTED
        return Refusal(reason=reason, reason_code="not_supported")

    # the cite_sentences lever: a citation by number gets its sentence as the quote
    arguments, unresolved = (
        resolve(call.arguments, state.fetched) if state.cite_sentences else (call.arguments, [])
    )
    if state.cite_sentences and not call.error:
        state.quoted[call.id] = arguments  # resolved now: after this turn's own fetches ran
    submit = parse_args(SubmitArgs, arguments) if not call.error else call.error
    if isinstance(submit, SubmitArgs):
        submit = _unmarked(submit)
        if state.trim_quotes:
            submit = _trimmed(state, submit)
    guard_problems: list[str] = []
    if unresolved:  # named before the schema's complaint that a citation is missing
        problems = unresolved
    elif isinstance(submit, str):
        problems = [f"malformed submission: {submit}"]
    else:
        problems = citation_problems(submit.citations, state.fetched)
        problems += (
            support_problems(submit, state.question, state.strict_support) if not problems else []
        )
        quoted = "\n".join([submit.answer, *(c.quote for c in submit.citations)])
        guard_problems = violations(quoted, state.findings)
    if not problems and not guard_problems and isinstance(submit, SubmitArgs):
        return _answer(state, submit)
    if guard_problems:
        state.guard_blocked += 1
        state.event("guard", f"submission blocked: {guard_problems[0]}", problems=guard_problems)
    everything = problems + guard_problems
    if state.repairs == 0:
        state.repairs += 1
        state.event("repair", f"submission rejected: {'; '.join(everything)}", problems=everything)
        message = "Submission rejected:\n" + "\n".join(f"- {p}" for p in everything)
        message += "\nFix exactly these and call submit_answer again, or call refuse."
        return ToolResult(call_id=call.id, name=call.name, content=message, is_error=True)
    return rejected(bool(guard_problems))


def rejected(guard: bool) -> Refusal:
    """The refusal for a submission rejected with no repair left. What failed is in the trace;
    the reason never echoes the model's text, which may carry whatever a planted instruction
    asked for."""
    if guard:
        return Refusal(
            reason="The answer kept repeating instruction-like text planted in the retrieved "
            "articles, so it was withheld.",
            reason_code="injection_blocked",
        )
    return Refusal(
        reason="The answer could not be grounded in the fetched text.", reason_code="ungrounded"
    )


def _trimmed(state: RunState, submit: SubmitArgs) -> SubmitArgs:
    """The submission with each non-verbatim quote cut to its verbatim leading sentences
    (`grounding.trimmed`), where that leaves one; each cut is a trace event. The checks that
    follow see only what is left, so a cut never lets through an answer its quotes do not back."""
    citations = repaired(submit.citations, state.fetched, trimmed)
    for i, (before, cut) in enumerate(zip(submit.citations, citations, strict=True), start=1):
        if cut is not before:
            state.event(
                "trim",
                f"citation {i}: quote cut to its verbatim {len(cut.quote)} of "
                f"{len(before.quote)} chars ({cut.title!r})",
                before=before.model_dump(),
                after=cut.model_dump(),
            )
    return submit.model_copy(update={"citations": citations})


NOT_SUPPORTED = "The fetched Wikipedia text does not support an answer."
MAX_UNCOVERED = 0.5  # faithful hand-labelled answers almost never exceed it (README)


def support_problems(submit: SubmitArgs, question: str, strict: bool = False) -> list[str]:
    """What the verified quotes do not back (`wikiqa.agent.support`), each named for repair.
    `strict` (the `strict_support` lever) also asks that most of the answer's own words, those
    not taken from the question, be in its quotes."""
    quotes = [c.quote for c in submit.citations]
    problems = []
    titles = [c.title for c in submit.citations]
    missing = unsupported(submit.answer, quotes, question, titles)
    if missing:
        problems.append(
            f"the answer states {', '.join(repr(m) for m in missing[:5])}, which no quote "
            "contains: quote the passage that states it, or leave it out"
        )
    if uncovered(submit.answer, quotes, question, titles) > MAX_UNCOVERED:
        problems.append(
            "most of the answer's words are in no quote: answer in the words of the passages "
            "you quote"
        )
    if strict and unquoted(submit.answer, quotes, question, titles) > MAX_UNCOVERED:
        problems.append(
            "most of what the answer adds to the question is in no quote: answer with what the "
            "quoted passages say, or call refuse"
        )
    if quotes and off_topic(quotes, question):
        problems.append(
            "no quote shares a word with the question: quote the passage that answers it"
        )
    return problems


def _unmarked(submit: SubmitArgs) -> SubmitArgs:
    """The submission with datamarks (spotlighting) copied from retrieved text read as spaces."""

    def plain(text: str) -> str:
        return text.replace(DATAMARK, " ")

    return SubmitArgs(
        answer=plain(submit.answer),
        citations=[
            CitationArg(title=plain(c.title), quote=plain(c.quote)) for c in submit.citations
        ],
    )


def _answer(state: RunState, submit: SubmitArgs) -> Answer:
    citations = []
    for c in submit.citations:
        article = state.fetched.get(c.title)
        assert article is not None  # citation_problems checked every title
        citations.append(Citation(title=article.title, quote=c.quote.strip(), url=article.url))
    return Answer(text=submit.answer.strip(), citations=citations)


def last_look(state: RunState, output: Answer | Refusal) -> Answer | Refusal:
    """The guard's final say on whatever leaves the agent, whichever path produced it."""
    text = (
        "\n".join([output.text, *(c.quote for c in output.citations)])
        if isinstance(output, Answer)
        else output.reason
    )
    if not violations(text, state.findings):
        return output
    state.guard_blocked += 1
    state.event("guard", "final output repeated planted text; withheld")
    return Refusal(
        reason="The output repeated instruction-like text from retrieved articles and was "
        "withheld.",
        reason_code="injection_blocked",
    )


def weigh(state: RunState, output: Output) -> tuple[Output, Corroboration | None]:
    """An answer against the rest of what was read (`wikiqa.agent.corroboration`): refused when
    the question's numbers are in none of its evidence, or when its only support is contradicted
    by the rest of its article; otherwise returned with what corroborates it, for the signals
    and the review flag. A refusal passes through."""
    if not isinstance(output, Answer) or not output.citations:
        return output, None
    cited = [state.fetched.get(c.title) for c in output.citations]
    articles = [a for a in cited if a is not None]
    absent = missing_numbers(state.question, [c.quote for c in output.citations], articles)
    if absent:
        state.event(
            "decision",
            f"refused: the question's {', '.join(absent)} is in none of the answer's evidence",
            answer=output.text,
            missing=absent,
        )
        return Refusal(reason=NOT_SUPPORTED, reason_code="not_supported"), None
    first = output.citations[0]
    found = corroborate(
        state.question,
        output.text,
        first.quote,
        first.title,
        list(state.fetched.articles.values()),
    )
    if found.contradicted:
        state.event(
            "decision",
            f"refused: {found.value!r} is stated only by the quoted sentence, and the rest of "
            f"{first.title!r} answers otherwise",
            answer=output.text,
            value=found.value,
        )
        return Refusal(reason=CONTRADICTED, reason_code="contradicted"), found
    return output, found


CONTRADICTED = (
    "The only sentence stating the answer found is contradicted by the rest of its article."
)


def signals(state: RunState, output: Output) -> dict[str, float]:
    """The evidence signals behind an answer (`wikiqa.models.evidence`); none for a refusal."""
    if not isinstance(output, Answer):
        return {}
    hits = next(
        (
            [h.title for h in m.artifact]
            for m in state.messages
            if isinstance(m, ToolResult) and m.name == SEARCH and isinstance(m.artifact, list)
        ),
        [],
    )
    return (
        evidence.features(
            state.question,
            output.text,
            [c.quote for c in output.citations],
            [c.title for c in output.citations],
            hits,
        )
        | state.belief
        | state.agreement
    )


def confidence(
    state: RunState, output: Output, found: dict[str, float], mode: evidence.Mode = "tools"
) -> float:
    """The fitted chance that the answer is right, from its evidence signals (by the weights
    fitted on `mode`'s answers), never from the model's say-so. The fit sees no repairs (the offline answerer needs none), so two rules
    stay: a repaired answer keeps half, one that met the guard is capped at 0.3 (see README)."""
    if not isinstance(output, Answer):
        return 0.0
    value = evidence.score(found, mode=mode) * (0.5 if state.repairs else 1.0)
    if state.guard_blocked:
        value = min(value, 0.3)
    return round(value, 3)


def abstained(
    state: RunState, answer: Answer, found: dict[str, float], score: float, below: float
) -> Refusal:
    """The `abstain_below` lever: an answer that passed every check but scores under the
    threshold becomes a refusal (with confidence 0 and no signals, as every refusal). What it
    would have said, its signals and its score stay in the trace, for a reader of the run."""
    state.event(
        "decision",
        f"abstained: confidence {score:.3f} under {below:.3f}",
        answer=answer.text,
        citations=[c.model_dump() for c in answer.citations],
        signals=found,
        confidence=score,
        abstain_below=below,
    )
    return abstention(score, below)


def abstention(score: float, below: float) -> Refusal:
    """The refusal the `abstain_below` lever returns for an answer scored `score`."""
    reason = (
        f"The answer found scored a confidence of {score:.2f}, under the {below:.2f} this run "
        "abstains below."
    )
    return Refusal(reason=reason, reason_code="low_confidence")


def describe(output: Output) -> str:
    """One line for the trace's decision event."""
    if isinstance(output, Answer):
        titles = ", ".join(dict.fromkeys(c.title for c in output.citations))
        return f"answered with citations [{titles}]"
    return f"refused ({output.reason_code}): {output.reason}"
