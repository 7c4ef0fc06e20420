"""Grader validation: grader verdicts against human labels, agreement per dimension.

Validate the graders before trusting the scores. Each labelled example is an
answer (or refusal) someone might give to a dev-suite task, the articles it was given, and a
human's verdict per declared dimension. The graders see exactly what they would see in a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from wikiqa.agent import (
    AgentResult,
    Answer,
    Citation,
    Output,
    Refusal,
    Retrieved,
    TraceEvent,
    quotable_text,
)
from wikiqa.agent.citing import UNRESOLVED
from wikiqa.agent.reading import short_answer
from wikiqa.evals.graders import grade
from wikiqa.evals.graders.judge import Judge
from wikiqa.evals.running.records import TrialRecord
from wikiqa.evals.tasks.task import Task, load_tasks
from wikiqa.inputs import MiB, read_objects, validate
from wikiqa.models import MAX_ANSWER
from wikiqa.project import suites_dir
from wikiqa.sources import InjectionSource, WikiSource


class LabelledExample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    task_id: str
    answer: Output
    retrieved: list[str] = Field(description="Titles the answerer had fetched.")
    labels: dict[str, str] = Field(description="dimension -> pass | fail | n/a (a human's call)")
    note: str = ""


class LabelError(ValueError):
    """A label file is missing or malformed; the message names the file and line."""


VERDICTS = frozenset({"pass", "fail", "n/a"})


def load_labels(path: Path) -> list[LabelledExample]:
    """Parse a label file (JSON lines); every problem names the file and line."""
    examples, seen = [], set()
    for lineno, record in read_objects(path, 64 * MiB, "label file", LabelError):
        example = validate(LabelledExample, record, f"{path}:{lineno}", LabelError)
        bad = {d: v for d, v in example.labels.items() if v not in VERDICTS}
        if bad:
            raise LabelError(f"{path}:{lineno}: labels must be pass, fail or n/a, got {bad}")
        if example.id in seen:
            raise LabelError(f"{path}:{lineno}: duplicate example id {example.id!r}")
        seen.add(example.id)
        examples.append(example)
    if not examples:
        raise LabelError(f"{path}: no labelled examples")
    return examples


def proposals(
    trials: Mapping[tuple[str, int], TrialRecord], reading: bool = False
) -> list[LabelledExample]:
    """Every answer and refusal a model proposed in a run, unlabelled, ready for a human.

    Read from the trace, not the final output: the agent rejects a submission whose quotes are
    not verbatim, so the final outputs of a weak model are mostly the loop's own refusals, and
    the model's paraphrases and hallucinations survive only as the submissions it proposed.
    The graders are then asked what they would say had such a text been returned.
    `retrieved` is what the model had fetched when it proposed, the fetches of the proposal's
    own turn included (the loop runs a turn's calls in order, and a fetch and a submission in
    one turn is a model's way of reading and citing at once; its fetch events follow the
    turn's model event in the trace); identical proposals within a trial are kept once.
    Label each example's
    `labels` by hand (dimension -> pass | fail | n/a) before using it.

    In the reading mode (`reading`) the model proposes a short answer in plain text and the code
    attributes it: each reply's answer is a proposal, cited as the trial's output cites it when
    the output is that answer, else with an `UNREADABLE` citation (no sentence was found to state
    it, or the attributed submission failed its checks); a reply saying it does not know is a
    refusal."""
    if reading:
        return _read_proposals(trials)

    out: list[LabelledExample] = []
    for (task_id, trial), record in sorted(trials.items()):
        trace = record.result.trace
        fetched: list[str] = []
        found: list[tuple[Output, list[str]]] = []
        for i, event in enumerate(trace):
            if _fetched(event):
                fetched.append(str(event.detail["title"]))
            if event.kind != "model":
                continue
            turn = []  # this turn's own fetches: the events after it, up to the next model turn
            for later in trace[i + 1 :]:
                if later.kind == "model":
                    break
                turn += [str(later.detail["title"])] if _fetched(later) else []
            for call in event.detail.get("calls", []):
                answer = _proposed(call)
                if answer is not None:
                    found.append((answer, fetched + turn))
        out += _unlabelled(task_id, trial, found)
    return out


def _read_proposals(trials: Mapping[tuple[str, int], TrialRecord]) -> list[LabelledExample]:
    out: list[LabelledExample] = []
    for (task_id, trial), record in sorted(trials.items()):
        final = record.result.output
        fetched = [str(e.detail["title"]) for e in record.result.trace if _fetched(e)]
        found: list[tuple[Output, list[str]]] = []
        for event in record.result.trace:
            if event.kind != "model" or event.detail.get("calls"):
                continue
            said = short_answer(str(event.detail.get("text") or ""))
            proposal: Output = (
                Refusal(reason="The model said it does not know.", reason_code="not_supported")
                if said is None
                else Answer(
                    text=said,
                    citations=final.citations
                    if isinstance(final, Answer) and final.text == said
                    else [UNREADABLE],
                )
            )
            found.append((proposal, fetched))
        out += _unlabelled(task_id, trial, found)
    return out


def _unlabelled(
    task_id: str, trial: int, found: list[tuple[Output, list[str]]]
) -> list[LabelledExample]:
    """A trial's proposals as unlabelled examples, each distinct one once (a repair turn often
    resubmits the same text), numbered in order: `TASK-tTRIAL-N`."""
    out: list[LabelledExample] = []
    seen: set[str] = set()
    for answer, retrieved in found:
        if answer.model_dump_json() in seen:
            continue
        seen.add(answer.model_dump_json())
        out.append(
            LabelledExample(
                id=f"{task_id}-t{trial}-{len(seen) - 1}",
                task_id=task_id,
                answer=answer,
                retrieved=list(dict.fromkeys(retrieved)),
                labels={},
            )
        )
    return out


def _fetched(event: TraceEvent) -> bool:
    """A fetch that returned an article (a failed one has no revision)."""
    return event.kind == "fetch" and "revision_id" in event.detail


# What a citation the loop could not read is read as: a placeholder that no check passes. Dropping
# it instead would turn a submission the loop rejected into one with only its good citations.
UNREADABLE = Citation(title="?", quote=UNRESOLVED)


def _proposed(call: dict[str, Any]) -> Output | None:
    """A model's logged call as the output it proposed. A citation by number (the
    cite_sentences lever) is read with its sentence put in (`quoted`); a citation that cannot be
    read, a malformed call and a submission without citations, all of which the loop rejects,
    carry an `UNREADABLE` citation, so a replay rejects them too."""
    given = call.get("arguments") or {}
    arguments = call.get("quoted") or given
    if call.get("name") == "refuse" and isinstance(arguments.get("reason"), str):
        return Refusal(reason=arguments["reason"], reason_code="not_supported")
    text = arguments.get("answer")
    if call.get("name") != "submit_answer" or not isinstance(text, str) or not text:
        return None  # no answer to read (the loop calls an empty one malformed)
    listed = arguments.get("citations")
    listed = listed if isinstance(listed, list) else []
    citations = [
        Citation(title=c["title"], quote=c["quote"])
        if isinstance(c, dict)
        and set(c) == {"title", "quote"}  # an extra key is malformed to the loop too
        and isinstance(c["title"], str)
        and c["title"]
        and isinstance(c["quote"], str)
        and c["quote"]
        else UNREADABLE
        for c in listed
    ]
    # journals written before the placeholders dropped a citation `resolve` could not resolve
    cited = given.get("citations")
    dropped = len(cited) - len(listed) if isinstance(cited, list) else 0
    citations += [UNREADABLE] * max(dropped, 0)
    if call.get("error") or not citations or len(text) > MAX_ANSWER:
        citations.append(UNREADABLE)
    return Answer(text=text, citations=citations)


def _result(example: LabelledExample, task: Task, source: WikiSource) -> AgentResult:
    if task.injection is not None:
        source = InjectionSource(source, task.injection.plants)
    retrieved = []
    for title in example.retrieved:
        article = source.get_article(title)
        if article is None:
            raise ValueError(f"{example.id}: {title!r} is not in the source")
        retrieved.append(
            Retrieved(title=article.title, url=article.url, text=quotable_text(article))
        )
    return AgentResult(
        question=task.question, output=example.answer, needs_human_review=False, confidence=0.0,
        retrieved=retrieved, model="human-labelled", source=source.name, prompt_hash="-",
    )  # fmt: skip


def compare(
    examples: list[LabelledExample],
    source: WikiSource,
    judge: Judge | None = None,
    suite: Path | list[Path] | None = None,
) -> pd.DataFrame:
    """One row per example x labelled dimension: the human's verdict and the grader's, the
    tasks read from `suite` (the project's dev suite when None)."""
    suite = suite if suite is not None else suites_dir() / "dev.jsonl"
    suites = suite if isinstance(suite, list) else [suite]
    tasks = {t.id: t for path in suites for t in load_tasks(path)}
    rows = []
    for example in examples:
        task = tasks.get(example.task_id)
        if task is None:
            raise LabelError(
                f"{example.id}: task {example.task_id!r} is not in {', '.join(map(str, suites))}"
            )
        grades = {g.dimension: g for g in grade(task, _result(example, task, source), judge).grades}
        for dimension, human in example.labels.items():
            if dimension not in grades:
                raise LabelError(f"{example.id}: task {task.id!r} does not grade {dimension!r}")
            g = grades[dimension]
            rows.append(
                {
                    "example": example.id,
                    "task_id": task.id,
                    "dimension": dimension,
                    "human": human,
                    "grader": g.verdict,
                    "tier": g.tier,
                    "agree": g.verdict == human,
                    "kind": example.answer.kind,
                    "note": example.note,
                }
            )
    return pd.DataFrame.from_records(rows)


def agreement(frame: pd.DataFrame) -> pd.DataFrame:
    """Per dimension: labelled examples, agreements, the rate, and how many the grader left
    to a judge (counted as disagreement: the tier did not decide)."""
    table = frame.groupby("dimension", sort=False).agg(
        labelled=("agree", "size"),
        agree=("agree", "sum"),
        needs_judge=("grader", lambda v: int((v == "needs_judge").sum())),
    )
    table["rate"] = (table["agree"] / table["labelled"]).round(3)
    decided = table["labelled"] - table["needs_judge"]
    table["rate_when_decided"] = (table["agree"] / decided.where(decided > 0)).round(3)
    return table


def report(frame: pd.DataFrame) -> dict[str, Any]:
    """What `wikiqa validate` prints: per dimension labelled / agree / needs_judge, the share of
    rows the offline tier decided, and correctness false passes (grader pass, human fail) over
    the examples labelled for correctness."""
    dimensions = {
        str(dim): {
            "labelled": len(rows),
            "agree": int(rows["agree"].sum()),
            "needs_judge": int((rows["grader"] == "needs_judge").sum()),
        }
        for dim, rows in frame.groupby("dimension", sort=False)
    }
    judged = _judge_rows(frame)
    correctness = frame[frame["dimension"] == "correctness"]
    false_passes = int(((correctness["grader"] == "pass") & (correctness["human"] == "fail")).sum())
    labelled = len(frame)
    undecided = sum(d["needs_judge"] for d in dimensions.values())
    return {
        "dimensions": dimensions,
        "examples": int(frame["example"].nunique()),
        "decided": round((labelled - undecided) / labelled, 4) if labelled else None,
        "correctness_false_passes": false_passes,
        "correctness_labelled": len(correctness),
        "judge": judged,
    }


# A judge is adopted for a dimension only where it agrees with the humans on the rows it decides
# at least this often, with the 95% interval's lower bound at least this high.
ADOPT_AGREEMENT, ADOPT_LOWER = 0.90, 0.85


def _judge_rows(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per dimension the judge was asked about (the rows the offline tier left undecided): how
    many it was asked, how many it decided, how many of those agree with the human, and whether
    that clears the adoption bar. Empty without a judge."""
    from wikiqa.evals.analysis.stats import wilson

    out: dict[str, dict[str, Any]] = {}
    for dim, rows in frame.groupby("dimension", sort=False):
        asked = rows[(rows["tier"] == "judge") | (rows["grader"] == "needs_judge")]
        if not (rows["tier"] == "judge").any():
            continue
        decided = asked[asked["grader"] != "needs_judge"]
        agree = int(decided["agree"].sum())
        low, _ = wilson(agree, len(decided)) or (0.0, 0.0)
        rate = agree / len(decided) if len(decided) else 0.0
        out[str(dim)] = {
            "asked": len(asked),
            "decided": len(decided),
            "agree": agree,
            "agreement": round(rate, 4),
            "lower": round(low, 4),
            "adopt": bool(len(decided) and rate >= ADOPT_AGREEMENT and low >= ADOPT_LOWER),
        }
    return out


def packet(examples: list[LabelledExample], source: WikiSource, suite: Path | list[Path]) -> str:
    """Examples as a human labels them (markdown): the task, its reference and gold aliases, the
    answer with its citations, and the full text of every article the answerer had fetched.
    Nothing of the graders' verdicts is shown, so labels stay independent of them."""
    suites = suite if isinstance(suite, list) else [suite]
    tasks = {t.id: t for path in suites for t in load_tasks(path)}
    out = []
    for example in examples:
        task = tasks[example.task_id]
        result = _result(example, task, source)
        answer = example.answer
        lines = [
            f"## {example.id}",
            f"- task `{task.id}` ({task.category}); should refuse: {task.should_refuse}",
            f"- question: {task.question}",
            f"- reference answer: {task.reference_answer or '(none)'}",
            f"- gold aliases: {task.answers or '(none)'}",
            f"- expected sources: {task.expected_sources or '(none)'}",
            f"- dimensions to label: {', '.join(task.dimensions)}",
        ]
        if isinstance(answer, Answer):
            lines.append(f"- ANSWER: {answer.text}")
            lines += [f'  - cites [{c.title}]: "{c.quote}"' for c in answer.citations]
        else:
            lines.append(f"- REFUSAL ({answer.reason_code}): {answer.reason}")
        for item in result.retrieved:
            lines += [f"- fetched [{item.title}]:", f"  > {item.text}"]
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"
