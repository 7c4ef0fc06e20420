"""Deterministic asserts, the Wikieval vocabulary: the cheap tier that decides most tasks.

An assert is a string `op:value` (or a bare `is-json`). Positive asserts (`equals`, `contains`,
`icontains`, `regex`, `is-json`) state a key point the answer must carry; negative asserts
(`not-contains`, `not-icontains`, `not-regex`) state a claim that would contradict the reference.
Unknown ops fail closed: they never pass.
"""

from __future__ import annotations

import json
import re

from wikiqa.text import normalize_quote

POSITIVE = frozenset({"equals", "contains", "icontains", "regex", "is-json"})
NEGATIVE = frozenset({"not-contains", "not-icontains", "not-regex"})
KNOWN = POSITIVE | NEGATIVE


def parse(spec: str) -> tuple[str, str]:
    op, _, value = spec.partition(":")
    return op.strip(), value


def is_negative(spec: str) -> bool:
    return parse(spec)[0] in NEGATIVE


def problem(spec: str) -> str | None:
    """Why an assert spec is malformed (for the task loader), or None."""
    op, value = parse(spec)
    if op not in KNOWN:
        # a typo ("icontain") would fail closed when checked and quietly turn correctness
        # undecided: refused at load instead, naming the ops there are
        return f"unknown assert op {op!r} (known: {', '.join(sorted(KNOWN))})"
    if op != "is-json" and not value:
        return f"assert {spec!r} needs a value after ':'"
    if op in {"regex", "not-regex"}:
        try:
            re.compile(value)
        except re.error as err:
            return f"assert {spec!r}: bad regular expression ({err})"
    return None


def check(spec: str, output: str) -> tuple[bool, str]:
    """(passed, reason). Matching normalises whitespace and quote marks on both sides."""
    op, value = parse(spec)
    text, want = normalize_quote(output), normalize_quote(value)
    if op == "equals":
        ok = text == want
    elif op in {"contains", "not-contains"}:
        ok = (want in text) == (op == "contains")
    elif op in {"icontains", "not-icontains"}:
        ok = (want.casefold() in text.casefold()) == (op == "icontains")
    elif op in {"regex", "not-regex"}:
        ok = (re.search(value, output) is not None) == (op == "regex")
    elif op == "is-json":
        try:
            json.loads(output)
            ok = True
        except json.JSONDecodeError:
            ok = False
    else:
        return False, f"unknown assert op {op!r} (fails closed)"
    return ok, f"{spec}: {'pass' if ok else 'fail'}"
