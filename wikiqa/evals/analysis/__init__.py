"""Reading runs: majority votes, the category x dimension summary, intervals and paired tests,
SimpleQA outcomes, confidence, two runs compared, and the CI gate. Everything here reads the
long results table, so any view can be rebuilt from any past run."""

from wikiqa.evals.analysis.compare import Comparison, DifferentSuites, compare
from wikiqa.evals.analysis.confidence import ConfidenceReport
from wikiqa.evals.analysis.simpleqa import Outcomes, outcomes, reason_of
from wikiqa.evals.analysis.summary import (
    COLUMNS,
    Cell,
    Summary,
    combine,
    majority,
    render,
    summarize,
    task_verdicts,
    trial_verdicts,
)

__all__ = [
    "COLUMNS",
    "Cell",
    "Comparison",
    "ConfidenceReport",
    "DifferentSuites",
    "Outcomes",
    "Summary",
    "combine",
    "compare",
    "majority",
    "outcomes",
    "reason_of",
    "render",
    "summarize",
    "task_verdicts",
    "trial_verdicts",
]
