"""What the notebooks share: run a hillclimb step, show it, record it, compare runs.

The notebooks in `experiments/` and `notebooks/` stay short because everything they reuse lives
here (and is unit-tested here), and `wikiqa experiment run` drives them through papermill:
`step` (run, show, record a step), `views` (read runs back and compare them), `notebooks`
(which step is current, grids, execution).
"""

from wikiqa.experiment.notebooks import EXPERIMENTS, current_step, execute, grid
from wikiqa.experiment.step import plot, rates, record, run_step, table
from wikiqa.experiment.views import (
    climb,
    confusion,
    failures,
    flips,
    load_run,
    model_figures,
    plot_climb,
    summary_of,
)

__all__ = [
    "EXPERIMENTS",
    "climb",
    "confusion",
    "current_step",
    "execute",
    "failures",
    "flips",
    "grid",
    "load_run",
    "model_figures",
    "plot",
    "plot_climb",
    "rates",
    "record",
    "run_step",
    "summary_of",
    "table",
]
