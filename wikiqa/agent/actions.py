"""Tool execution: run a search or a fetch for the model, or answer its call with an error.

Every call spends one of the budget, whether it runs or not. A call that is malformed, unknown,
not offered now, or an exact repeat of one already made gets an error result instead of running,
so the model learns what went wrong and the run stays bounded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from wikiqa.agent.guard import scan
from wikiqa.agent.quarantine import quarantine
from wikiqa.agent.render import render_article, render_hits
from wikiqa.agent.state import RunState
from wikiqa.models import (
    FETCH,
    SEARCH,
    TOOLS,
    FetchArgs,
    SearchArgs,
    ToolCall,
    ToolResult,
    ToolSpec,
)

_ArgsT = TypeVar("_ArgsT", bound=BaseModel)


def parse_args(model: type[_ArgsT], arguments: dict[str, Any]) -> _ArgsT | str:
    """Validated arguments, or one line naming what is wrong with them."""
    try:
        return model.model_validate(arguments)
    except ValidationError as err:
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in err.errors()
        )


def run_tool(state: RunState, call: ToolCall, offered: Sequence[ToolSpec] = TOOLS) -> ToolResult:
    """Run a search or fetch; anything else, or a call not allowed now, is an error result."""
    state.tool_calls += 1
    if call.error:
        return tool_error(state, call, f"arguments could not be parsed: {call.error}")
    if call.name not in (SEARCH, FETCH):
        return tool_error(state, call, f"unknown tool {call.name!r}")
    if call.name not in {t.name for t in offered}:
        return tool_error(
            state, call, "the tool budget is nearly spent: call submit_answer or refuse now"
        )
    key = f"{call.name} {json.dumps(call.arguments, sort_keys=True)}"
    if key in state.done:
        return tool_error(
            state,
            call,
            "this exact call was already made and its result is above; do not repeat it. "
            "Fetch a different article, call submit_answer, or call refuse.",
        )
    state.done.add(key)
    if call.name == SEARCH:
        search = parse_args(SearchArgs, call.arguments)
        if isinstance(search, str):
            return tool_error(state, call, search)
        return _search(state, call, search)
    fetch = parse_args(FetchArgs, call.arguments)
    return tool_error(state, call, fetch) if isinstance(fetch, str) else _fetch(state, call, fetch)


def tool_error(state: RunState, call: ToolCall, message: str) -> ToolResult:
    state.event("error", f"{call.name}: {message}", tool=call.name)
    return ToolResult(call_id=call.id, name=call.name, content=message, is_error=True)


def _search(state: RunState, call: ToolCall, search: SearchArgs) -> ToolResult:
    start = time.perf_counter()
    hits = state.source.search(search.query, state.search_limit)
    state.event(
        "search",
        f"{search.query!r} -> {len(hits)} hits: {', '.join(h.title for h in hits)}",
        (time.perf_counter() - start) * 1000,
        query=search.query,
        hits=[h.title for h in hits],
    )
    content = render_hits(search.query, hits, state.spotlight)
    return ToolResult(call_id=call.id, name=call.name, content=content, artifact=hits)


def _fetch(state: RunState, call: ToolCall, fetch: FetchArgs) -> ToolResult:
    start = time.perf_counter()
    article = state.source.get_article(fetch.title, state.depth)
    latency = (time.perf_counter() - start) * 1000
    if article is None:
        state.event("fetch", f"{fetch.title!r} -> not found", latency, title=fetch.title)
        return tool_error(
            state, call, f"no article titled {fetch.title!r}; fetch a title from search results"
        )
    found = scan(article)  # the guard reads the text as fetched
    article, held = quarantine(article)  # the model and the quote check see it without these
    state.fetched.add(fetch.title, article)
    state.event(
        "fetch",
        f"{fetch.title!r} -> {article.title!r} ({len(article.text)} chars)",
        latency,
        title=article.title,
        revision_id=article.revision_id,
        provenance=article.provenance.model_dump(mode="json"),
    )
    if held:
        state.event(
            "guard",
            f"{len(held)} sentences quarantined in {article.title!r}: "
            + ", ".join(sorted({why for why, _ in held})),
            quarantined=[{"reason": why, "text": text} for why, text in held],
        )
    if found:
        state.findings.extend(found)
        state.event(
            "guard",
            f"{len(found)} instruction-like passages or addresses in {article.title!r}",
            findings=[f.model_dump() for f in found],
        )
    content = render_article(article, state.spotlight, numbers=state.cite_sentences)
    return ToolResult(call_id=call.id, name=call.name, content=content, artifact=article)
