"""The agent's four tools: names, argument models and the schemas every model is offered.

This is the contract between the agent loop and any model: providers send these schemas, and the
offline policies (extractive, scripted) call the same names. How the agent shows tool results to
a model lives with the agent (`wikiqa.agent.render`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from wikiqa.models.protocol import ToolSpec

SEARCH = "search_wikipedia"
FETCH = "get_article"
SUBMIT = "submit_answer"
REFUSE = "refuse"
TERMINAL = frozenset({SUBMIT, REFUSE})
FORCED_ID = "call_0_"  # ids of the calls the agent makes itself (always-retrieve), not the model


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=300)


class FetchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=300)


MAX_ANSWER = 4000  # characters of a submitted answer; longer is malformed


class CitationArg(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1)
    quote: str = Field(min_length=1)


class SubmitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str = Field(min_length=1, max_length=MAX_ANSWER)
    citations: list[CitationArg] = Field(min_length=1)


class SentenceCitationArg(BaseModel):
    """A citation by number (the `cite_sentences` lever): the loop puts sentence `sentence` of
    the article, as the model was shown it, in the quote before any check."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1)
    sentence: int


class SentenceSubmitArgs(BaseModel):
    """What `submit_answer` asks of a model under the `cite_sentences` lever (the schema it is
    offered; its arguments become `SubmitArgs` once the sentences are put in)."""

    model_config = ConfigDict(extra="forbid")
    answer: str = Field(min_length=1, max_length=MAX_ANSWER)
    citations: list[SentenceCitationArg] = Field(min_length=1)


class RefuseArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=2000)


_LIMITS = {"maxLength", "minLength", "minItems", "maxItems", "title"}


def _bare(node: Any) -> Any:
    """The schema without length limits and titles. The limits are enforced when arguments are
    validated; sent to a model they only cost: grammar-constrained servers (llama.cpp) unroll
    `maxLength: 2000` into a grammar too large to compile, and crash."""
    if isinstance(node, dict):
        return {k: _bare(v) for k, v in node.items() if k not in _LIMITS or isinstance(v, dict)}
    if isinstance(node, list):
        return [_bare(v) for v in node]
    return node


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _bare(model.model_json_schema())
    return schema


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name=SEARCH,
        description="Search English Wikipedia. Returns article titles with short snippets.",
        parameters=_schema(SearchArgs),
    ),
    ToolSpec(
        name=FETCH,
        description="Fetch the text of one Wikipedia article by its exact title.",
        parameters=_schema(FetchArgs),
    ),
    ToolSpec(
        name=SUBMIT,
        description=(
            "Submit the final answer. Every citation quotes a verbatim, contiguous passage of an "
            "article you fetched with get_article, and names that article's title."
        ),
        parameters=_schema(SubmitArgs),
    ),
    ToolSpec(
        name=REFUSE,
        description="Decline to answer because the fetched Wikipedia text does not support one.",
        parameters=_schema(RefuseArgs),
    ),
)
# The `cite_sentences` lever's tools: the same four, with citations by sentence number.
CITING_TOOLS: tuple[ToolSpec, ...] = tuple(
    ToolSpec(
        name=SUBMIT,
        description=(
            "Submit the final answer. Every citation names an article you fetched with "
            "get_article, by its exact title, and the number [n] of the sentence in it that "
            "states the answer."
        ),
        parameters=_schema(SentenceSubmitArgs),
    )
    if tool.name == SUBMIT
    else tool
    for tool in TOOLS
)
