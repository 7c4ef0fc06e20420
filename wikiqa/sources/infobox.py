"""Infobox fields from an article's wikitext, as plain strings.

Infobox data holds facts leads lack (melting points, axial tilt, surface gravity). Those values
usually sit inside formatting templates ({{convert}}, {{val}}, {{birth date}}), which
mwparserfromhell's `strip_code` would delete outright, so the few templates that carry values are
rendered to text first.
"""

from __future__ import annotations

from typing import Any

import mwparserfromhell

_FIRST_ARG = {"nowrap", "nobr", "small", "big", "nbsp", "abbr", "sup", "sub", "resize"}
_LISTS = {"plainlist", "flatlist", "ubl", "unbulleted list", "hlist", "bulleted list", "cslist"}
_DATES = {
    "birth date", "birth date and age", "death date", "death date and age", "start date",
    "end date", "start date and age", "dob", "dda", "bda",
}  # fmt: skip
_UNIT_KEYS = ("u", "ul")


def _positional(template: Any) -> list[str]:
    return [str(p.value).strip() for p in template.params if not p.showkey and str(p.value).strip()]


def _render(template: Any) -> str | None:
    """Plain text for a value-carrying template, or None to let strip_code drop it."""
    name = str(template.name).strip().lower().replace("_", " ")
    args = _positional(template)
    if name in {"convert", "cvt"} and len(args) >= 2:
        # {{convert|8848.86|m|ft}}: value and first unit; ranges ({{convert|1|to|2|km}}) too.
        if len(args) >= 4 and args[1] in {"to", "-", "–", "and", "or"}:
            return f"{args[0]}–{args[2]} {args[3]}"
        return f"{args[0]} {args[1]}"
    if name == "val" and args:
        unit = next((str(template.get(k).value).strip() for k in _UNIT_KEYS if template.has(k)), "")
        value = args[0] if len(args) == 1 else f"{args[0]} ± {args[1]}"
        return f"{value} {unit}".strip()
    if name in _DATES:
        numbers = [a for a in args if a.isdigit()][:3]
        return "-".join(n.zfill(2) if i else n for i, n in enumerate(numbers)) or None
    if name in _FIRST_ARG and args:
        return args[0]
    if name == "lang" and len(args) >= 2:
        return args[1]
    if name in _LISTS:
        items = [line.lstrip("*# ").strip() for arg in args for line in arg.splitlines()]
        return ", ".join(item for item in items if item) or None
    return None


def _plain(value: Any) -> str:
    for template in value.filter_templates(recursive=True):
        rendered = _render(template)
        if rendered is not None:
            try:
                value.replace(template, rendered)
            except ValueError:  # already replaced as part of an enclosing template
                continue
    text = value.strip_code(normalize=True, collapse=True)
    return " ".join(text.replace("\u00a0", " ").split())


def parse_infobox(wikitext: str) -> dict[str, str]:
    """Fields of the first top-level {{Infobox ...}} (or chembox-like box) in `wikitext`."""
    code = mwparserfromhell.parse(wikitext)
    for template in code.filter_templates(recursive=False):
        name = str(template.name).strip().lower()
        if name.startswith("infobox") or name in {"chembox", "drugbox", "taxobox", "speciesbox"}:
            fields: dict[str, str] = {}
            for param in template.params:
                key = str(param.name).strip()
                if not param.showkey or not key:
                    continue
                text = _plain(param.value)
                if text:
                    fields[key] = text
            return fields
    return {}
