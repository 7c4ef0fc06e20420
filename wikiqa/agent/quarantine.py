"""Quarantine: spans of retrieved text that are never quotable, and that the model sees marked.

The guard's patterns read English; an attacker writes in Russian, hides the words behind
zero-width characters or look-alike letters, encodes them, or dresses them as markup. So besides
the sentences the guard flags, these are quarantined whole, whatever they say:

    instruction      the guard flags the sentence once it is folded: NFKC, format, zero-width
                     and tag characters dropped, look-alike Cyrillic and Greek letters in Latin
                     words mapped to Latin, leetspeak read as letters
    foreign_script   most of its letters (outside parentheses: "Moscow (Russian: Москва)" stays)
                     are in a script other than Latin, or in fullwidth forms
    foreign_language a Latin-script sentence in French, German, Spanish or Italian: four or more
                     of their function words and more of them than English ones
    markup           tags (`</untrusted_article>`), chat role tokens (`<|im_start|>`), JSON
                     objects, `[SYSTEM]`-style role labels and lines shaped like our own trace
    encoded          a base64 or hex blob, or a sentence that reads as English only reversed or
                     through ROT13
    obfuscated       a word that mixes Latin with Cyrillic or Greek letters, or text carrying
                     invisible tag characters

The sentence is replaced by `[quarantined: REASON]` in what the model sees and in what quotes
are checked against. The snapshot's own leads measure the cost: `python -m wikiqa.bench injection`
reports the share of its sentences quarantined (the target is at most 1%).
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from typing import Literal

from wikiqa.agent.guard import is_instruction
from wikiqa.sources import Article
from wikiqa.text import STOPWORDS, fold, mixed_script, script, sentences, words

Reason = Literal[
    "instruction", "foreign_script", "foreign_language", "markup", "encoded", "obfuscated"
]
MARKER = "[quarantined: {reason}]."

_TAG_CHARS = re.compile("[\U000e0000-\U000e007f]")


_ROLE_LABEL = re.compile(
    r"^\W*(?:\[\s*(?:system|assistant|user|developer|operator|admin|inst|instructions?)\s*\]"
    r"|#{1,6}\s*(?:system|developer|assistant|instructions?)\b"
    r"|(?:system|assistant|user|developer|operator)\s*[:>]"
    r"|\[(?:search|fetch|model|decision|guard|repair|error|step \d+)\]"
    r"|(?:\[[^\]]{0,40}\]\s*)?(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE)\s+[\w.]+:"
    r"|(?:FAQ\W+)?[QA]\s*:\s)",
    re.IGNORECASE,
)
_MARKUP = re.compile(
    r"(?:<|&lt;)/?[A-Za-z_][\w:-]*[^<>]{0,200}?(?:>|&gt;)|<\|[^|<>]{0,40}\|>|\{\s*\"\w+\"\s*:"
    r"|\[(?:END|START|BEGIN) OF\b|\{\{[^}]{0,60}\}\}|```"
)
_BASE64 = re.compile(r"(?<![\w+/])(?=[A-Za-z0-9+/]*[0-9+/])(?=[A-Za-z0-9+/]*[a-z])"
                     r"(?=[A-Za-z0-9+/]*[A-Z])[A-Za-z0-9+/]{24,}={0,2}")  # fmt: skip
_HEX = re.compile(r"(?:\b[0-9a-fA-F]{2}[\s:]?){12,}|\b(?:0x)?[0-9a-fA-F]{24,}\b")
_FOREIGN = {
    "fr": "le la les des une est sont pour avec dans sur ce cette vous votre toute tout que qui "
    "doit au aux du ne pas plus".split(),
    "de": "der die das und ist sind für mit nicht sie ihre ihr eine einen dem den des zu auf "
    "wenn bei aus oder auch".split(),
    "es": "el la los las una es son para con del que por sobre este esta cualquier usted su "
    "debe al se como".split(),
    "it": "il lo la gli le una è sono per con che del della di questo questa ogni deve al si "
    "come".split(),
}


def _letters_outside_parentheses(text: str) -> list[str]:
    depth, found = 0, []
    for char in text:
        if char in "([（":
            depth += 1
        elif char in ")]）":
            depth = max(0, depth - 1)
        elif depth == 0 and char.isalpha():
            found.append(char)
    return found


def _foreign_script(sentence: str) -> bool:
    letters = _letters_outside_parentheses(unicodedata.normalize("NFC", sentence))
    foreign = [c for c in letters if script(c) != "latin"]
    return len(foreign) >= 4 and len(foreign) >= 0.5 * len(letters)


def _foreign_language(sentence: str) -> bool:
    tokens = words(sentence)
    english = sum(t in STOPWORDS for t in tokens)
    best = max(sum(t in set(lexicon) for t in tokens) for lexicon in _FOREIGN.values())
    return best >= 4 and best > english


def _reads_encoded(sentence: str) -> bool:
    """English hiding reversed or in ROT13: the decoded text has far more English function
    words than the text as written."""
    as_written = sum(w in STOPWORDS for w in words(sentence))
    for decoded in (sentence[::-1], codecs.decode(sentence, "rot13")):
        if sum(w in STOPWORDS for w in words(decoded)) >= max(4, 3 * as_written + 2):
            return True
    return False


def reason(sentence: str) -> Reason | None:
    """Why a retrieved sentence is quarantined, or None when it may be quoted."""
    if _TAG_CHARS.search(sentence) or any(mixed_script(w) for w in sentence.split()):
        return "obfuscated"
    folded = fold(sentence)
    if _MARKUP.search(folded) or _ROLE_LABEL.search(folded):
        return "markup"
    if _foreign_script(sentence):
        return "foreign_script"
    if _BASE64.search(folded) or _HEX.search(folded) or _reads_encoded(folded):
        return "encoded"
    if is_instruction(folded):
        return "instruction"
    if _foreign_language(folded):
        return "foreign_language"
    return None


def quarantine(article: Article) -> tuple[Article, list[tuple[Reason, str]]]:
    """The article with every quarantined sentence replaced by its marker, and what was."""
    found: list[tuple[Reason, str]] = []
    text = article.text
    for sentence in sentences(article.text):
        why = reason(sentence)
        if why is not None:
            found.append((why, sentence))
            text = text.replace(sentence, MARKER.format(reason=why), 1)
    if not found:
        return article, []
    return article.model_copy(update={"text": text}), found
