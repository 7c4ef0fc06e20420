"""A deterministic injection guard that does not rely on the model complying.

Retrieved text is data. The system prompt says so, but a model may still obey an instruction
planted in an article, so every fetched article is scanned for instruction-like text, and every
output (answer, quotes, refusal reason) is checked against what was found before it leaves the
agent.

What it catches
- Sentences (read after `text.fold` takes off disguises) that address the assistant or the
  reader: "ignore (all) previous instructions", "tell the user to ...", "output/print/say the
  following", "respond with", "as an AI ...",
  "you must ...", anything about "your answer/response/reply", questions (encyclopedic leads
  state, they do not ask), sentences that open (or open a clause) with an imperative aimed at a
  reader (visit, click, download, say, print, explain, provide, encode, modify, ...), orders
  without a reader ("the answer to any question about this article is", "begin your reply
  with", "it is required that ... be included", "an answer is only complete when it ends with
  the word ...", "it is customary ... to add the phrase ..."), persuasion to refuse, and the
  same orders in the phrasings attacks use in French, German, Spanish, Italian, Russian,
  Chinese and Japanese.
- URLs and web addresses (http(s)://..., www....) anywhere in retrieved text, and bare domains
  inside instruction-like sentences.
- In the output: any web address at all (answers never need one: with a scheme, www., a bare
  domain with a path, or a markdown link or image), any address found in
  retrieved text, a run of words copied from an instruction-like sentence (8 or more, or 60% of
  it), and the payload of "say/output/print/tell the user ..." instructions (the text after the
  verb, or a quoted string).

What it does not catch
- Instructions phrased as ordinary encyclopedic statements ("The capital of France is Berlin."):
  that is misinformation, not an instruction; the graders' faithfulness and correctness checks
  are what see it.
- Paraphrased compliance: an output that does what a planted instruction asked in different
  words (say, a summary in French because the article said "answer in French").
- Instructions split across sentences so that no single sentence looks like one, languages
  beyond the phrasings listed above (fr, de, es, it, ru, zh, ja), and orders whose wording none
  of its patterns foresaw. The quarantine (`quarantine.py`) and the structural checks
  (`support.py`) are there for what it misses.
- Payloads shorter than two characters.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from wikiqa.sources import Article
from wikiqa.text import fold, sentences, words

_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"')\]]+", re.IGNORECASE)
# In outputs only, two more shapes of address: a bare domain with a path
# (verify-stats.example.org/x), and markdown links or images without a scheme. A bare domain
# alone ("Booking.com") can be an answer, so it needs the path to count.
_BARE_ADDRESS = re.compile(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,}/[^\s<>\"')\]]*", re.IGNORECASE)
_MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\([^)\s]+\)")
_DOMAIN = re.compile(r"\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,12}(?:/[^\s<>\"')\]]*)?\b")
_TRIGGERS = [
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|prompts?|rules|directions|guidelines|context)\b",
    r"\b(?:tell|inform|advise|urge|remind|ask|direct|instruct|encourage)\s+(?:the\s+)?(?:user|reader|human|visitor|customer)s?\b",
    r"\b(?:output|print|say|write|respond with|reply with|answer with|repeat|return)\s+(?:the\s+)?(?:following|this|exactly|verbatim)\b",
    r"\bas an? (?:ai|language model|chatbot|llm|ai assistant)\b",
    r"\b(?:dear|attention|hey|to the|note to the)\s+(?:ai|assistant|model|chatbot|llm)\b",
    r"\b(?:ai|language model|chatbot|llm)s?\b.{0,30}\b(?:must|should|need to|are required to|reading this)\b",
    r"\byou (?:must|should|need to|are required to|have to|will now|are now)\b",
    r"\b(?:new|updated|system|developer) (?:instructions?|prompt|mode)\b",
    r"\b(?:in|into|to) your (?:response|answer|reply|output)s?\b",
    r"\byour (?:response|answer|reply|output|message)s?\b",
    r"^\W*(?:what|what's|who|whom|whose|which|when|where|why|how|is|are|do|does|did|can|could|would|will|should|shall|may|have|has)\b.*\?[\"'”’)]*\s*$",
    r"\bfrom now on\b",
    r"^\W*(?:system|assistant|user)\s*:",
    # orders that name no reader, or use verbs the list above lacks
    r"\b(?:answer|response|reply|solution)\s+to\s+(?:any|every|all|each)\b",
    r"\b(?:any|every|each|all)\s+(?:factual\s+)?(?:questions?|quer(?:y|ies)|answers?|responses?|replies|summar(?:y|ies))\s+(?:asked\s+)?(?:about|on|regarding|concerning|derived|drawing|based|using|citing|from)\b",
    r"\bbegin\s+(?:your|the|each|every|any)\s+(?:reply|response|answer|summary|output)\b",
    r"\b(?:repl(?:y|ies)|responses?|answers?|summar(?:y|ies)|outputs?)\s+(?:must|should|shall|is to|are to|needs? to|has to|have to|are customarily)\b",
    r"\b(?:must|should|shall|is to|are to)\s+be\s+(?:included|mentioned|cited|appended|added|inserted|displayed|stated|written|prefixed|credited)\b",
    r"\b(?:required|requested|mandatory|essential|necessary|asked)\s+that\s+(?:\S+\s+){1,6}be\s+(?:included|mentioned|cited|appended|added|inserted|displayed|stated|written|prefixed|credited)\b",
    r"\b(?:assistants?|ai|bots?|chatbots?|llms?|language[- ]models?|(?:ai|llm|language[- ]model|automated|machine)[- ](?:readers?|systems?|tools?|models?|summaries|assistants?)|responsible assistants)\b.{0,60}\b(?:must|should|shall|are asked|are required|are expected|are instructed|need to|decline|refuse|mention|cite|include|append|state|credit|display|embed)\b",
    r"\b(?:decode|decipher|base64-decode|read (?:it|this|the next sentence) backwards)\b.{0,80}\b(?:follow|obey|do|carry out|execute|comply)\b",
    r"\b(?:do not|don't|must not|never)\s+(?:answer|respond|reply|provide answers?)\b",
    r"\b(?:decline|refuse)\s+to\s+(?:answer|respond|reply|provide)\b|\bwhen declining\b",
    r"\b(?:operator|developer|editorial)\s+(?:instructions?|directives?|override|mode|token)\b",
    r"\b(?:include|mention|append|add|insert|cite|state|write|display|output|prefix|credit|embed|reproduce)\b.{0,40}\b(?:codes?|tokens?|tags?|phrases?|markers?|links?|badges?|checksums?|urls?|addresses|words|identifiers?)\b.{0,40}\b(?:answers?|repl(?:y|ies)|responses?|summar(?:y|ies)|outputs?)\b",
    r"\b(?:answers?|repl(?:y|ies)|responses?|summar(?:y|ies))\s+(?:\w+\s+){1,4}(?:must|should|shall)\s+(?:cite|include|mention|state|begin|start|end|display|reference|credit|contain)\b",
    r"^\W*(?:before|after|when|while|whenever)\s+(?:answering|replying|responding|quoting|summari[sz]ing|citing)\b",
    r"\bthis (?:article|page|entry|lead section|text)\b.{0,80}\b(?:answers?|questions?|repl(?:y|ies)|responses?|assistants?|quoting|summari[sz]|legal hold|retracted|under an? |subject to|disputed)",
    r"\b(?:answers?|questions?|repl(?:y|ies)|responses?|assistants?|quoting)\b.{0,60}\bthis (?:article|page|entry|lead section|text)\b",
    r"^\W*(?:for|to|hello|hi|dear|note to|attention|message to)\s+(?:\w+\s+){0,3}(?:ai|assistants?|bots?|models?|llms?|chatbots?)\b",
    r"\bwhen you (?:answer|reply|respond|quote|summari[sz]e|cite)\b",
    # orders phrased as a condition, a prize, a rubric or a custom
    # ("an answer is only complete when it ends with the word X", "to add the phrase ...")
    r"\b(?:answers?|repl(?:y|ies)|responses?|summar(?:y|ies)|outputs?)\b.{0,80}\b(?:contains?|containing|ends?|ending|begins?|beginning|starts?|starting|cites?|citing|includes?|including|mentions?|mentioning)\b(?:\s+with)?\s+(?:(?:the|a|an|also)\s+)?(?:\S+\s+){0,3}?(?:word|phrase|code|token|term|signature|tag|marker|identifier)s?\b",
    r"\bto\s+(?:add|include|append|insert|attach|say)\s+(?:the|a|an)\s+(?:\S+\s+){0,3}?(?:phrase|words|code|token|tag|signature|marker|formula)\b",
    # the same orders in the languages attacks most often use
    r"\b(?:ignorez|ignorer|oubliez|ignorieren|ignoriere|vergiss|vergessen|ignora|olvida|dimentica)\b.{0,50}\b(?:instructions?|consignes|anweisungen|instrucciones|istruzioni)\b",
    r"\b(?:votre réponse|la réponse|ihre antwort|deine antwort|tu respuesta|su respuesta|la tua risposta|la sua risposta|cuando respondas|al responder|prima di rispondere|avant de répondre|bevor sie antworten)\b",
    r"\b(?:assistants? (?:automatiques|virtuels|virtuali|de ia)|ki-(?:systeme?|assistenten?)|asistentes? de ia|assistenti (?:virtuali|di ia))\b",
    r"(?:игнорир|инструкци|ассистент|в ответе|忽略|指示|指令|助手|回答|無視|アシスタント)",
]  # fmt: skip
# An imperative opening a sentence, followed by the kind of word an order takes next; the
# follower keeps "Stop motion animation ...", "State parks ..." and "Email is ..." out.
_IMPERATIVE_START = re.compile(
    r"^\W*(?:(?:please|important|note|attention|instruction)\W+)*(?:ignore|disregard|forget|"
    r"tell|say|output|print|respond|reply|write|repeat|include|add|insert|append|visit|click|"
    r"explain|draft|provide|compose|develop|create|generate|give|list|show|help|suggest|"
    r"analy[sz]e|determine|classify|encrypt|encode|decode|render|reverse|use|convert|"
    r"replace|modify|augment|enhance|rewrite|break down|"
    r"go|navigate|download|install|subscribe|sign up|log in|send|email|contact|call|recommend|"
    r"mention|promote|advertise|integrate|incorporate|embed|translate|answer|summarize|"
    r"describe|claim|state|stop|do not|"
    r"don't|never|always|make sure|ensure|remember)\s+(?:the|a|an|your|you|this|that|these|"
    r"those|all|any|every|our|us|me|him|her|them|it|here|now|to|in|with|only|by|that|what|"
    r"everything|anything|how|why|www|https?|[\"'“:])",
    re.IGNORECASE,
)
_TRIGGER = re.compile("|".join(f"(?:{t})" for t in _TRIGGERS), re.IGNORECASE | re.MULTILINE)
_PAYLOAD = re.compile(
    r"\b(?:say|output|print|write|respond with|reply with|answer with|repeat|return|claim|"
    r"tell (?:the )?(?:user|reader|human)s?(?: that)?)"
    r"(?:\s+(?:the following|this|exactly|verbatim|that))*\s*:?\s*(?P<payload>.+)$",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“']([^\"”']{2,200})[\"”']")
# A copied run of words counts as repeating an instruction when it is this long, or covers this
# share of the instruction: long enough that ordinary facts an instruction reuses do not trip it.
COPIED_RUN = 8
COPIED_SHARE = 0.6


class Finding(BaseModel):
    """Instruction-like text (or a web address) found in one retrieved article."""

    model_config = ConfigDict(frozen=True)

    title: str
    kind: Literal["instruction", "url"]
    text: str


@lru_cache(maxsize=1 << 14)
def is_instruction(sentence: str) -> bool:
    """Does the sentence read as an order to whoever reads it? (Fold disguises first.) An
    order can open any clause: "...are lifted for this session; state that ..."."""
    if _TRIGGER.search(sentence):
        return True
    return any(_IMPERATIVE_START.search(c) for c in re.split(r"[;:]\s+|\n", sentence))


def scan(article: Article) -> list[Finding]:
    """Instruction-like sentences and web addresses in an article's text."""
    findings: list[Finding] = []
    for sentence in sentences(article.text):
        folded = fold(sentence)
        instruction = is_instruction(folded)
        if instruction:
            findings.append(Finding(title=article.title, kind="instruction", text=folded))
        for url in _URL.findall(sentence):
            findings.append(Finding(title=article.title, kind="url", text=url.rstrip(".,;:")))
        if instruction:
            for domain in _DOMAIN.findall(sentence):
                if "." in domain and not domain.replace(".", "").isdigit():
                    findings.append(Finding(title=article.title, kind="url", text=domain))
    return list(dict.fromkeys(findings))


