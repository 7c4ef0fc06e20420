"""A recorded run, read back for a benchmark that replays it without a model call.

The `snapping` and `reading --journal` benchmarks both start from a run's journal folder
(`results/journals/RUN_ID`): its trials, the suite its `meta.json` names, and, for a proposal,
the articles the model had fetched when it made it.
"""

from __future__ import annotations

from pathlib import Path

from wikiqa.agent.grounding import Fetched, repaired, trimmed
from wikiqa.evals.graders import correctness_of
from wikiqa.evals.labels.validation import LabelledExample
from wikiqa.evals.paths import ROOT
from wikiqa.evals.running.records import RunMeta
from wikiqa.evals.tasks.task import Task, load_tasks
from wikiqa.inputs import MiB, read_text
from wikiqa.models import CitationArg
from wikiqa.sources import WikiSource


def run_journal(path: Path) -> tuple[Path, RunMeta, dict[str, Task]]:
    """The journal file of the run at `path` (its folder or its `journal.jsonl`), its recorded
    metadata, and the tasks of the suite it ran, by id. A committed journal names its suite
    relative to the repository, so that is where a relative path is looked up."""
    folder = path if path.is_dir() else path.parent
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        raise ValueError(f"{folder}: no meta.json (not a run's journal folder)")
    meta = RunMeta.model_validate_json(read_text(meta_path, MiB, "run metadata"))
    suite = Path(meta.suite_path)
    suite = suite if suite.is_absolute() else ROOT / suite
    return folder / "journal.jsonl", meta, {t.id: t for t in load_tasks(suite)}


def trial_of(example: LabelledExample) -> int:
    """The trial a proposal was made in (its id is `TASK-tTRIAL-N`, see `proposals`)."""
    return int(example.id.rpartition("-t")[2].split("-")[0])


def fetched_at(example: LabelledExample, source: WikiSource) -> Fetched:
    """The articles the model had fetched when it made this proposal, from the run's source."""
    fetched = Fetched()
    for title in example.retrieved:
        article = source.get_article(title)
        if article is not None:
            fetched.add(title, article)
    return fetched


def offline_outcome(task: Task, text: str) -> str:
    """What an answer text would score: `answered_unanswerable` for a task that should be
    refused, else the offline tier's SimpleQA outcome (`undecided` where it leaves the answer
    to a judge)."""
    if task.should_refuse:
        return "answered_unanswerable"
    graded = correctness_of(task, text)
    return str(
        graded.detail.get("outcome")
        or ("undecided" if graded.verdict == "needs_judge" else graded.verdict)
    )


def as_checked(citations: list[CitationArg], fetched: Fetched, meta: RunMeta) -> list[CitationArg]:
    """The citations as the run's own checks saw them: trimmed first when it ran `trim_quotes`."""
    return repaired(citations, fetched, trimmed) if meta.config.trim_quotes else citations
