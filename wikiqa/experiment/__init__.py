"""What the notebooks share: run a hillclimb step, show it, record it, compare runs.

The notebooks in `experiments/` and `notebooks/` stay short because everything they reuse lives
here (and is unit-tested here), and `wikiqa experiment run` drives them through papermill:
`params` (every step's common parameters and their rules), `step` (run, show, record a step),
`views` (read runs back and compare them), `losses` (where a run's answerable trials lost the
gold answer, stage by stage, read from its journal), `tables` and `charts` (what a reader sees),
`notebooks` (which step is current, grids, execution).
"""

from wikiqa.experiment.charts import (
    ClimbChart,
    climb_svg,
    plot,
    plot_climb,
    plot_risk_coverage,
    rates,
)
from wikiqa.experiment.drift import drift_between, drift_line, with_drift
from wikiqa.experiment.losses import losses_by_stage, losses_text
from wikiqa.experiment.notebooks import (
    INSTALLS,
    NOTHING_NEW,
    STEP_CALL,
    StepFailed,
    current_step,
    declared_parameters,
    execute,
    grid,
    missing_extra,
    new_step,
    printed,
    read_notebook,
    requires,
)
from wikiqa.experiment.params import KINDS, ParameterError, StepParameters, parameters
from wikiqa.experiment.runs import find_run, load_run, recorded_trace
from wikiqa.experiment.step import record_line, show, step, step_name_of
from wikiqa.experiment.tables import abstention, climb_table, lines_table, table
from wikiqa.experiment.views import (
    climb,
    compare_runs,
    confusion,
    delta_line,
    evidence_text,
    failures,
    flips,
    latest_pair,
    lines,
    model_figures,
    pair_for,
    resolve_out,
    run_tasks,
    steps,
    summary_of,
    unlike_runs,
)
from wikiqa.project import experiments_dir

__all__ = [
    "INSTALLS",
    "KINDS",
    "NOTHING_NEW",
    "STEP_CALL",
    "ClimbChart",
    "ParameterError",
    "StepFailed",
    "StepParameters",
    "abstention",
    "climb",
    "climb_svg",
    "climb_table",
    "compare_runs",
    "confusion",
    "current_step",
    "declared_parameters",
    "delta_line",
    "drift_between",
    "drift_line",
    "evidence_text",
    "execute",
    "experiments_dir",
    "failures",
    "find_run",
    "flips",
    "grid",
    "latest_pair",
    "lines",
    "lines_table",
    "load_run",
    "losses_by_stage",
    "losses_text",
    "missing_extra",
    "model_figures",
    "new_step",
    "pair_for",
    "parameters",
    "plot",
    "plot_climb",
    "plot_risk_coverage",
    "printed",
    "rates",
    "read_notebook",
    "record_line",
    "recorded_trace",
    "requires",
    "resolve_out",
    "run_tasks",
    "show",
    "step",
    "step_name_of",
    "steps",
    "summary_of",
    "table",
    "unlike_runs",
    "with_drift",
]
