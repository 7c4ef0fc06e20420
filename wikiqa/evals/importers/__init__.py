"""Public question sets turned into task lines, with offline answerability decided against the
snapshot: what `wikiqa suite import` and `wikiqa suite build` run.

Each dataset has its own module (`nq_open`, `hotpotqa`, `selfaware`, `truthfulqa`, `bipia`),
because each has its own format and its own mapping to categories; `answerability` decides
whether the snapshot states an answer (the one rule every importer shares), `common` reads
files, samples and writes, and `build` is the recipe of the committed public suite and its
held-out split. Every task carries its provenance and licence, so every number on a public
suite traces back to public data.
"""

from wikiqa.evals.importers.answerability import RULES, Decision, Evidence, Leads, fold, states
from wikiqa.evals.importers.bipia import import_bipia, injection_targets
from wikiqa.evals.importers.build import (
    FRESH_QUOTAS,
    OUTPUTS,
    QUOTAS,
    SEED,
    Built,
    Prior,
    admitted_by_rule,
    build_public,
    dataset_of,
    leftovers,
    split_holdout,
)
from wikiqa.evals.importers.common import LICENCES, Imported, dumps, take, write_suite
from wikiqa.evals.importers.hotpotqa import import_hotpotqa
from wikiqa.evals.importers.nq_open import import_nq_open
from wikiqa.evals.importers.selfaware import import_selfaware
from wikiqa.evals.importers.truthfulqa import import_truthfulqa
from wikiqa.inputs import InputError

DATASETS = ("nq-open", "hotpotqa", "selfaware", "truthfulqa", "bipia")

__all__ = [
    "DATASETS",
    "FRESH_QUOTAS",
    "LICENCES",
    "OUTPUTS",
    "QUOTAS",
    "RULES",
    "SEED",
    "Built",
    "Decision",
    "Evidence",
    "Imported",
    "InputError",
    "Leads",
    "Prior",
    "admitted_by_rule",
    "build_public",
    "dataset_of",
    "dumps",
    "fold",
    "import_bipia",
    "import_hotpotqa",
    "import_nq_open",
    "import_selfaware",
    "import_truthfulqa",
    "injection_targets",
    "leftovers",
    "split_holdout",
    "states",
    "take",
    "write_suite",
]
