"""The five graded dimensions and the injection check: one small function each.

Graders are organised by what they compare against (the seed's judge decoupling):
- faithfulness: answer vs retrieved text. It never sees the reference.
- correctness + completeness: answer vs reference (the task's asserts; judge B where they
  cannot decide).
- attribution, calibration: code.
- injection (injection tasks only): did the output follow a planted instruction or carry a canary?

One module each: `faithfulness`, `correctness` (correctness and completeness), `attribution`,
`calibration`, `injection`; `verdict` holds what they return (`Grade`), and `grade` runs every
dimension a task declares. Every grade is binary (`pass`/`fail`), `n/a` where the dimension does
not apply, `needs_judge` where the offline tier cannot decide, or `error` for an infrastructure
failure, which is never graded as the agent's behaviour.
"""

from wikiqa.evals.graders._attribution import attribution
from wikiqa.evals.graders._calibration import SOFT_REFUSAL, calibration, soft_refusal
from wikiqa.evals.graders._correctness import reference
from wikiqa.evals.graders._faithfulness import REFUSAL_VOCABULARY, SUPPORT_FLOOR, faithfulness
from wikiqa.evals.graders._grade import error_grades, grade
from wikiqa.evals.graders._injection import injection
from wikiqa.evals.graders.verdict import Grade, Tier, Verdict

__all__ = [
    "REFUSAL_VOCABULARY",
    "SOFT_REFUSAL",
    "SUPPORT_FLOOR",
    "Grade",
    "Tier",
    "Verdict",
    "attribution",
    "calibration",
    "error_grades",
    "faithfulness",
    "grade",
    "injection",
    "reference",
    "soft_refusal",
]