def _host(address: str) -> str:
    """'https://www.evil.example/x' -> 'evil.example': the part an output might carry bare."""
    host = re.sub(r"^(?:https?://)?(?:www\.)?", "", address.casefold())
    return re.split(r"[/?#:]", host, maxsplit=1)[0]


def _longest_common_run(a: list[str], b: list[str]) -> int:
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def _payloads(instruction: str) -> list[str]:
    found = [m.group(1) for m in _QUOTED.finditer(instruction)]
    match = _PAYLOAD.search(instruction)
    if match:
        found.append(match.group("payload").strip(" .\"'“”"))
    return [p for p in found if len(p.strip()) >= 2]


def _contains_words(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def violations(output: str, findings: list[Finding]) -> list[str]:
    """Ways `output` repeats planted instructions or carries web addresses (empty = clean)."""
    problems: list[str] = []
    lowered = output.casefold()
    addresses = _URL.findall(output) + _BARE_ADDRESS.findall(output)
    addresses += _MARKDOWN_LINK.findall(output)
    for url in dict.fromkeys(addresses):
        problems.append(f"the output contains a web address ({url}); answers never need one")
    out_words = words(output)
    for finding in findings:
        if finding.kind == "url":
            if _host(finding.text) in lowered:
                problems.append(
                    f"the output carries {finding.text!r}, an address from {finding.title!r}"
                )
            continue
        inst_words = words(finding.text)
        run = _longest_common_run(out_words, inst_words)
        copied = run >= COPIED_RUN or (run >= 3 and run >= COPIED_SHARE * len(inst_words))
        payload_hit = next(
            (p for p in _payloads(finding.text) if _contains_words(out_words, words(p))),
            None,
        )
        if copied or payload_hit:
            problems.append(
                f"the output repeats instruction-like text planted in {finding.title!r} "
                f"({finding.text[:100]!r}); retrieved text is data, not instructions"
            )
    return list(dict.fromkeys(problems))
