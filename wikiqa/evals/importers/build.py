"""The public suite: which public sets, how many tasks of each category, and the held-out split.

One recipe, so `wikiqa suite build` rebuilds the committed `public.jsonl` and
`public_holdout.jsonl` byte for byte from `../shared/benchmarks` and a seed. The quotas clear
the suite's floors (factual 200, multi_hop 40, unanswerable 150, adversarial 60, injection 50,
over public + holdout) with room to spare, and keep the suite small enough that three offline
trials take well under a minute. Attacks go into factual NQ-open questions the suite does not
already ask, so no question is both a plain task and an injection task.

The held-out 20% is drawn per category and dataset, so it mirrors the public part; it loads only
with `--holdout` (see `wikiqa.evals.tasks.task.resolve_suite`).

A second held-out split, `fresh_holdout.jsonl` (`--suite fresh --holdout`), holds questions the
recipe left over: every factual question no other task asks, and samples of the unanswerable and
false-premise ones (`FRESH_QUOTAS`). The first held-out split gets looked at more than once
over a climb; this one keeps questions no run has seen, so a final figure can come from them.
Drawing it changes neither of the other two files.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path

from wikiqa.evals.importers.answerability import RULES, Leads
from wikiqa.evals.importers.bipia import import_bipia
from wikiqa.evals.importers.common import Imported, shuffled, take
from wikiqa.evals.importers.hotpotqa import import_hotpotqa
from wikiqa.evals.importers.nq_open import import_nq_open
from wikiqa.evals.importers.selfaware import import_selfaware
from wikiqa.evals.importers.truthfulqa import import_truthfulqa
from wikiqa.evals.tasks.task import Task, load_tasks

# What a build writes: the public suite's second version, its questions kept with no ranker's
# help. The first version's files (public, public_holdout, fresh_holdout) stay as committed:
# recorded runs and the climb refer to them by name and hash.
OUTPUTS = {"public": "public2", "holdout": "public2_holdout", "fresh": "fresh2_holdout"}
HOLDOUT_FRACTION = 0.2
BIPIA_ATTACKS = 75  # of 150, each kind keeping its share, each into a question of its own
SEED = 13
# Where each public set sits under the benchmarks folder (SOURCES.md's layout).
FILES = {
    "nq-open": ("nq_open/NQ-open.efficientqa.dev.1.1.jsonl", "nq_open/NQ-open.efficientqa.test.1.1.jsonl"),
    "selfaware": ("selfaware/SelfAware.json",),
    "hotpotqa": ("hotpotqa/hotpot_dev_v1_simplified.json",),
    "truthfulqa": ("truthfulqa/TruthfulQA.csv",),
    "bipia": ("bipia",),
}  # fmt: skip
# (dataset, category) -> how many tasks, public + holdout; None keeps every one found.
QUOTAS: dict[tuple[str, str], int | None] = {
    ("nq-open", "factual"): 160,
    ("selfaware", "factual"): 90,
    ("hotpotqa", "multi_hop"): None,
    ("selfaware", "unanswerable"): 180,
    ("truthfulqa", "adversarial"): 80,
    ("bipia", "injection"): None,  # sampled before planting: BIPIA_ATTACKS
    ("nq-open", "retrieval_gap"): 35,
    ("hotpotqa", "retrieval_gap"): 25,
    ("selfaware", "retrieval_gap"): 15,
}


# The fresh split's categories: None keeps every leftover question of that category.
FRESH_QUOTAS: dict[str, int | None] = {"factual": None, "unanswerable": 150, "adversarial": 60}


@dataclass
class Built:
    public: list[Task]
    holdout: list[Task]
    imports: list[Imported] = field(default_factory=list)
    fresh: list[Task] = field(default_factory=list)


def dataset_of(task: Task) -> str:
    return task.provenance.dataset if task.provenance else "?"


def question_kind(task: Task) -> str:
    """TruthfulQA's type and category, as its importer notes them ('TruthfulQA Adversarial /
    Law'), so the sample spans the misconceptions rather than repeating the largest."""
    return (task.notes or "").split(",")[0]


def pick(
    imported: Imported,
    category: str,
    seed: int,
    stratum: Callable[[Task], Hashable] | None = None,
) -> list[Task]:
    tasks = [t for t in imported.tasks if t.category == category]
    quota = QUOTAS[(imported.dataset, category)]
    return take(tasks, quota, seed, stratum) if stratum else take(tasks, quota, seed)


@dataclass(frozen=True)
class Prior:
    """Questions of the suites already committed: those held out stay held out in a new
    version (a development run of it would otherwise see them), and those already run in
    development never enter a new held-out split (they have been looked at)."""

    held: frozenset[str] = frozenset()
    seen: frozenset[str] = frozenset()

    @classmethod
    def of(cls, folder: Path, held_names: Sequence[str], skip: Sequence[str] = ()) -> Prior:
        """The questions of every task file in `folder` (but `skip`), held out when its name
        is one of `held_names`."""
        held: set[str] = set()
        seen: set[str] = set()
        for path in sorted(folder.glob("*.jsonl")):
            if path.stem in skip:
                continue
            asked = {question_key(t) for t in load_tasks(path)}
            (held if path.stem in held_names else seen).update(asked)
        return cls(frozenset(held), frozenset(seen - held))


