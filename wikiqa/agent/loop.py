"""The agent loop: one question in, a grounded answer or an honest refusal out.

The design, and where each rule lives below:
- Always retrieve: the loop itself searches with the question before the model's first turn
  (`_loop`), and refuses without a model call when that search finds nothing. With
  `read_first=N` it also fetches the top N hits, so a model too weak to choose what to read still
  starts with evidence in front of it (off by default: choosing is part of what is measured).
- Search, then fetch: only text returned by `get_article` counts as evidence (`Fetched`); the
  tools run in `wikiqa.agent.actions`.
- A hard tool-call budget (default 8): every executed tool call, terminal ones included, spends
  one; a call beyond the budget ends the run with a `budget_exhausted` refusal. The last
  `CLOSING` calls are for deciding: only submit_answer and refuse are allowed then, so a model
  that keeps searching is made to decide instead of running out (`_offered`). The tool list sent
  to the model never changes: a search in the closing phase gets an error result saying to
  decide, because changing `tools` would invalidate the provider's cached prompt prefix.
- Turns that must decide ask for a tool call (`CallOptions(tool_choice="required")`): after a
  plain-text reply (with the repair nudge), after a rejected submission, and in the closing
  phase. Plain text is never a move in this loop, and small local models answer
  in prose first; our llama.cpp server enforces the request with a grammar, other providers
  treat it as they treat `tool_choice`. Other turns stay free, so the model may still search.
- A call that repeats one already made in this run is not run again; the model is told so
  (small models copy their previous turn and would otherwise spend the budget on it).
- Citation-forced grounding: a submission whose quotes are not verbatim spans of articles fetched
  in this run is rejected (`wikiqa.agent.decide`); it gets one repair turn naming exactly what failed, and a
  second failure becomes a refusal. An answer with unverified citations is never returned.
- Retrieved text is data: tool results are labelled untrusted, and the deterministic guard
  (`wikiqa.agent.guard`) rejects outputs that repeat planted instructions or carry web addresses.
- Two ways to read, one loop (`AgentConfig.mode`): `tools`, where the model drives search, fetch
  and submit; and `reading` (`wikiqa.agent.reading`), where after the same search and fetches
  the model only answers in a few words and the quote is attributed in code, then submitted
  through the same `decide`: the grounding rules are the same for both.
- Outages are infrastructure errors: a source or model failure after retries ends the run with a
  refusal marked `infrastructure_error`, never a made-up answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from wikiqa.agent.actions import run_tool
from wikiqa.agent.agreement import SAMPLE_TEMPERATURE
from wikiqa.agent.config import AgentConfig
from wikiqa.agent.decide import (
    abstained,
    confidence,
    decide,
    describe,
    last_look,
    signals,
    weigh,
)
from wikiqa.agent.grounding import quotable_text
from wikiqa.agent.prompts import (
    BASELINE_SYSTEM_PROMPT,
    CITING_NUDGE,
    NUDGE,
    SYSTEM_PROMPT,
    prompt_hash,
    system_prompt,
    tools_for,
)
from wikiqa.agent.reading import ANSWER_TOKENS_ALTERNATIVES, Reply, read
from wikiqa.agent.result import (
    INFRASTRUCTURE_CODES,
    AgentResult,
    Answer,
    Refusal,
    Retrieved,
    TraceEvent,
    Usage,
)
from wikiqa.agent.state import RunState
from wikiqa.models import (
    FETCH,
    FORCED_ID,
    PRICE_NOTE,
    REFUSE,
    SEARCH,
    SUBMIT,
    TERMINAL,
    TOOLS,
    AssistantMessage,
    CallOptions,
    Message,
    Model,
    ModelTurn,
    ModelUnavailable,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
    estimate_cost,
    evidence,
)
from wikiqa.sources import SourceUnavailable, WikiSource
from wikiqa.sources.ranked import RankedSource

CLOSING = 2  # the last calls of the budget, kept for a submission and its one repair
# Stop reasons by which a model (Claude's `refusal`, an OpenAI-compatible content filter)
# declines: a decision to report as the agent's refusal, not an infrastructure error.
MODEL_REFUSALS = frozenset({"refusal", "content_filter"})
DECIDING = CallOptions(tool_choice="required")


class Agent:
    """Answers questions from a `WikiSource` with a `Model`, under a tool-call budget."""

    def __init__(
        self,
        model: Model,
        source: WikiSource,
        config: AgentConfig | None = None,
        *,
        on_event: Callable[[TraceEvent], None] | None = None,
    ) -> None:
        self.model = model
        self.config = config if config is not None else AgentConfig()
        ranked = self.config.ranker != "bm25" or self.config.link_titles
        self.source = (
            RankedSource(source, self.config.ranker, self.config.link_titles) if ranked else source
        )
        self.tools = tools_for(self.config.cite_sentences)
        self.on_event = on_event

    def ask(self, question: str) -> AgentResult:
        return _Run(self, question).execute()


class _Run:
    """One question through the loop; its bookkeeping lives in `self.state`."""

    def __init__(self, agent: Agent, question: str) -> None:
        self.agent = agent
        self.state = RunState(
            question=question,
            source=agent.source,
            search_limit=agent.config.search_limit,
            depth="lead",
            spotlight=agent.config.spotlight,
            strict_support=agent.config.strict_support,
            trim_quotes=agent.config.trim_quotes,
            cite_sentences=agent.config.cite_sentences,
            on_event=agent.on_event,
        )

    def execute(self) -> AgentResult:
        state, start = self.state, time.perf_counter()
        try:
            output = self._loop()
        except SourceUnavailable as err:
            state.event("error", f"Wikipedia unavailable: {err}")
            output = Refusal(
                reason=f"Wikipedia was unavailable: {err}", reason_code="source_unavailable"
            )
        except ModelUnavailable as err:
            state.event("error", f"model unavailable: {err}")
            output = Refusal(
                reason=f"The model was unavailable: {err}", reason_code="model_unavailable"
            )
        output = last_look(state, output)
        output, corroboration = weigh(state, output)
        found = signals(state, output)
        if isinstance(output, Answer) and corroboration is not None:
            found |= corroboration.signals()
        uncorroborated = (
            isinstance(output, Answer)
            and corroboration is not None
            and corroboration.uncorroborated
        )
        mode = self.agent.config.mode
        score = confidence(state, output, found, mode)
        below = self.agent.config.abstain_below
        if isinstance(output, Answer) and score < below:
            output = abstained(state, output, found, score, below)
            found, score = {}, 0.0
        state.event("decision", describe(output), kind_of_output=output.kind)
        spec = self.agent.model.spec
        return AgentResult(
            question=state.question,
            output=output,
            infrastructure_error=isinstance(output, Refusal)
            and output.reason_code in INFRASTRUCTURE_CODES,
            needs_human_review=isinstance(output, Refusal)
            or state.guard_blocked > 0
            or uncorroborated
            or score < evidence.weights_for(found, mode).review_below,
            confidence=score,
            signals=found,
            guard_blocked=state.guard_blocked,
            repairs=state.repairs,
            trace=state.trace,
            retrieved=[
                Retrieved(
                    title=a.title,
                    url=a.url,
                    revision_id=a.revision_id,
                    text=quotable_text(a),
                    injected=a.provenance.injected,
                )
                for a in state.fetched.articles.values()
            ],
            usage=Usage(
                tokens=state.tokens,
                model_calls=state.model_calls,
                cached_model_calls=state.cached_calls,
                tool_calls=state.tool_calls,
                estimated_cost_usd=estimate_cost(spec, state.tokens),
                cost_note=PRICE_NOTE,
            ),
            latency_ms=round((time.perf_counter() - start) * 1000, 3),
            model=spec,
            source=self.agent.source.name,
            prompt_hash=prompt_hash(self.agent.config),
        )

    def _loop(self) -> Answer | Refusal:
        config = self.agent.config
        state, budget = self.state, config.budget
        question = state.question.strip()
        if not question:
            return Refusal(reason="The question is empty.", reason_code="invalid_question")
        state.messages.append(UserMessage(text=question))
        if not config.retrieval:
            return self._closed_book()
        # Always retrieve: search with the question itself before the model says anything.
        forced = ToolCall(id=f"{FORCED_ID}search", name=SEARCH, arguments={"query": question})
        state.messages.append(AssistantMessage(tool_calls=[forced]))
        first = run_tool(state, forced)
        state.messages.append(first)
        if not first.artifact:
            return Refusal(
                reason="Wikipedia search found nothing for this question.",
                reason_code="no_results",
            )
        if config.read_first:
            reads = [
                ToolCall(id=f"{FORCED_ID}fetch_{i}", name=FETCH, arguments={"title": hit.title})
                for i, hit in enumerate(first.artifact[: config.read_first])
            ]
            state.messages.append(AssistantMessage(tool_calls=reads))
            state.messages.extend(run_tool(state, call) for call in reads)
        if config.mode == "reading":
            return read(state, self._read_call, config)
        nudged = deciding = False
        while True:
            offered = self._offered()  # enforced on the calls below, not sent: see the docstring
            # A turn that must decide asks for a tool call (a grammar, where the server has
            # one): plain text there is a dead end, and small models answer in prose.
            deciding = deciding or offered != self.agent.tools
            turn = self._model_turn(
                system_prompt(config),
                tools=self.agent.tools,
                options=DECIDING if deciding else None,
            )
            if turn.stop_reason in MODEL_REFUSALS:
                return Refusal(
                    reason=f"The model declined to answer (stop reason {turn.stop_reason}).",
                    reason_code="model_refused",
                )
            state.messages.append(turn.message)
            if not turn.message.tool_calls:
                if nudged:
                    return Refusal(
                        reason="The model gave no answer or refusal.", reason_code="no_decision"
                    )
                nudged = deciding = True
                nudge = CITING_NUDGE if config.cite_sentences else NUDGE
                state.messages.append(UserMessage(text=nudge))
                continue
            results: list[Message] = []
            logged = state.trace[-1].detail["calls"]  # this turn's model event, `_model_turn`
            for call, entry in zip(turn.message.tool_calls, logged, strict=True):
                if state.tool_calls >= budget:
                    return Refusal(
                        reason=f"The budget of {budget} tool calls ran out before "
                        "a grounded answer.",
                        reason_code="budget_exhausted",
                    )
                if call.name in (SUBMIT, REFUSE):
                    outcome = decide(state, call)
                    if call.id in state.quoted:  # the cite_sentences lever: what was checked
                        entry["quoted"] = state.quoted.pop(call.id)
                    if not isinstance(outcome, ToolResult):
                        return outcome
                    deciding = True  # a rejected submission: the repair turn decides again
                    results.append(outcome)
                else:
                    results.append(run_tool(state, call, offered))
            state.messages.extend(results)

    def _read_call(self, system: str, text: str, max_tokens: int, sample: int = 0) -> Reply:
        """One call of the reading mode: no tools, the few tokens it needs; its reply text, and
        its tokens' log-probabilities where the provider gives them. Sample `i` > 0 is the same
        call at `SAMPLE_TEMPERATURE` with seed `i`: a seed of its own makes each sample
        independent of the others (and its own response-cache entry), and repeatable."""
        options = (
            CallOptions(max_tokens=max_tokens, temperature=SAMPLE_TEMPERATURE, seed=sample)
            if sample
            else CallOptions(
                max_tokens=max_tokens, temperature=0.0, logprobs=ANSWER_TOKENS_ALTERNATIVES
            )
        )
        turn = self._model_turn(
            system, tools=(), options=options, messages=[UserMessage(text=text)]
        )
        if turn.stop_reason in MODEL_REFUSALS:
            return Reply("", None)
        return Reply(turn.message.text, turn.logprobs)

    def _offered(self) -> tuple[ToolSpec, ...]:
        if self.agent.config.budget - self.state.tool_calls > CLOSING:
            return self.agent.tools
        return tuple(t for t in self.agent.tools if t.name in TERMINAL)

    def _closed_book(self) -> Answer | Refusal:
        """Tools off: the reply is the answer, uncited. Ungrounded by construction, which is
        what the no-retrieval baseline measures; the calibration grader reads soft refusals."""
        turn = self._model_turn(BASELINE_SYSTEM_PROMPT, tools=())
        if not turn.message.text.strip():
            return Refusal(reason="The model gave no answer.", reason_code="no_decision")
        return Answer(text=turn.message.text.strip(), citations=[])

    def _model_turn(
        self,
        system: str = SYSTEM_PROMPT,
        tools: Sequence[ToolSpec] = TOOLS,
        options: CallOptions | None = None,
        messages: Sequence[Message] | None = None,
    ) -> ModelTurn:
        state, start = self.state, time.perf_counter()
        sent = state.messages if messages is None else messages
        turn = (
            self.agent.model(system, sent, tools, options)
            if options is not None
            else self.agent.model(system, sent, tools)
        )
        latency = (time.perf_counter() - start) * 1000
        state.model_calls += 1
        state.cached_calls += turn.cached
        state.tokens = state.tokens + turn.usage
        calls = ", ".join(f"{c.name}({_brief(c.arguments)})" for c in turn.message.tool_calls)
        state.event(
            "model",
            f"{turn.model} -> {calls or 'text: ' + turn.message.text[:80]!r}",
            latency,
            turn.usage,
            stop_reason=turn.stop_reason,
            text=turn.message.text,
            calls=[self._logged(c) for c in turn.message.tool_calls],
            cached=turn.cached,
            tool_choice=options.tool_choice if options is not None else None,
        )
        return turn

    @staticmethod
    def _logged(call: ToolCall) -> dict[str, Any]:
        """A model's call as the trace keeps it. Under the cite_sentences lever the loop adds,
        once `decide` has resolved a submission (after the same turn's fetches), its citations
        with the sentences put in (`quoted`), so replays and labels read it as any other."""
        return {"name": call.name, "arguments": call.arguments, "error": call.error}


def _brief(arguments: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in arguments.items() if k != "citations")
    return text if len(text) <= 80 else text[:79] + "…"
