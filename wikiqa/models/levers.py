"""Prompt levers a model spec can switch on, for small models: `openai:<model>@<url>;brief=1`.

They belong to the model, not the agent: a 1.5B model needs telling what a frontier model does
unprompted, and a lever spelled in the spec changes the spec, so its runs and cached replies never
mix with the runs without it. Each lever's text is appended to the agent's system prompt, which
stays the same for every task, so a local server still reuses its cached prefix.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["LEVERS", "apply", "check"]

LEVERS: dict[str, str] = {
    # SimpleQA-style gold answers are a few words; a 1.5B model otherwise restates the lead.
    "brief": (
        "Keep the answer short: the few words that answer the question (a name, a date, a "
        "number, a place), not a sentence about it."
    ),
    # Quotes fail verbatim checks when a small model drops a parenthesis or rewrites a clause.
    "short_quote": (
        "Quote one short passage that contains the answer, copied character for character; "
        "skip parenthetical asides by quoting text after them, never by deleting them."
    ),
}


def check(options: Mapping[str, str]) -> dict[str, bool]:
    """The levers switched on, from spec options (`brief=1`, `short_quote=0`); unknown ones or
    values other than 0/1 are errors, so a typo never runs silently as the baseline."""
    on: dict[str, bool] = {}
    for key, value in options.items():
        if key not in LEVERS:
            raise ValueError(f"unknown model lever {key!r}: known are {', '.join(LEVERS)}")
        if value not in ("0", "1"):
            raise ValueError(f"model lever {key}={value!r}: expected 0 or 1")
        on[key] = value == "1"
    return on


def apply(system: str, on: Mapping[str, bool]) -> str:
    """The system prompt with the switched-on levers' notes, in a fixed order."""
    notes = [text for key, text in LEVERS.items() if on.get(key)]
    return system if not notes else system.rstrip("\n") + "\n" + "\n".join(notes) + "\n"