def split_holdout(
    tasks: Sequence[Task], seed: int, fraction: float = HOLDOUT_FRACTION, prior: Prior = Prior()
) -> tuple[list[Task], list[Task]]:
    """(kept, held out): `fraction` of each category x dataset stratum, seeded, both in a
    seeded order (so `--limit` on either still samples every category). A question `prior`
    held out is held out again, one it saw in development is kept; the rest fill the fraction.
    Tasks asking the same question (attacks planted into one question) stay on one side."""
    groups: dict[tuple[str, str], list[Task]] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        groups.setdefault((task.category, dataset_of(task)), []).append(task)
    held: set[str] = set()
    for key, group in sorted(groups.items()):
        n = int(len(group) * fraction + 0.5)
        forced = [t.id for t in group if question_key(t) in prior.held]
        free = [t for t in group if question_key(t) not in prior.held | prior.seen]
        held |= {
            *forced,
            *(t.id for t in shuffled(free, seed, f"holdout:{key}")[: max(0, n - len(forced))]),
        }
    # one question, one side: attacks planted into the same question go where it goes
    asked = {question_key(t) for t in tasks if t.id in held}
    held = {t.id for t in tasks if question_key(t) in asked}
    ordered = take(tasks, None, seed)
    return [t for t in ordered if t.id not in held], [t for t in ordered if t.id in held]


def merged(name: str, parts: list[Imported]) -> Imported:
    out = Imported(name)
    for part in parts:
        out.tasks += part.tasks
        out.considered += part.considered
        out.skipped.update(part.skipped)
        out.rules.update(part.rules)
    return out


def build_public(benchmarks: Path, leads: Leads, seed: int = SEED, prior: Prior = Prior()) -> Built:
    def path(dataset: str) -> list[Path]:
        return [benchmarks / p for p in FILES[dataset]]

    nq = merged("nq-open", [import_nq_open(p, leads) for p in path("nq-open")])
    selfaware = import_selfaware(path("selfaware")[0], leads)
    hotpot = import_hotpotqa(path("hotpotqa")[0], leads)
    truthful = import_truthfulqa(path("truthfulqa")[0], leads)
    factual_nq = pick(nq, "factual", seed)
    asked = {t.id for t in factual_nq}
    targets = [t for t in nq.tasks if t.category == "factual" and t.id not in asked]
    bipia = import_bipia(path("bipia")[0], targets, leads, seed, BIPIA_ATTACKS)
    chosen = [
        *factual_nq,
        *pick(selfaware, "factual", seed),
        *pick(hotpot, "multi_hop", seed),
        *pick(selfaware, "unanswerable", seed),
        *pick(truthful, "adversarial", seed, question_kind),
        *pick(bipia, "injection", seed),
        *pick(nq, "retrieval_gap", seed),
        *pick(hotpot, "retrieval_gap", seed),
        *pick(selfaware, "retrieval_gap", seed),
    ]
    public, holdout = split_holdout(chosen, seed, prior=prior)
    imports = [nq, selfaware, hotpot, truthful, bipia]
    fresh = leftovers(chosen, imports, seed, prior.held | prior.seen)
    return Built(public, holdout, imports, fresh=fresh)


def leftovers(
    chosen: Sequence[Task],
    imports: Sequence[Imported],
    seed: int,
    asked_before: Set[str] = frozenset(),
) -> list[Task]:
    """The fresh split: tasks of `FRESH_QUOTAS`' categories whose question no chosen task asks
    (with or without a plant) and no committed suite asked (`asked_before`), sampled per
    category; TruthfulQA's spread over its kinds."""
    asked = {question_key(t) for t in chosen} | set(asked_before)
    fresh: list[Task] = []
    for category, quota in FRESH_QUOTAS.items():
        pool: dict[str, Task] = {}
        for imported in imports:
            for task in imported.tasks:
                if task.category == category and task.injection is None:
                    pool.setdefault(question_key(task), task)
        left = [t for q, t in pool.items() if q not in asked]
        stratum = question_kind if category == "adversarial" else dataset_of
        fresh += take(left, quota, seed, stratum)
    return take(fresh, None, seed)


def question_key(task: Task) -> str:
    """A task's question, case and spacing folded: what "the same question" means here."""
    return " ".join(task.question.casefold().split())


def admitted_by_rule(imports: Sequence[Imported], tasks: Sequence[Task]) -> dict[str, int]:
    """How many of `tasks` each answerability rule admitted (injection tasks carry the rule of
    the question they were planted into)."""
    rules = {k: v for imported in imports for k, v in imported.rules.items()}
    by_question = {question_key(t): rules[t.id] for i in imports for t in i.tasks if t.id in rules}
    found: dict[str, int] = {r: 0 for r in RULES}
    for task in tasks:
        rule = rules.get(task.id) or (
            by_question.get(question_key(task)) if task.injection else None
        )
        if rule is not None:
            found[rule] += 1
    return found
