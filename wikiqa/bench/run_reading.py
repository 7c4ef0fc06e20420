"""`reading --journal`: where a recorded run lost its correct answers, stage by stage.

The `reading` benchmark walks the extractive answerer's own pipeline; a model agent fetches and
reads in its own way, so for it the stages are read from what it did, in the run's journal,
without a model call. For each trial of an answerable factual task (injection tasks left out):

    retrieval   an expected source is among the articles the agent fetched
    reach       a sentence of what it fetched states a gold alias (loose, as in `reading`)
    proposed    one of the model's proposals states a gold alias (read from the trace: a
                rejected submission counts), and whether that alias was in reach (else the
                model stated it from memory)
    outcome     what the trial returned, graded by the offline tier: correct, incorrect,
                undecided, or not attempted (a refusal)

A trial that ends incorrect or not attempted (undecided ones are left to a judge, and humans call
most of them correct) is then put down to one cause, apart for the gold in reach or not: the
model proposed the gold but its quote was not verbatim (`citation_problems`), or its answer was
not in its quotes (`support_problems`), each check as the run ran it (its `strict_support`,
its `trim_quotes`), or it passed both and still did not end correct; or the model never
proposed the gold (it read the text wrong, or refused). The first two are what quote repair or a looser check would recover (see `snapping`
for what that costs); the last is the reader's. Counts are per trial, with 95% Wilson intervals.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from wikiqa.agent import Answer, quotable_text
from wikiqa.agent.decide import support_problems
from wikiqa.agent.grounding import citation_problems
from wikiqa.bench.journals import as_checked, fetched_at, offline_outcome, run_journal, trial_of
from wikiqa.evals.analysis.stats import count_text
from wikiqa.evals.graders.aliases import stated
from wikiqa.evals.labels.validation import LabelledExample, proposals
from wikiqa.evals.running.journal import Journal
from wikiqa.evals.running.records import RunMeta
from wikiqa.evals.tasks.task import Task
from wikiqa.models import CitationArg, SubmitArgs
from wikiqa.sources import SnapshotSource, WikiSource
from wikiqa.text import sentences

OUTCOMES = ("correct", "incorrect", "undecided", "not_attempted")
CAUSES = ("quote_not_verbatim", "answer_not_in_quotes", "passed_checks", "never_proposed")


def _in_reach(task: Task, titles: list[str], source: WikiSource) -> bool:
    for title in titles:
        article = source.get_article(title)
        if article is not None and any(
            stated(s, task.answers) for s in sentences(quotable_text(article))
        ):
            return True
    return False


def _cause(gold: LabelledExample | None, task: Task, source: WikiSource, meta: RunMeta) -> str:
    """Why a trial ended incorrect or not attempted (see the module docstring)."""
    if gold is None:
        return "never_proposed"
    assert isinstance(gold.answer, Answer)
    fetched = fetched_at(gold, source)
    cites = [CitationArg(title=c.title, quote=c.quote) for c in gold.answer.citations]
    cites = as_checked(cites, fetched, meta)
    if citation_problems(cites, fetched):
        return "quote_not_verbatim"
    submit = SubmitArgs(answer=gold.answer.text, citations=cites)
    if support_problems(submit, task.question, meta.config.strict_support):
        return "answer_not_in_quotes"
    return "passed_checks"


def bench_run_reading(journal: Path, source: WikiSource | None = None) -> dict[str, Any]:
    """The stage counts over a run's answerable factual trials (see the module docstring)."""
    path, meta, tasks = run_journal(journal)
    source = source if source is not None else SnapshotSource()
    by_trial: dict[tuple[str, int], list[LabelledExample]] = defaultdict(list)
    for example in proposals(path):
        by_trial[(example.task_id, trial_of(example))].append(example)
    counts: Counter[str] = Counter()
    lost: dict[str, Counter[str]] = {"in_reach": Counter(), "out_of_reach": Counter()}
    for (task_id, trial), record in sorted(Journal(path).read().items()):
        task = tasks.get(task_id)
        if task is None:
            raise ValueError(f"{path}: task {task_id!r} is not in the run's suite")
        answerable = task.category == "factual" and task.answers and not task.should_refuse
        if not answerable or task.injection is not None or record.failed:
            continue
        fetched = [
            str(e.detail["title"])
            for e in record.result.trace
            if e.kind == "fetch" and "revision_id" in e.detail
        ]
        reach = _in_reach(task, list(dict.fromkeys(fetched)), source)
        gold = next(
            (
                ex
                for ex in by_trial[(task_id, trial)]
                if isinstance(ex.answer, Answer) and stated(ex.answer.text, task.answers)
            ),
            None,
        )
        output = record.result.output
        outcome = (
            offline_outcome(task, output.text) if isinstance(output, Answer) else "not_attempted"
        )
        counts["trials"] += 1
        counts["expected_fetched"] += bool(set(task.expected_sources) & set(fetched))
        counts["in_reach"] += reach
        counts["gold_proposed"] += gold is not None
        counts["gold_proposed_out_of_reach"] += gold is not None and not reach
        counts[outcome] += 1
        if outcome in ("incorrect", "not_attempted"):
            side = "in_reach" if reach else "out_of_reach"
            lost[side][_cause(gold, task, source, meta)] += 1
    return {
        "journal": str(path),
        "run_id": meta.run_id,
        "model": meta.model,
        **{k: counts[k] for k in ("trials", "expected_fetched", "in_reach", "gold_proposed")},
        "gold_proposed_out_of_reach": counts["gold_proposed_out_of_reach"],
        "outcomes": {k: counts[k] for k in OUTCOMES},
        "lost": {side: {k: found[k] for k in CAUSES} for side, found in lost.items()},
    }


def report(figures: dict[str, Any]) -> str:
    """One line per stage, then the trials ending incorrect or not attempted, by cause."""
    n = figures["trials"]
    lines = [
        f"reading, from the journal of {figures['run_id']} ({figures['model']}): {n} trials of "
        "answerable factual tasks",
        f"  retrieval: an expected source fetched      {count_text(figures['expected_fetched'], n)}",
        f"  reach: a fetched sentence states an alias   {count_text(figures['in_reach'], n)}",
        f"  a proposal states an alias                  {count_text(figures['gold_proposed'], n)}",
        f"    ... not in what was fetched (from memory) {figures['gold_proposed_out_of_reach']}",
        "  outcome: "
        + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in figures["outcomes"].items()),
    ]
    for side, found in figures["lost"].items():
        total = sum(found.values())
        lines.append(
            f"  incorrect or not attempted, the gold {side.replace('_', ' ')}: {total} trials"
        )
        for cause, count in found.items():
            lines.append(f"    {cause.replace('_', ' '):<22} {count_text(count, total)}")
    return "\n".join(lines)
