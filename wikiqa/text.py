"""Plain-text helpers shared by search and answer scoring: tokens and stopwords."""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache

# English function words plus the question words that open most queries ("what", "who", ...);
# they carry no topic, so dropping them keeps BM25 from ranking on "the" and "is".
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having he
    he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if
    in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off on
    once only or other ought our ours ourselves out over own same shan't she she'd she'll she's
    should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up
    very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's with won't would wouldn't you you'd you'll you're you've
    your yours yourself yourselves
    many much tell name called known whose does did ever
    """.split()
)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits, keeping inner apostrophes)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.casefold())]


def content_words(text: str) -> list[str]:
    """Words with stopwords dropped, first occurrence order, no duplicates."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)


# A sentence ends at . ! or ? (or the CJK 。！？) and the space after it, unless the next word
# starts lower-case: abbreviations like "c." or "U.S." before a lower-case word are not split.
# Any other next character splits: a capital in any script, a digit, a quote or bracket, CJK
# (which has no case), a tag or JSON opener ("<", "{", "[", "&"). Splitting only before ASCII
# capitals would glue planted text in another script onto a real sentence.
_SENTENCE_END = re.compile(r"(?<=[。！？])\s*|(?<=[.!?])[\"'”’)\]}]*\s*")
_OPENERS = "<{[&"
_CLOSERS = ",.;:!?)]}-–—…\"'”’"
_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Mt|Ft|Jr|Sr|Gen|Col|Lt|Capt|Gov|Rev|No|Vol|vs|c|ca|approx)"
    r"|\b[A-Z](?:\.[A-Z])*)\.$"
)
_ABBREVIATION_REACH = 16  # longer than its longest word ("approx."), with the boundary before it
# Hard boundaries inside a sentence: markup and role tokens (`<tag>`, `</tag>`, `<|im_start|>`),
# the start of a JSON object, and a change into a run of letters of another script outside
# parentheses (a parenthesised native name, "Moscow (Russian: Москва)", stays put).
_TAG = re.compile(r"(?:<|&lt;)/?[A-Za-z_][\w:-]*[^<>]{0,200}?(?:>|&gt;)")
_ROLE = re.compile(r"<\|[^|<>]{0,40}\|>")


@lru_cache(maxsize=4096)
def script(char: str) -> str:
    """'latin' for ASCII and Latin letters, else the first word of the Unicode name
    ('CJK', 'CYRILLIC', 'FULLWIDTH', ...); '' for anything that is not a letter."""
    if not char.isalpha():
        return ""
    if char.isascii():
        return "latin"
    name = unicodedata.name(char, "")
    return "latin" if name.startswith("LATIN") else name.split(" ", 1)[0]


# Scripts written without spaces between words: one "word" can be a whole sentence.
_UNSPACED = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "THAI", "LAO", "KHMER"})


def _foreign_runs(text: str) -> list[int]:
    """Where a run of 3+ letters in a non-Latin script starts after Latin text, outside
    parentheses: the offsets to split at."""
    if text.isascii():  # the common case: nothing to look for
        return []
    cuts, depth, previous = [], 0, ""
    i = 0
    while i < len(text):
        char = text[i]
        depth += (char in "([（") - (char in ")]）") if depth or char in "([（" else 0
        depth = max(depth, 0)
        kind = script(char)
        if kind and kind != "latin" and depth == 0 and previous == "latin":
            j = i
            while j < len(text) and (script(text[j]) == kind or text[j] in " ·-"):
                j += 1
            letters = sum(script(c) == kind for c in text[i:j])
            spaced = len(text[i:j].split()) >= 2
            if (
                (spaced and letters >= 4)
                or (kind in _UNSPACED and letters >= 6)
                or (kind == "FULLWIDTH" and letters >= 3)
            ):
                cuts.append(i)
        if kind:
            previous = kind
        i += 1
    return cuts


def _json_objects(text: str) -> list[tuple[int, int]]:
    """Spans of balanced `{ ... }` that open like JSON (`{"`)."""
    found, i = [], text.find("{")
    while i != -1:
        if re.match(r"\{\s*\"", text[i:]):
            depth = 0
            for j in range(i, len(text)):
                depth += (text[j] == "{") - (text[j] == "}")
                if depth == 0:
                    found.append((i, j + 1))
                    break
            else:
                found.append((i, len(text)))
        i = text.find("{", found[-1][1] if found and found[-1][0] == i else i + 1)
    return found


def _hard_cuts(sentence: str) -> list[str]:
    cuts = {0, len(sentence)}
    for m in _TAG.finditer(sentence):  # a tag stands alone
        cuts.update((m.start(), m.end()))
    for m in _ROLE.finditer(sentence):  # a role token keeps the text it introduces
        cuts.add(m.start())
        if re.match(r"<\|\s*(?:im_end|end|eot)", m.group(0)):
            cuts.add(m.end())
    for a, b in _json_objects(sentence):
        cuts.update((a, b))
    cuts.update(_foreign_runs(sentence))
    # a line break before a heading, label, tag or list mark ("\n### System")
    cuts.update(m.start() for m in re.finditer(r"\n(?=\s*[#\[<{|*>=])", sentence))
    ordered = sorted(cuts)
    return [sentence[a:b].strip() for a, b in itertools.pairwise(ordered)]


