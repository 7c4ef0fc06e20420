"""The `reading` benchmark: where the offline answerer loses its correct answers, stage by stage.

Over a suite's answerable factual tasks (never a held-out split), walk the pipeline the extractive
answerer runs (search the question, fetch the top hits, quarantine, rank sentences) and count,
for each stage, on how many tasks the gold answer is still within reach:

    retrieval   an expected source among the top 1, 3, 5 hits
    evidence    a sentence of the top k fetched articles states a gold alias (k = 3, 5); loose,
                since a short alias ("4", "states") is stated by sentences that do not answer
    sentence    a sentence, submitted whole, is graded *correct* by the offline correctness grader
                (the ceiling of any whole-sentence reader, however good its choice)
    span        a short piece (<= 6 words) of a sentence states an alias: noun-phrase chunks
                (`chunks`), and the typed reader's spans for typed questions
    policy      what the shipped ranker's best sentence gets: states an alias, and its grade

The gap between "evidence" and "sentence" is what a whole-sentence answer loses to the grader's
doubts (an alias stated in passing is undecided, not correct); the gap between "span" and what a
span reader picks is the selection problem. Each figure is a count with its 95% Wilson interval.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from wikiqa.agent.quarantine import quarantine
from wikiqa.evals.analysis.stats import count_text
from wikiqa.evals.graders import correctness_of
from wikiqa.evals.graders.aliases import stated
from wikiqa.evals.tasks.task import Task, load_tasks, resolve_suite
from wikiqa.models.extractive import ExtractiveModel
from wikiqa.models.reading import answer_type, spans
from wikiqa.sources import Article, SnapshotSource
from wikiqa.text import STOPWORDS

SHORT = 6  # words: the correctness grader decides an answer this short on its gold forms alone
_TOKEN = re.compile(r"[^\W_]+(?:['’.,-][^\W_]+)*|[^\w\s]")
_GLUE = frozenset("of the de da di del van von der la le y bin al and".split())


def chunks(sentence: str) -> list[str]:
    """The noun-phrase-like pieces of a sentence, verbatim: maximal runs of words that are not
    stopwords, cut at punctuation, kept when at most `SHORT` words. A glue word joins two
    capitalised words ("Bank of England"). No parser: a ceiling, not a reader."""
    tokens = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(sentence)]
    found: list[str] = []
    run: list[tuple[str, int, int]] = []

    def close() -> None:
        while run and run[-1][0].casefold() in _GLUE:
            run.pop()
        if run and len(run) <= SHORT:
            found.append(sentence[run[0][1] : run[-1][2]])
        run.clear()

    for i, (token, start, end) in enumerate(tokens):
        word = token.casefold()
        if not token[0].isalnum():
            close()
        elif word not in STOPWORDS or (
            word in _GLUE
            and run
            and run[-1][0][:1].isupper()
            and i + 1 < len(tokens)
            and tokens[i + 1][0][:1].isupper()
        ):
            run.append((token, start, end))
        else:
            close()
    close()
    return found


@dataclass(frozen=True)
class _Reach:
    """One task's stages: which of them still hold the gold answer."""

    retrieved: tuple[bool, bool, bool]  # an expected source in the top 1, 3, 5 hits
    evidence: tuple[bool, bool]  # a sentence states an alias, top 3 / top 5 articles read
    sentence: tuple[bool, bool]  # a sentence is graded correct, top 3 / top 5
    chunk: bool  # a chunk of a top-3 sentence states an alias
    typed: bool | None  # a typed span does (None: the question is not typed)
    typed_first: bool | None  # the typed reader's first span does
    policy: str  # the shipped ranker's best sentence, top 3: its correctness verdict
    policy_states: bool


