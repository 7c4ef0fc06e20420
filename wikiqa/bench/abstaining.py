"""`abstaining --journal RUN --below T`: the `abstain_below` lever replayed on a recorded run.

The lever acts after the model's last call, so the run with it is the recorded run with every
answer whose confidence is under T refused. This replays exactly that without a model call: each
such trial's output becomes the lever's own refusal (`decide.abstention`), and both versions are
graded by today's offline graders, so the two differ only by the lever. Reported: the answers it
refuses, by what the offline tier made of them; the unanswerable trials refused before and
after; and the tasks passing every dimension before and after, paired as `wikiqa compare` pairs
two runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from wikiqa.agent import Answer, Refusal
from wikiqa.agent.decide import abstention
from wikiqa.bench.journals import offline_outcome, run_journal
from wikiqa.evals.analysis.compare import compare
from wikiqa.evals.graders import grade
from wikiqa.evals.running.frame import to_frame
from wikiqa.evals.running.journal import Journal
from wikiqa.evals.running.records import TrialRecord
from wikiqa.evals.tasks.task import Task

OUTCOMES = ("correct", "incorrect", "undecided", "answered_unanswerable")


def _regraded(task: Task, record: TrialRecord, below: float | None) -> TrialRecord:
    """The trial graded by today's graders, with the lever at `below` (None: without it)."""
    result = record.result
    if below is not None and isinstance(result.output, Answer) and result.confidence < below:
        refusal = abstention(result.confidence, below)
        result = result.model_copy(
            update={"output": refusal, "confidence": 0.0, "signals": {}, "needs_human_review": True}
        )
    graded = grade(task, result)
    return record.model_copy(
        update={"result": result, "grades": graded.grades, "decision": graded.decision}
    )


def bench_abstaining(journal: Path, below: float) -> dict[str, Any]:
    """The lever at `below` replayed on the run at `journal` (see the module docstring)."""
    if not 0.0 <= below <= 1.0:
        raise ValueError(f"--below must be in [0, 1], got {below}")
    path, meta, tasks = run_journal(journal)
    if meta.config.abstain_below:  # its low-confidence refusals would count as "before"
        raise ValueError(
            f"{meta.run_id} already ran with abstain_below {meta.config.abstain_below:g}: replay "
            "on the run it was built on (its notebook's VS), whose answers are all still there"
        )
    records = {k: r for k, r in Journal(path).read().items() if not r.failed}
    for task_id, _ in records:
        if task_id not in tasks:
            raise ValueError(f"{path}: task {task_id!r} is not in the run's suite")
    ran = [tasks[t] for t in dict.fromkeys(task_id for task_id, _ in sorted(records))]
    before = {k: _regraded(tasks[k[0]], r, None) for k, r in records.items()}
    after = {k: _regraded(tasks[k[0]], r, below) for k, r in records.items()}
    refused: Counter[str] = Counter()
    for key, record in records.items():
        output = record.result.output
        if isinstance(output, Answer) and isinstance(after[key].result.output, Refusal):
            refused[offline_outcome(tasks[key[0]], output.text)] += 1
    unanswerable = [k for k in records if tasks[k[0]].should_refuse]

    def refusing(graded: dict[tuple[str, int], TrialRecord]) -> int:
        return sum(isinstance(graded[k].result.output, Refusal) for k in unanswerable)

    paired = compare(to_frame(meta, ran, before), to_frame(meta, ran, after)).rows["tasks"]
    answered = sum(isinstance(r.result.output, Answer) for r in records.values())
    return {
        "journal": str(path),
        "run_id": meta.run_id,
        "below": below,
        "trials": len(records),
        "answered": answered,
        "refused": {k: refused[k] for k in OUTCOMES},
        "unanswerable_trials": len(unanswerable),
        "unanswerable_refused": {"before": refusing(before), "after": refusing(after)},
        "tasks": paired,
    }


def report(figures: dict[str, Any]) -> str:
    """What the lever refuses, the unanswerables refused, and the paired change in tasks."""
    refused, n = figures["refused"], sum(figures["refused"].values())
    unanswerable, t = figures["unanswerable_refused"], figures["tasks"]
    lines = [
        f"abstaining below {figures['below']:g}, replayed on the journal of {figures['run_id']}: "
        f"{figures['trials']} trials, {figures['answered']} answered",
        f"  answers it refuses: {n} (the offline tier had them "
        + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in refused.items())
        + ")",
        f"  unanswerable trials refused: {unanswerable['before']} -> {unanswerable['after']} "
        f"of {figures['unanswerable_trials']}",
        f"  tasks passing every dimension: {t['a']:.3f} -> {t['b']:.3f}, "
        f"{t['diff']:+.3f} [{t['ci'][0]:+.3f}, {t['ci'][1]:+.3f}], {t['gained']} gained, "
        f"{t['lost']} lost, McNemar p={t['mcnemar_p']:.2f} (today's graders on both)",
    ]
    return "\n".join(lines)
