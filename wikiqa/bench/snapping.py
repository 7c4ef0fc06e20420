"""The `snapping` benchmark: what "quote repair" would do to a recorded run, before anyone runs it.

A weak model's submissions are mostly rejected for quotes that are not verbatim (Qwen, step 09:
63 of 239 citations). The obvious lever is to repair them in code: find the fetched passage the
quote was meant to be (verbatim in another fetched article, re-attributed; or the sentence, or
pair of sentences, whose content words cover the quote's) and submit that instead. This
benchmark asks what that lever would change, from a run's journal and nothing else:

- Each trial's proposals are replayed in order (`labels.validation.proposals`) through the
  agent's own checks (`citation_problems`, then `support_problems`), once as recorded and once
  with every failing citation snapped. The first that passes is what the trial would return:
  decoding is greedy and every prompt before it is the same, so this is the run the lever would
  give, up to that point, without a model call. A proposal is replayed only against what had
  been fetched when it was made.
- Each trial the lever changes is graded: an answer to a task that should be refused fails
  calibration; otherwise its correctness is the offline tier's verdict on the answer text.
- Trimming first (`trimmed`, the `trim_quotes` lever: a quote cut to its leading sentences that
  are verbatim), then snapping at three strictness settings: (recall, precision) of the quote's
  content-word stems in the span.
- Last, re-citing (`recite`): for a submission whose quotes are verbatim but do not back its
  answer (step 16's numbered citations are always verbatim, so snapping has nothing to do there),
  the one fetched sentence that makes the support checks pass is added to its citations, if it
  shares at least half of the question's content words (a sentence about the question, not just
  one holding the answer's words: Orange's "Orange is the colour between yellow and red" holds
  "orange", for "What was Neil Armstrong's favourite colour?", and shares one word of four).

Injection tasks are left out: the guard's findings are not in the journal to replay.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

from wikiqa.agent import Answer, quotable_text
from wikiqa.agent.decide import support_problems
from wikiqa.agent.grounding import (
    Fetched,
    Repair,
    citation_problems,
    repaired,
    strip_wrapping,
    trimmed,
)
from wikiqa.bench.journals import as_checked, fetched_at, offline_outcome, run_journal, trial_of
from wikiqa.evals.analysis.stats import count_text
from wikiqa.evals.labels.validation import LabelledExample, proposals
from wikiqa.evals.tasks.task import Task
from wikiqa.models import CitationArg, SubmitArgs
from wikiqa.sources import Article, SnapshotSource, WikiSource
from wikiqa.text import content_words, sentences, stem

SETTINGS = ((1.0, 0.8), (0.9, 0.5), (0.8, 0.3))  # (recall, precision), strict to loose
RECITE_SHARE = 0.5  # share of the question's content stems an added sentence must hold
RECITE = f"re-cite (question share {RECITE_SHARE:g})"
Fix = Callable[[Answer, list[CitationArg], Fetched, Task, bool], list[CitationArg]]


def _repairs() -> dict[str, Repair]:
    """The repairs replayed, by name: `trimmed` (the `trim_quotes` lever: drop a quote's
    non-verbatim tail, never add a word), then snapping at each strictness setting."""
    found: dict[str, Repair] = {"trim": trimmed}
    for recall, precision in SETTINGS:
        found[f"recall {recall:g} precision {precision:g}"] = partial(
            snap, recall=recall, precision=precision
        )
    return found


def _fixes() -> dict[str, Fix]:
    """Every replayed fix as one shape: the citations a proposal would go to the checks with."""

    def of(repair: Repair) -> Fix:
        return lambda _answer, cites, fetched, _task, _strict: repaired(cites, fetched, repair)

    found = {name: of(repair) for name, repair in _repairs().items()}
    found[RECITE] = lambda answer, cites, fetched, task, strict: (
        recite(answer.text, task.question, cites, fetched, strict) or cites
    )
    return found


def _stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


def recite(
    answer: str,
    question: str,
    citations: list[CitationArg],
    fetched: Fetched,
    strict: bool,
    share: float = RECITE_SHARE,
) -> list[CitationArg] | None:
    """`citations` plus the fetched sentence that makes the support checks pass and shares the
    most of the question's content stems (at least `share`); None when the citations are not
    verbatim, already back the answer, or no sentence does."""
    if citation_problems(citations, fetched):
        return None
    if not support_problems(SubmitArgs(answer=answer, citations=citations), question, strict):
        return None
    asked = _stems(question)
    best: tuple[float, CitationArg] | None = None
    for article in fetched.articles.values():
        for sentence in sentences(quotable_text(article)):
            held = len(asked & _stems(sentence)) / len(asked) if asked else 0.0
            if held < share or (best is not None and held <= best[0]):
                continue
            added = CitationArg(title=article.title, quote=sentence)
            submit = SubmitArgs(answer=answer, citations=[*citations, added])
            if not citation_problems([added], fetched) and not support_problems(
                submit, question, strict
            ):
                best = (held, added)
    return [*citations, best[1]] if best is not None else None


def snap(
    citation: CitationArg, fetched: Fetched, recall: float, precision: float
) -> CitationArg | None:
    """The citation made verbatim: its quote found in another fetched article (re-attributed),
    else the best-covering sentence or sentence pair of the fetched articles (the cited one
    first) when it reaches both `recall` and `precision`; None when nothing does."""
    quote = strip_wrapping(citation.quote)
    cited = fetched.get(citation.title)
    order: list[Article] = [a for a in fetched.articles.values() if a is not cited]
    order = [cited, *order] if cited is not None else order
    for article in order:
        if quote in quotable_text(article):
            return CitationArg(title=article.title, quote=quote)
    wanted = _stems(quote)
    if len(wanted) < 3:
        return None
    best: tuple[tuple[float, float], Article, str] | None = None
    for article in order:
        found = sentences(quotable_text(article))
        for span in [*found, *(f"{a} {b}" for a, b in pairwise(found))]:
            have = _stems(span)
            if not have:
                continue
            shared = len(wanted & have)
            score = (shared / len(wanted), shared / len(have))
            if best is None or score > best[0]:
                best = (score, article, span)
    if best is None or best[0][0] < recall or best[0][1] < precision:
        return None
    found_in, span = best[1], best[2]  # a joined pair is verbatim only if one space joined it
    return (
        CitationArg(title=found_in.title, quote=span) if span in quotable_text(found_in) else None
    )


def _passes(
    answer: Answer, citations: list[CitationArg], fetched: Fetched, task: Task, strict: bool
) -> bool:
    if citation_problems(citations, fetched):
        return False
    submit = SubmitArgs(answer=answer.text, citations=citations)
    return not support_problems(submit, task.question, strict)


def bench_snapping(journal: Path, source: WikiSource | None = None) -> dict[str, Any]:
    """Per strictness setting: trials answered as recorded and with snapping, and what the
    trials it changes would return, by outcome (counted per trial and per task). `journal` is
    a run's journal folder (`results/journals/RUN_ID`) or its `journal.jsonl`; the suite is the
    one its `meta.json` names; `source` is the run's source (the shipped snapshot)."""
    journal, meta, tasks = run_journal(journal)
    strict = meta.config.strict_support  # the run's own checks, as it ran them
    source = source if source is not None else SnapshotSource()
    trials: dict[tuple[str, int], list[LabelledExample]] = defaultdict(list)
    for example in proposals(journal):
        task = tasks.get(example.task_id)
        if task is None:
            raise ValueError(f"{journal}: task {example.task_id!r} is in none of the suites given")
        if task.injection is None and isinstance(example.answer, Answer):
            trials[(example.task_id, trial_of(example))].append(example)
    figures: dict[str, Any] = {"journal": str(journal), "trials_with_submissions": len(trials)}
    for name, fix in _fixes().items():
        answered = {"recorded": 0, "snapped": 0}
        changed: Counter[str] = Counter()
        tasks_changed: dict[str, set[str]] = defaultdict(set)
        for (task_id, _), examples in sorted(trials.items()):
            task = tasks[task_id]
            recorded = snapped = None
            for example in examples:
                assert isinstance(example.answer, Answer)
                fetched = fetched_at(example, source)
                cites = [
                    CitationArg(title=c.title, quote=c.quote) for c in example.answer.citations
                ]
                as_run = as_checked(cites, fetched, meta)
                if recorded is None and _passes(example.answer, as_run, fetched, task, strict):
                    recorded = example
                fixed = fix(example.answer, as_run, fetched, task, strict)
                if snapped is None and _passes(example.answer, fixed, fetched, task, strict):
                    snapped = example
            answered["recorded"] += recorded is not None
            answered["snapped"] += snapped is not None
            if snapped is not None and snapped is not recorded:
                outcome = offline_outcome(task, snapped.answer.text)  # type: ignore[union-attr]
                changed[outcome] += 1
                tasks_changed[outcome].add(task_id)
        figures[name] = {
            "answered": answered,
            "changed_trials": dict(changed),
            "changed_tasks": {k: sorted(v) for k, v in tasks_changed.items()},
        }
    return figures


def report(figures: dict[str, Any]) -> str:
    n = figures["trials_with_submissions"]
    lines = [
        f"snapping: quote repair replayed on {figures['journal']} ({n} trials that submitted; "
        "injection tasks left out)"
    ]
    for name, found in figures.items():
        if not isinstance(found, dict):
            continue
        a = found["answered"]
        lines.append(
            f"  {name}: answered {count_text(a['recorded'], n)} as recorded, "
            f"{count_text(a['snapped'], n)} with the fix"
        )
        for outcome, count in sorted(found["changed_trials"].items()):
            tasks = found["changed_tasks"][outcome]
            lines.append(
                f"    changed to {outcome}: {count} trials, {len(tasks)} tasks ({', '.join(tasks)})"
            )
    return "\n".join(lines)
