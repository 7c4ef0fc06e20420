"""Reading runs: reducers (majority votes, task and trial verdicts, pass@k), the summary of one
run, its rendering, intervals and paired tests, SimpleQA outcomes, confidence, two runs compared,
and the CI gate. Everything here reads the long results table, so any view can be rebuilt from
any past run; nothing here runs, records or imports the runner.
"""

from wikiqa.evals.analysis import gate
from wikiqa.evals.analysis.compare import Comparison, DifferentSuites, compare
from wikiqa.evals.analysis.confidence import ConfidenceReport
from wikiqa.evals.analysis.reduce import (
    COLUMNS,
    combine,
    majority,
    pass_at,
    records_of,
    task_records,
    task_verdicts,
    trial_records,
    trial_verdicts,
)
from wikiqa.evals.analysis.render import render
from wikiqa.evals.analysis.simpleqa import Outcomes, outcomes, reason_of
from wikiqa.evals.analysis.summary import Cell, Summary, summarize

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
    "gate",
    "majority",
    "outcomes",
    "pass_at",
    "reason_of",
    "records_of",
    "render",
    "summarize",
    "task_records",
    "task_verdicts",
    "trial_records",
    "trial_verdicts",
]
