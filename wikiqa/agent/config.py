"""`AgentConfig`: the one declaration of every agent lever.

Each field is a lever with its default, its rule (the pydantic constraint) and a one-line help
(its description). Everything else derives from these fields: the `Agent` reads them, the run
configuration holds one, the CLI's flags and the step notebooks' parameters are generated from
them (`add_flags` below, `wikiqa.experiment.params`), and the parameters hash
and the resume check compare them. Adding a lever is one field here plus the code that uses it.

A model spec names only a model and how to reach it (and that provider's own options, such as
the extractive answerer's `hits_read`); what the agent does with the model lives here.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "DEFAULT_BUDGET", "PROMPT_NOTES", "AgentConfig", "add_flags", "flag_errors", "from_flags",
    "split_spec_levers",
]  # fmt: skip

DEFAULT_BUDGET = 8

# Notes a lever appends to the system prompt (the `brief` and `short_quote` levers). Small
# models need telling what a frontier model does unprompted; the note goes at the end of a prompt
# that is the same for every task, so a local server still reuses its cached prefix.
PROMPT_NOTES: dict[str, str] = {
    "brief": (
        "Keep the answer short: the few words that answer the question (a name, a date, a "
        "number, a place), not a sentence about it."
    ),
    "short_quote": (
        "Quote one short passage that contains the answer, copied character for character; "
        "skip parenthetical asides by quoting text after them, never by deleting them."
    ),
}


class AgentConfig(BaseModel):
    """How the agent answers: every lever, with its default, its rule and its help."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["tools", "reading"] = Field(
        "tools",
        description="tools: the model drives search, fetch and submit | reading: it reads the "
        "top read_first leads and answers in a few words; the code attributes the quote",
    )
    retrieval: bool = Field(
        True, description="search Wikipedia; False: the closed-book baseline (tools off)"
    )
    ranker: Literal["bm25", "dense", "hybrid"] = Field(
        "bm25",
        description="how search ranks the snapshot: bm25 | dense (MiniLM embeddings, the `dense` "
        "extra) | hybrid (both, reciprocal-rank fused)",
    )
    link_titles: bool = Field(
        False, description="search also ranks the snapshot titles the query names, fused in"
    )
    budget: int = Field(
        DEFAULT_BUDGET,
        ge=1,
        le=64,
        description="tool calls per question, terminal ones included; the last 2 only decide",
    )
    search_limit: int = Field(5, ge=1, le=50, description="hits each search returns")
    read_first: int = Field(
        0, ge=0, description="top search hits fetched before the model's first turn (< budget)"
    )
    spotlight: bool = Field(
        False, description="datamark retrieved text (every space becomes ˆ) for the model"
    )
    strict_support: bool = Field(
        False, description="reject an answer most of whose own words no quote contains"
    )
    trim_quotes: bool = Field(
        False, description="cut a non-verbatim quote to its verbatim leading sentences"
    )
    cite_sentences: bool = Field(
        False, description="show sentences numbered and take citations by number"
    )
    abstain_below: float = Field(
        0.0, ge=0.0, le=1.0, description="refuse an answer whose fitted confidence is under this"
    )
    reading_repair: bool = Field(
        False,
        description="reading: an unattributed answer is asked again, shown only the "
        "sentences closest to the question",
    )
    attribute_first: bool = Field(
        False,
        description="reading: show the model only the sentences closest to the question, and "
        "quote only from them",
    )
    answer_parts: bool = Field(
        False,
        description="reading: a question asking two things gets a short answer per part, each "
        "attributed apart",
    )
    samples: int = Field(
        1,
        ge=1,
        le=9,
        description="reading: short answers read per question, the greedy one and samples - 1 "
        "more of the same prompt at a temperature, for the agreement signals (1: off)",
    )
    brief: bool = Field(False, description="ask for the few words that answer, not a sentence")
    short_quote: bool = Field(False, description="ask for one short passage quoted verbatim")

    @model_validator(mode="after")
    def _reads_fit_budget(self) -> AgentConfig:
        if self.read_first >= self.budget:
            raise ValueError(f"read_first ({self.read_first}) must be below budget ({self.budget})")
        if self.mode == "reading" and (self.read_first < 1 or not self.retrieval):
            raise ValueError("mode reading reads the top leads: it needs read_first >= 1")
        return self

    def changed(self) -> dict[str, Any]:
        """The levers set away from their defaults (what a run's name and table should show)."""
        return {
            name: getattr(self, name)
            for name, field in type(self).model_fields.items()
            if getattr(self, name) != field.default
        }

    def notes(self) -> list[str]:
        """The prompt notes this configuration switches on, in a fixed order."""
        return [text for name, text in PROMPT_NOTES.items() if getattr(self, name)]


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One command-line flag per lever, generated from the fields: `--trim-quotes` /
    `--no-trim-quotes` for a switch, `--budget N` for a number, each with the field's help and
    default. A flag not given stays None, so only what the user set reaches the config."""
    group = parser.add_argument_group("agent levers")
    for name, field in AgentConfig.model_fields.items():
        flag = "--" + name.replace("_", "-")
        help_text = f"{field.description} (default {field.default})"
        if field.annotation is bool:
            group.add_argument(flag, action=argparse.BooleanOptionalAction, help=help_text)
        elif get_origin(field.annotation) is Literal:
            choices = get_args(field.annotation)
            group.add_argument(flag, choices=choices, help=help_text)
        else:
            kind = int if field.annotation is int else float
            group.add_argument(flag, type=kind, metavar="N", help=help_text)


# What `--mode reading` means on the command line when these levers are not given: the
# reading agent measured best on the whole public2 suite (results/reports/retrieval.md): the
# top three leads read, the titles the question names read too, five short answers for the
# agreement signals; hybrid retrieval read more gold and answered no better. The fields keep
# the tools mode's defaults, so a recorded configuration means what it meant when recorded.
READING: dict[str, Any] = {"read_first": 3, "link_titles": True, "samples": 5}


def from_flags(args: argparse.Namespace, **defaults: Any) -> AgentConfig:
    """The configuration the flags of `add_flags` set, over `defaults` (a command's own, such
    as a bench's `read_first=3`), over `READING` when the mode is reading; a broken rule is a
    one-line ValueError naming the flag."""
    given = {
        name: getattr(args, name)
        for name in AgentConfig.model_fields
        if getattr(args, name, None) is not None
    }
    mode = given.get("mode", defaults.get("mode"))
    try:
        return AgentConfig(**((READING if mode == "reading" else {}) | defaults | given))
    except ValidationError as err:
        raise ValueError(flag_errors(err)) from None


def flag_errors(err: ValidationError) -> str:
    """A validation error as one line, each problem naming its flag."""
    problems = []
    for e in err.errors():
        where = "--" + "-".join(str(p) for p in e["loc"]).replace("_", "-") if e["loc"] else ""
        rule = e["msg"].removeprefix("Value error, ")
        problems.append(f"{where} {rule}".strip())
    return "; ".join(problems)


def split_spec_levers(spec: str) -> tuple[str, dict[str, Any]]:
    """A model spec of an older record, and the agent levers it carried, apart.

    Runs recorded before the agent had one configuration spelled two levers in the model spec:
    the prompt notes as an `openai:`/`local:` option (`local:qwen;brief=1`) and the extractive
    answerer's abstention (`extractive:abstain=0.4`, the `abstain_below` lever now). The spec
    returned names only the model and its provider's own options.
    """
    kind, _, rest = spec.partition(":")
    if kind == "extractive" and rest:
        kept, levers = _split(rest.split(","), {"abstain": "abstain_below"}, float)
        return "extractive" + (":" + ",".join(kept) if kept else ""), levers
    if kind in ("openai", "local") and ";" in spec:
        base, _, options = spec.partition(";")
        names = {name: name for name in PROMPT_NOTES}
        kept, levers = _split(options.split(","), names, lambda v: v == "1")
        return base + (";" + ",".join(kept) if kept else ""), levers
    return spec, {}


def _split(
    items: list[str], names: Mapping[str, str], parse: Any
) -> tuple[list[str], dict[str, Any]]:
    kept: list[str] = []
    levers: dict[str, Any] = {}
    for item in filter(None, items):
        key, _, value = item.partition("=")
        if key.strip() in names:
            levers[names[key.strip()]] = parse(value.strip())
        else:
            kept.append(item)
    return kept, levers
