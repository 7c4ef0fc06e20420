"""Losses by stage: where a recorded run's answerable trials lost the gold answer.

Read from the run's log alone, without a model call, so it works for any model and for a
run cut off halfway. For each trial of an answerable factual task (injection tasks and trials
lost to infrastructure errors left out):

    retrieved   an expected source is among the articles the agent fetched
    in reach    a sentence of what it fetched, as it read it, states a gold alias (the run
                summary's "gold in the text read"; loose: a short alias such as "4" is stated by
                sentences that do not answer)
    proposed    one of the model's proposals states a gold alias (read from the trace, so a
                submission the loop rejected counts), and whether that alias was in reach (else
                the model stated it from memory)
    outcome     what the trial returned, graded by the offline tier: correct, incorrect,
                undecided (left to a judge), or not attempted (a refusal)

Each trial ending incorrect or not attempted is put down to the stage that lost it, as every
run summary does (`wikiqa.evals.analysis.retrieval`: not retrieved, retrieved but not read, read
but not answered, answered wrong), and to one cause, apart for the gold in reach or not: in the
reading mode, the model answered with the gold but the code found no sentence stating it, or the
attributed submission failed its checks (`not_attributed`, a cause only reading-mode runs have);
the model proposed the gold but its quote was not verbatim (`citation_problems`)
or its answer was not in its quotes (`support_problems`), each check as the run ran it (its
`strict_support`, its `trim_quotes`); it passed both and still did not end correct; or the
model never proposed the gold (it read the text wrong, or refused). The first two are losses to
the grounding checks, the last the reader's: which dominates says whether the next lever belongs
to the checks or to the model. Counts are per trial; `losses_text` prints each with its 95%
Wilson interval.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from wikiqa.agent import Answer
from wikiqa.agent.decide import support_problems
from wikiqa.agent.grounding import Fetched, citation_problems, repaired, trimmed
from wikiqa.evals import results_dir
from wikiqa.evals.analysis.retrieval import CAUSES as STAGES
from wikiqa.evals.analysis.retrieval import cause as stage_lost
from wikiqa.evals.analysis.retrieval import gold_in, trial_retrieval
from wikiqa.evals.analysis.stats import count_text
from wikiqa.evals.graders import correctness_of
from wikiqa.evals.graders.aliases import stated
from wikiqa.evals.labels.validation import UNREADABLE, LabelledExample, proposals
from wikiqa.evals.running.records import RunMeta
from wikiqa.evals.running.runlog import find_log
from wikiqa.evals.tasks.task import Task, load_tasks
from wikiqa.models import CitationArg, SubmitArgs
from wikiqa.project import project_root
from wikiqa.sources import SnapshotSource, WikiSource

OUTCOMES = ("correct", "incorrect", "undecided", "not_attempted")
CAUSES = (
    "not_attributed",
    "quote_not_verbatim",
    "answer_not_in_quotes",
    "passed_checks",
    "never_proposed",
)


def losses_by_stage(
    run: str | Path, source: WikiSource | None = None, out: Path | None = None
) -> dict[str, Any]:
    """The stage counts over a run's answerable factual trials (see the module docstring).

    `run` is a run id (its log looked up under the results folder `out`, then its scratch
    area) or a run log file (`results/runs/RUN_ID.log.jsonl`); `source` is the run's source
    (default: the shipped snapshot)."""
    log = find_log(run, out or results_dir())
    meta, path = log.meta, log.path
    suite = Path(meta.suite_path)
    suite = suite if suite.is_absolute() else project_root() / suite
    tasks = {t.id: t for t in load_tasks(suite)}
    source = source if source is not None else SnapshotSource()
    by_trial: dict[tuple[str, int], list[LabelledExample]] = defaultdict(list)
    reading = meta.config.agent.mode == "reading"
    for example in proposals(log.trials, reading=reading):
        by_trial[(example.task_id, _trial_of(example))].append(example)
    counts: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    lost: dict[str, Counter[str]] = {"in_reach": Counter(), "out_of_reach": Counter()}
    for (task_id, trial), record in sorted(log.trials.items()):
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
        reach = gold_in((r.text for r in record.result.retrieved), task.answers)
        found = bool(trial_retrieval(task, record.result)["expected_found"])
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
            _offline_outcome(task, output.text) if isinstance(output, Answer) else "not_attempted"
        )
        counts["trials"] += 1
        counts["expected_fetched"] += bool(set(task.expected_sources) & set(fetched))
        counts["in_reach"] += reach
        counts["gold_proposed"] += gold is not None
        counts["gold_proposed_out_of_reach"] += gold is not None and not reach
        counts[outcome] += 1
        if outcome in ("incorrect", "not_attempted"):
            stages[stage_lost(found, reach, outcome == "not_attempted")] += 1
            side = "in_reach" if reach else "out_of_reach"
            lost[side][_cause(gold, task, source, meta)] += 1
    return {
        "log": str(path),
        "run_id": meta.run_id,
        "model": meta.model,
        **{k: counts[k] for k in ("trials", "expected_fetched", "in_reach", "gold_proposed")},
        "gold_proposed_out_of_reach": counts["gold_proposed_out_of_reach"],
        "outcomes": {k: counts[k] for k in OUTCOMES},
        "stages": {k: stages[k] for k in STAGES},
        "lost": {
            side: {k: found[k] for k in CAUSES if reading or k != "not_attributed"}
            for side, found in lost.items()
        },
    }


def losses_text(figures: dict[str, Any]) -> str:
    """One line per stage, then the trials ending incorrect or not attempted, by cause."""
    n = figures["trials"]
    lines = [
        f"losses by stage, from the log of {figures['run_id']} ({figures['model']}): {n} "
        "trials of answerable factual tasks",
        f"  retrieval: an expected source fetched      {count_text(figures['expected_fetched'], n)}",
        f"  reach: a fetched sentence states an alias   {count_text(figures['in_reach'], n)}",
        f"  a proposal states an alias                  {count_text(figures['gold_proposed'], n)}",
        f"    ... not in what was fetched (from memory) {figures['gold_proposed_out_of_reach']}",
        "  outcome: "
        + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in figures["outcomes"].items()),
        "  incorrect or not attempted, by the stage that lost it: "
        + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in figures["stages"].items()),
    ]
    for side, found in figures["lost"].items():
        total = sum(found.values())
        lines.append(
            f"  incorrect or not attempted, the gold {side.replace('_', ' ')}: {total} trials"
        )
        for cause, count in found.items():
            lines.append(f"    {cause.replace('_', ' '):<22} {count_text(count, total)}")
    return "\n".join(lines)


def _trial_of(example: LabelledExample) -> int:
    """The trial a proposal was made in (its id is `TASK-tTRIAL-N`, see `proposals`)."""
    return int(example.id.rpartition("-t")[2].split("-")[0])


def _offline_outcome(task: Task, text: str) -> str:
    """The offline tier's SimpleQA outcome of an answer text (`undecided` where it leaves the
    answer to a judge)."""
    graded = correctness_of(task, text)
    return str(
        graded.detail.get("outcome")
        or ("undecided" if graded.verdict == "needs_judge" else graded.verdict)
    )


def _cause(gold: LabelledExample | None, task: Task, source: WikiSource, meta: RunMeta) -> str:
    """Why a trial ended incorrect or not attempted (see the module docstring)."""
    if gold is None:
        return "never_proposed"
    assert isinstance(gold.answer, Answer)
    if meta.config.agent.mode == "reading" and UNREADABLE in gold.answer.citations:
        return "not_attributed"
    fetched = Fetched()  # what the model had fetched when it proposed the gold
    for title in gold.retrieved:
        article = source.get_article(title)
        if article is not None:
            fetched.add(title, article)
    cites = [CitationArg(title=c.title, quote=c.quote) for c in gold.answer.citations]
    if meta.config.agent.trim_quotes:  # the citations as the run's own checks saw them
        cites = repaired(cites, fetched, trimmed)
    if citation_problems(cites, fetched):
        return "quote_not_verbatim"
    submit = SubmitArgs(answer=gold.answer.text, citations=cites)
    if support_problems(submit, task.question, meta.config.agent.strict_support):
        return "answer_not_in_quotes"
    return "passed_checks"