def _starts_sentence(text: str, end: int, spaced: bool, cjk: bool) -> bool:
    """Does a sentence start at `end`, just after an end mark?"""
    following = text[end : end + 1]
    if not following:
        return False
    if cjk:
        return True
    if not spaced:  # glued on: only another script or markup starts a sentence there
        return following in _OPENERS or script(following) not in ("", "latin")
    first = text[end:].lstrip("\"'“‘(")[:1]
    return bool(first) and not first.islower() and first not in _CLOSERS


def clear_memo() -> None:
    """Forget memoised splits and folds (benchmarks time a cold start with it)."""
    _sentences.cache_clear()
    fold.cache_clear()


def sentences(text: str) -> list[str]:
    """Split prose into sentences, keeping each a verbatim span of `text`. An article's text is
    split by the guard, the quarantine, search snippets and the answerer in turn: memoised."""
    return list(_sentences(text))


@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    spans: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() == match.start() and text[match.start() - 1 : match.start()] in ".!?":
            spaced = False
        else:
            spaced = bool(re.search(r"\s", match.group(0)))
        cjk = text[match.start() - 1 : match.start()] in "。！？"
        if not _starts_sentence(text, match.end(), spaced, cjk):
            continue
        end = match.start()
        while end > start and text[end - 1].isspace():
            end -= 1
        # Only the end of the text since the last cut can hold the abbreviation: searching the
        # whole of it would be quadratic in a run of initials ("A. B. C. ...").
        if _ABBREVIATION.search(text, max(start, end - _ABBREVIATION_REACH), end):
            continue
        if end > start:
            spans.append(text[start : match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        spans.append(tail)
    return tuple(piece for span in spans for piece in _hard_cuts(span.strip()) if piece)


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude suffix stripper, enough to match 'mountains' with 'mountain' in snippets."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def best_sentence(text: str, query: str, max_chars: int = 240) -> str:
    """The sentence of `text` sharing most content words with `query`, trimmed for display."""
    terms = {stem(w) for w in content_words(query)}
    candidates = sentences(text) or [text]
    best = max(candidates, key=lambda s: len(terms & {stem(w) for w in words(s)}))
    return best if len(best) <= max_chars else best[: max_chars - 1].rstrip() + "…"


# Look-alikes NFKC leaves alone: Cyrillic and Greek letters that render as Latin ones.
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁɡһӏԛԝАВЕКМНОРСТХІЈЅοαειкνтρυχΑΒΕΗΙΚΜΝΟΡΤΥΧΖ",
    "aeopcyxijsdghlqwABEKMHOPCTXIJSoaeikvtpuxABEHIKMNOPTYXZ",
)
_LEET = str.maketrans("0134578@$", "oieastbas")
_LEET_WORD = re.compile(r"\b(?=\w*[a-z])(?=\w*[013457])[a-z0-9]{3,}\b", re.IGNORECASE)


@lru_cache(maxsize=1 << 14)
def fold(text: str) -> str:
    """What a sentence says once its disguises are taken off (for pattern checks only)."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    text = " ".join(w.translate(_CONFUSABLES) if mixed_script(w) else w for w in text.split(" "))
    return _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET), text)


def mixed_script(word: str) -> bool:
    """A word in disguise: Latin letters mixed with Cyrillic ones, or a Greek letter set between
    Latin ones ("quοtιng"); scientific "μm", "β-lactam" and "ΔFosB" are not disguises."""
    if word.isascii():
        return False
    kinds = [script(c) for c in word]
    if "latin" not in kinds:
        return False
    if "CYRILLIC" in kinds:
        return True
    return any(
        k == "GREEK" and kinds[i - 1] == "latin" and kinds[i + 1] == "latin"
        for i, k in enumerate(kinds[1:-1], start=1)
    )


# Spotlighting's datamark (Hines et al. 2024): every space of retrieved text shown to a model as
# this character. Defined here, below the agent and the graders, because both must read a quote
# copied from datamarked text as the spaces it stands for.
DATAMARK = "\u02c6"
_QUOTE_MARKS = str.maketrans(
    dict.fromkeys("‘’‚‛′`", "'") | dict.fromkeys("“”„‟″«»", '"') | {DATAMARK: " "}
)
_RUNS_OF_SPACE = re.compile(r"\s+")


def normalize_quote(text: str) -> str:
    """What "verbatim" forgives (the design's quote contract): runs of whitespace, the shape of
    quote marks and datamarks. Nothing else."""
    return _RUNS_OF_SPACE.sub(" ", text.translate(_QUOTE_MARKS)).strip()
