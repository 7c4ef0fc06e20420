"""What the notebooks share: run a hillclimb step, show it, record it, compare runs.

The notebooks in `experiments/` and `notebooks/` stay short because everything they reuse lives
here (and is unit-tested here), and `wikiqa experiment run` drives them through papermill:
`step` (run, show, record a step), `views` (read runs back and compare them), `notebooks`
(which step is current, grids, execution).
"""

from wikiqa.experiment.notebooks import (
    EXPERIMENTS,
    current_step,
    declared_parameters,
    execute,
    grid,
    missing_extra,
    requires,
)
from wikiqa.experiment.params import KINDS, ParameterError, StepParameters, parameters
from wikiqa.experiment.step import (
    abstention,
    plot,
    plot_risk_coverage,
    rates,
    record_line,
    show,
    step,
    step_name_of,
    table,
    with_lever,
)
from wikiqa.experiment.views import (
    climb,
    compare_runs,
    confusion,
    drift_between,
    drift_line,
    failures,
    flips,
    load_run,
    model_figures,
    plot_climb,
    summary_of,
)

__all__ = [
    "EXPERIMENTS",
    "KINDS",
    "ParameterError",
    "StepParameters",
    "abstention",
    "climb",
    "compare_runs",
    "confusion",
    "current_step",
    "declared_parameters",
    "drift_between",
    "drift_line",
    "execute",
    "failures",
    "flips",
    "grid",
    "load_run",
    "missing_extra",
    "model_figures",
    "parameters",
    "plot",
    "plot_climb",
    "plot_risk_coverage",
    "rates",
    "record_line",
    "requires",
    "show",
    "step",
    "step_name_of",
    "summary_of",
    "table",
    "with_lever",
]
