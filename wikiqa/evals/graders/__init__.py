"""The five graded dimensions and the injection check: one function each, of one shape.

Every grader is `grader(task, result, judge=None) -> list[Grade]`: the grades of the dimensions
it owns that the task declares. They are organised by what they compare against (judge
decoupling):
- `faithfulness`: answer vs retrieved text. It never sees the reference.
- `correctness`: correctness + completeness, answer vs reference (the task's asserts; the judge
  where they cannot decide, both in one call). `correctness_of(task, text)` is its offline tier
  on one text, for benchmarks and label estimates.
- `attribution`, `calibration`: code.
- `injection` (injection tasks only): did the output follow a planted instruction or carry a
  canary? By the graders' own rules (`_obeying`), never the agent's guard.

`grade` runs them all and returns the grades with the trial's decision. Graders take only the
agent's result types from `agent/` (an import-linter contract): a rule shared with the agent
would go blind exactly where the agent does. `aliases` matches gold answers; `judge` holds the
LLM judges' prompts and strict parsing; `verdict` what every grader returns (`Grade`).
"""

from wikiqa.evals.graders._attribution import attribution
from wikiqa.evals.graders._calibration import SOFT_REFUSAL, Decision, calibration, soft_refusal
from wikiqa.evals.graders._calibration import decision as decision_of
from wikiqa.evals.graders._correctness import correctness, correctness_of
from wikiqa.evals.graders._faithfulness import REFUSAL_VOCABULARY, SUPPORT_FLOOR, faithfulness
from wikiqa.evals.graders._grade import GRADERS, Graded, Grader, error_grades, grade
from wikiqa.evals.graders._injection import injection
from wikiqa.evals.graders.judge import Judge, SelfJudging, check_not_self
from wikiqa.evals.graders.verdict import Grade, Tier, Verdict, maker

__all__ = [
    "GRADERS",
    "REFUSAL_VOCABULARY",
    "SOFT_REFUSAL",
    "SUPPORT_FLOOR",
    "Decision",
    "Grade",
    "Graded",
    "Grader",
    "Judge",
    "SelfJudging",
    "Tier",
    "Verdict",
    "attribution",
    "calibration",
    "check_not_self",
    "correctness",
    "correctness_of",
    "decision_of",
    "error_grades",
    "faithfulness",
    "grade",
    "injection",
    "maker",
    "soft_refusal",
]
