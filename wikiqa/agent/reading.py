"""The reading mode: the model reads and answers; the code attributes.

A model too small to drive tools reads well enough when asked little: given a few leads and
asked for "the short answer, or unknown", it states the right answer far more often than when
it must also write a JSON tool call with a verbatim quote. So in this mode, after the loop's own
search and the fetch of the top `read_first` hits (the same actions as in tool mode, so the
guard and the quarantine see every article the same way), the model gets one short call: the
question and the leads' sentences, numbered (quarantined sentences are not among them), and a
few output tokens for the answer.

Attribution is then deterministic. A sentence is a candidate when it states every content word
of the answer; candidates are ranked by what they share with the question, so a sentence that
states the answer *as the answer to this question* beats one that merely mentions it, and one
that shares nothing with the question is no candidate. The best candidate becomes the quote.
With the `attribute_first` lever the order is reversed: the sentences closest to the question
are chosen first, and the model is shown only those (fewer tokens to read, less to be led astray
by). An answer no sentence supports (often one from memory) gets, with the `reading_repair` lever,
one more call: the question again, with only the k sentences closest to it, and "the short
answer from these sentences, or unknown". The new answer is attributed by the same rule; the
model never names a sentence, so it cannot cite one that does not exist.

With the `answer_parts` lever, a question that asks two things ("Who composed Messiah, and what
kind of composer was he?") gets one short answer per part, each attributed apart; when no
sentence read states the second, one hop searches the first answer and asks the second part
from the article it finds (the second part is usually about the first answer).

The reading call also asks for its tokens' log-probabilities: where the provider gives them
(our llama.cpp handler does), `belief` turns them into two signals kept beside the evidence
ones, for the confidence model to weigh. An attributed answer also gets agreement signals
(`wikiqa.agent.agreement`): whether the extractive answerer, reading the same articles, finds
it (no model call), and with the `samples` lever, how many of k short answers to the same
prompt (the greedy one and k - 1 samples, each with its own seed) state it. The samples are
read only once an answer is attributed, and never change it.

The result is submitted through `decide`, exactly as a tool call's submission: verbatim
grounding, the guard, strict support, trimmed quotes, the budget, `last_look` and abstention all
apply unchanged. Nothing here relaxes the rule that every quote is a verbatim span of an article
fetched in this run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from wikiqa.agent.actions import run_tool
from wikiqa.agent.agreement import agreement
from wikiqa.agent.config import AgentConfig
from wikiqa.agent.decide import decide, rejected
from wikiqa.agent.prompts import READING_SYSTEM
from wikiqa.agent.render import datamark, numbered
from wikiqa.agent.result import Answer, Refusal
from wikiqa.agent.state import RunState
from wikiqa.models import FETCH, SEARCH, SUBMIT, TokenLogprob, ToolCall, ToolResult
from wikiqa.text import content_words, stem

ANSWER_TOKENS = 24  # the short answer; a sentence about it is cut off, not read
REPAIR_CHOICES = 5
UNKNOWN = re.compile(r"^\W*(unknown|i don'?t know|none|not stated|n/?a)\b", re.IGNORECASE)

ANSWER_TOKENS_ALTERNATIVES = 10  # likeliest first tokens asked for: where "unknown" is weighed


class Reply(NamedTuple):
    text: str
    logprobs: list[TokenLogprob] | None  # None where the provider gives none


class Ask(Protocol):
    """One reading call: (system, user text, output-token cap) -> the reply. `sample` 0 is the
    greedy reply; 1, 2, ... are independent samples of the same call, each repeatable."""

    def __call__(self, system: str, text: str, max_tokens: int, sample: int = 0) -> Reply: ...


def belief(reply: Reply) -> dict[str, float]:
    """What the model's own token probabilities say of its short answer, as two signals beside
    the evidence ones (none when the provider gave no log-probabilities):

        answer_logprob   mean log-probability of the tokens of the reply's first line
        p_unknown        probability, at the first token, of starting "unknown"

    They are signals, not verdicts: what they are worth is measured by fitting the confidence
    model with them (`wikiqa confidence fit --features`)."""
    if not reply.logprobs:
        return {}
    line, said = [], ""
    for t in reply.logprobs:
        if "\n" in t.token and said.strip():
            break
        said += t.token
        line.append(t.logprob)
    first = reply.logprobs[0]
    starts = [(first.token, first.logprob), *first.top]
    unknown = {
        tok: lp for tok, lp in starts if tok.strip() and "unknown".startswith(tok.strip().lower())
    }
    return {
        "answer_logprob": round(sum(line) / len(line), 4) if line else 0.0,
        "p_unknown": round(min(1.0, sum(math.exp(lp) for lp in unknown.values())), 4),
    }


@dataclass(frozen=True)
class Sentence:
    title: str
    text: str
    order: int  # position across the leads read, the first lead's first sentence 0


def leads(state: RunState) -> list[Sentence]:
    """The sentences of the articles read, in reading order: what the model is shown, and the
    only text a quote may come from."""
    found: list[Sentence] = []
    for article in state.fetched.articles.values():
        for text in numbered(article):
            found.append(Sentence(article.title, text, len(found)))
    return found


_SECOND_PART = re.compile(
    r",\s*and\s+(?=(?:what|which|who|whom|whose|where|when|how|why)\b)", re.IGNORECASE
)


_ASKS = re.compile(r"\b(?:what|which|who|whom|whose|where|when|how|why)\b", re.IGNORECASE)


def parts(question: str) -> list[str]:
    """A question that asks two things ("Who composed Messiah, and what kind of composer was
    he?") as its two parts, each a question; any other question as itself."""
    found = _SECOND_PART.split(question.strip(), maxsplit=1)
    # each part must ask something: "worked with MDF, card, and which material ...?" is one
    # question ending a list, not two
    if len(found) != 2 or not all(content_words(p) and _ASKS.search(p) for p in found):
        return [question]
    first, second = (p.strip().rstrip("?").strip() for p in found)
    return [f"{first}?", f"{second[0].upper()}{second[1:]}?"]


def prompt(
    question: str, shown: list[Sentence], spotlight: bool = False, asked: list[str] | None = None
) -> str:
    """The reading call's user message: the question, then the sentences under their titles;
    for a question in two parts (`asked`), both parts, one short answer per line."""
    mark = datamark if spotlight else str
    lines = [f"Question: {question}", "", "Wikipedia sentences:"]
    title = None
    for i, s in enumerate(shown, start=1):
        if s.title != title:
            title = s.title
            lines.append(f"[{title}]")
        lines.append(f"{i}. {mark(s.text)}")
    if asked is not None and len(asked) > 1:
        lines += ["", f"Question: {question}"]
        lines += [f"Part {i}: {part}" for i, part in enumerate(asked, start=1)]
        lines.append("Short answers, one line per part (each a few words, or unknown):")
        return "\n".join(lines)
    lines += ["", f"Question: {question}", "Short answer (or unknown):"]
    return "\n".join(lines)


def short_answers(reply: str, count: int) -> list[str | None]:
    """A reply to a question in `count` parts: one short answer (or None) per part, read from
    its first `count` non-empty lines, each without its "1." or "Part 1:" label."""
    lines = [line for line in reply.strip().splitlines() if line.strip()][:count]
    lines = [re.sub(r"^\s*(part\s*)?\d+\s*[.:)]\s*", "", ln, flags=re.IGNORECASE) for ln in lines]
    found = [short_answer(line) for line in lines]
    return found + [None] * (count - len(found))


def short_answer(reply: str) -> str | None:
    """The answer a reply states (its first line, without a label or wrapping), or None when
    it says it does not know."""
    text = reply.strip().splitlines()[0].strip() if reply.strip() else ""
    text = re.sub(r"^(short answer|answer)\s*:\s*", "", text, flags=re.IGNORECASE)
    previous = None
    while previous != text:  # "**Perth**." and "'Perth.'" alike
        previous, text = text, text.strip().strip("\"'*`").rstrip(".").strip()
    if not text or UNKNOWN.match(text):
        return None
    return text


def _stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


def candidates(question: str, answer: str, shown: list[Sentence]) -> list[Sentence]:
    """The sentences that state every content word of `answer` and share at least one with the
    question beyond the answer's own, best first: most question words shared, then reading
    order. A lead is about its title, so a sentence may take the answer's words from its
    article's title ("She developed FLOW-MATIC." in *Grace Hopper*); `quotes` then quotes the
    sentence that names her too."""
    wanted = _stems(answer)
    if not wanted:
        return []
    asked = _stems(question) - wanted
    scored = []
    for s in shown:
        words = _stems(s.text)
        if not wanted <= words | _stems(s.title):
            continue
        shared = len(asked & words)
        if shared:
            scored.append((-shared, s.order, s))
    return [s for _, _, s in sorted(scored, key=lambda x: (x[0], x[1]))]


def quotes(answer: str, best: Sentence, shown: list[Sentence]) -> list[Sentence]:
    """What to quote for `answer` attributed to `best`: the sentence itself, preceded by the
    first sentence of its article that states what `best` takes from the title, if any."""
    missing = _stems(answer) - _stems(best.text)
    if not missing:
        return [best]
    naming = next((s for s in shown if s.title == best.title and missing <= _stems(s.text)), None)
    return [naming, best] if naming is not None and naming != best else [best]


def closest(question: str, shown: list[Sentence], k: int = REPAIR_CHOICES) -> list[Sentence]:
    """The `k` sentences sharing most with the question (reading order breaks ties)."""
    asked = _stems(question)
    ranked = sorted(shown, key=lambda s: (-len(asked & _stems(s.text)), s.order))
    return [s for s in ranked[:k] if asked & _stems(s.text)]


def read(state: RunState, ask: Ask, config: AgentConfig) -> Answer | Refusal:
    """The reading mode's decision, once the leads are fetched (see the module docstring).
    `attribute_first`: the model is shown only the sentences closest to the question, in
    reading order, and the answer is attributed among them (the sentence naming the subject a
    chosen one takes from its title may still be quoted beside it). `answer_parts`: a question
    in two parts is asked both (`parts`), each answer attributed apart. `reading_repair`: one
    more call for an answer no sentence states."""
    read_ = leads(state)
    first = config.attribute_first
    shown = sorted(closest(state.question, read_), key=lambda s: s.order) if first else read_
    if not shown:
        return Refusal(
            reason="No article could be read for this question.", reason_code="no_results"
        )
    asked = parts(state.question) if config.answer_parts else [state.question]
    if len(asked) > 1:
        return _read_parts(state, ask, shown, read_, asked, config.budget, config.samples)
    text = prompt(state.question, shown, state.spotlight)
    reply = ask(READING_SYSTEM, text, ANSWER_TOKENS)
    state.belief = belief(reply)
    answer = short_answer(reply.text)
    if answer is None:
        return Refusal(
            reason="The retrieved articles do not state an answer.", reason_code="not_supported"
        )
    found = candidates(state.question, answer, shown)
    if not found and config.reading_repair:
        answer, found, text = _repaired(state, ask, shown, answer, text)
        if answer is None:
            return Refusal(
                reason="The retrieved articles do not state an answer.",
                reason_code="not_supported",
            )
    if not found:
        state.event("decision", f"no retrieved sentence states {answer!r}", answer=answer)
        # The reason never repeats the model's words: they may be a planted instruction's.
        return Refusal(
            reason="The answer found is stated by no retrieved sentence.",
            reason_code="ungrounded",
        )
    best = found[0]
    state.event("decision", f"attributed to {best.title!r}, sentence {best.order + 1}")
    agreement(
        state,
        answer,
        config.samples,
        lambda i: short_answer(ask(READING_SYSTEM, text, ANSWER_TOKENS, i).text),
    )
    return _submit(state, answer, quotes(answer, best, read_))


def _submit(state: RunState, answer: str, quoted: list[Sentence]) -> Answer | Refusal:
    """The attributed answer, submitted through `decide` as any tool call's submission."""
    citations = [{"title": s.title, "quote": s.text} for s in dict.fromkeys(quoted)]
    call = ToolCall(
        id="reading_submit", name=SUBMIT, arguments={"answer": answer, "citations": citations}
    )
    blocked = state.guard_blocked
    outcome = decide(state, call)
    if isinstance(outcome, ToolResult):  # rejected, with no turn to repair it in: the problems
        # are in the trace (decide's event), never in the reason, which would echo the answer
        return rejected(guard=state.guard_blocked > blocked)
    return outcome


def _read_parts(
    state: RunState,
    ask: Ask,
    shown: list[Sentence],
    read_: list[Sentence],
    asked: list[str],
    budget: int,
    samples: int = 1,
) -> Answer | Refusal:
    """A question in two parts: one call for both short answers, each attributed apart (the
    second part's words include the first answer: "what nationality was *that writer*").

    When no sentence read states the second answer, the second part is often about the first
    answer, whose article was not among the leads ("which country borders Tanzania, and what
    is *its* capital?"): one hop searches the first answer, reads the top article not read yet
    (through the same actions, so the guard sees it), and asks the second part again from it,
    budget allowing. An answer to the first part alone is submitted alone; without one, the
    question is refused."""
    text = prompt(state.question, shown, state.spotlight, asked)
    cap = ANSWER_TOKENS * len(asked)
    reply = ask(READING_SYSTEM, text, cap)
    state.belief = belief(reply)
    first, second = short_answers(reply.text, 2)
    if first is None:
        return Refusal(
            reason="The retrieved articles do not state an answer.", reason_code="not_supported"
        )
    found = candidates(asked[0], first, shown)
    if not found:
        state.event("decision", f"no retrieved sentence states {first!r}", answer=first)
        return Refusal(
            reason="The answer found is stated by no retrieved sentence.",
            reason_code="ungrounded",
        )
    quoted = quotes(first, found[0], read_)
    agreement(
        state, first, samples, lambda i: short_answers(ask(READING_SYSTEM, text, cap, i).text, 2)[0]
    )  # of the first part: the answer the question stands on
    about = f"{asked[1]} {first}"
    then = candidates(about, second, shown) if second and _new(second, first) else []
    if not then and state.tool_calls + 3 <= budget:  # a search, a fetch, the submission
        hopped = _hop(state, first)
        if hopped:
            reply = ask(
                READING_SYSTEM,
                prompt(f"{asked[1]} ({first})", hopped, state.spotlight),
                ANSWER_TOKENS,
            )
            second = short_answer(reply.text)
            then = candidates(about, second, hopped) if second and _new(second, first) else []
            read_ = leads(state)
    if not then:
        state.event("decision", f"first part attributed to {found[0].title!r}; second unstated")
        return _submit(state, first, quoted)
    state.event("decision", f"parts attributed to {found[0].title!r} and {then[0].title!r}")
    assert second is not None  # `then` holds candidates only for a second answer
    return _submit(state, f"{first}; {second}", quoted + quotes(second, then[0], read_))


def _new(second: str, first: str) -> bool:
    """A second answer that says something the first does not ("Uganda; Uganda" does not)."""
    return bool(_stems(second) - _stems(first))


def _hop(state: RunState, name: str) -> list[Sentence]:
    """Search `name`; fetch the top hit not read yet; its sentences (none when there is none,
    or the guard quarantined them all)."""
    known = {a.title for a in state.fetched.articles.values()}
    search = ToolCall(id="reading_hop_search", name=SEARCH, arguments={"query": name})
    hits = run_tool(state, search).artifact or []
    new = next((hit.title for hit in hits if hit.title not in known), None)
    if new is None:
        return []
    fetch = ToolCall(id="reading_hop_fetch", name=FETCH, arguments={"title": new})
    run_tool(state, fetch)
    return [s for s in leads(state) if s.title not in known]


def _repaired(
    state: RunState, ask: Ask, shown: list[Sentence], first: str, asked_with: str
) -> tuple[str | None, list[Sentence], str]:
    """The one repair call: the question with only the sentences closest to it; its answer,
    that answer's candidates (by the same rule as the first), and the prompt that gave the
    answer (`asked_with` when no repair call was made)."""
    choices = closest(state.question, shown)
    if not choices:
        return first, [], asked_with
    state.event("repair", f"no retrieved sentence states {first!r}; asked again", answer=first)
    text = prompt(state.question, choices, state.spotlight)
    reply = ask(READING_SYSTEM, text, ANSWER_TOKENS)
    state.belief = belief(reply)  # the answer now submitted is this call's
    answer = short_answer(reply.text)
    if answer is None:
        return None, [], text
    return answer, candidates(state.question, answer, shown), text