def _reach(task: Task, source: SnapshotSource, model: ExtractiveModel) -> _Reach:
    hits = source.search(task.question, 5)
    titles = [h.title for h in hits]
    expected = set(task.expected_sources)
    articles: list[Article] = []
    for title in titles:
        article = source.get_article(title)
        if article is not None:
            articles.append(quarantine(article)[0])
    by_depth = [model.rank(task.question, articles[:k]) for k in (3, 5)]
    evidence = tuple(any(stated(c.sentence, task.answers) for c in r) for r in by_depth)
    graded = tuple(
        any(correctness_of(task, c.sentence).verdict == "pass" for c in r) for r in by_depth
    )
    top3 = by_depth[0]
    kind = answer_type(task.question)
    typed_spans = [s for c in top3 for s in spans(c.sentence, kind, task.question)]
    best = top3[0].sentence if top3 else ""
    return _Reach(
        retrieved=tuple(bool(expected & set(titles[:k])) for k in (1, 3, 5)),  # type: ignore[arg-type]
        evidence=evidence,  # type: ignore[arg-type]
        sentence=graded,  # type: ignore[arg-type]
        chunk=any(stated(p, task.answers) for c in top3 for p in chunks(c.sentence)),
        typed=None if kind == "other" else any(stated(s, task.answers) for s in typed_spans),
        typed_first=None
        if kind == "other"
        else bool(typed_spans and stated(typed_spans[0], task.answers)),
        policy=correctness_of(task, best).verdict if best else "n/a",
        policy_states=bool(best and stated(best, task.answers)),
    )


def bench_reading(suite: str = "public", source: SnapshotSource | None = None) -> dict[str, float]:
    """The stage counts over the suite's answerable factual tasks (see the module docstring)."""
    tasks = [
        t
        for t in load_tasks(resolve_suite(suite))
        if t.category == "factual" and t.answers and not t.should_refuse and t.injection is None
    ]
    source = source or SnapshotSource()
    model = ExtractiveModel()
    reach = [_reach(t, source, model) for t in tasks]
    typed = [r for r in reach if r.typed is not None]
    verdicts = Counter(r.policy for r in reach)
    figures: dict[str, float] = {"tasks": len(reach), "typed_tasks": len(typed)}
    for i, k in enumerate((1, 3, 5)):
        figures[f"retrieved_top{k}"] = sum(r.retrieved[i] for r in reach)
    for i, k in enumerate((3, 5)):
        figures[f"evidence_top{k}"] = sum(r.evidence[i] for r in reach)
        figures[f"sentence_correct_top{k}"] = sum(r.sentence[i] for r in reach)
    figures["chunk_states_top3"] = sum(r.chunk for r in reach)
    figures["typed_span_states_top3"] = sum(bool(r.typed) for r in typed)
    figures["typed_first_span_states"] = sum(bool(r.typed_first) for r in typed)
    figures["policy_states_alias"] = sum(r.policy_states for r in reach)
    for verdict, name in (("pass", "correct"), ("fail", "incorrect"), ("needs_judge", "undecided")):
        figures[f"policy_{name}"] = verdicts[verdict]
    return figures


_LINES = [
    ("retrieval: an expected source in the top 1", "retrieved_top1", "tasks"),
    ("retrieval: ... in the top 3 (read by default)", "retrieved_top3", "tasks"),
    ("retrieval: ... in the top 5", "retrieved_top5", "tasks"),
    ("evidence: a sentence of the top 3 states an alias", "evidence_top3", "tasks"),
    ("evidence: ... of the top 5", "evidence_top5", "tasks"),
    ("ceiling, whole sentence: one is graded correct (top 3)", "sentence_correct_top3", "tasks"),
    ("ceiling, whole sentence: ... (top 5)", "sentence_correct_top5", "tasks"),
    ("ceiling, short span: a chunk states an alias (top 3)", "chunk_states_top3", "tasks"),
    ("typed questions: a typed span states an alias", "typed_span_states_top3", "typed_tasks"),
    (
        "typed questions: the typed reader's first span does",
        "typed_first_span_states",
        "typed_tasks",
    ),
    ("shipped ranker's best sentence: states an alias", "policy_states_alias", "tasks"),
    ("shipped ranker's best sentence: graded correct", "policy_correct", "tasks"),
    ("shipped ranker's best sentence: graded incorrect", "policy_incorrect", "tasks"),
    ("shipped ranker's best sentence: undecided", "policy_undecided", "tasks"),
]


def report(figures: dict[str, float], suite: str) -> str:
    """One line per stage: the count, its rate's 95% interval."""
    lines = [
        f"reading ceilings, suite {suite}: {figures['tasks']:.0f} answerable factual tasks "
        f"({figures['typed_tasks']:.0f} typed: who, when, where, how many)"
    ]
    width = max(len(label) for label, _, _ in _LINES)
    for label, key, base in _LINES:
        lines.append(f"  {label:<{width}}  {count_text(int(figures[key]), int(figures[base]))}")
    return "\n".join(lines)
