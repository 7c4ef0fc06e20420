"""One hillclimb step from a notebook: run the suite, show the table and plots, record the run.

A step notebook holds only what it changes (its hypothesis, its `parameters` cell) and calls
`step(globals())`: everything every step repeats lives here. A step run from Jupyter or plain
papermill is exploratory (results/scratch/, no change-log row) unless `RECORD = True`;
`wikiqa experiment run` names it by its file and chooses where it goes (`--record`).
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from wikiqa.evals import RunConfig, RunOutcome, evaluate, results_dir, scratch_dir
from wikiqa.evals.analysis.render import render_figures
from wikiqa.evals.climb import ChangelogRow, Policy
from wikiqa.experiment.charts import plot, plot_risk_coverage
from wikiqa.experiment.notebooks import STEP_ENV
from wikiqa.experiment.params import COMMON, ParameterError, StepParameters, parameters
from wikiqa.experiment.tables import abstention, table
from wikiqa.experiment.views import delta_line, resolve_out
from wikiqa.project import relative_to_root
from wikiqa.terminal import echo


def step(namespace: Mapping[str, Any]) -> RunOutcome:
    """Run this notebook's step with its parameters (`namespace`: the notebook's globals) and
    show everything a step shows."""
    overrides = injected(namespace)
    p = parameters(dict(namespace))
    if overrides:
        change = with_overrides(p.run_options()["change"], overrides, namespace)
        p = p.model_copy(update={"CHANGE": change})
    name = step_name_of(namespace)
    holdout = bool(p.run_options()["holdout"])
    if (p.RECORD or holdout) and name is None:
        raise ParameterError(
            f"{'RECORD' if p.RECORD else 'HOLDOUT'} = True: this kernel does not know its "
            "notebook's file name, which names the step in the change log; record with "
            "`wikiqa experiment run NOTEBOOK --record` (or `--holdout`)"
        )
    given = resolve_out(p.OUT)
    # a held-out run is always recorded: its row is what makes the next one refused
    recorded = p.RECORD or holdout
    out = given if given is not None else (results_dir() if recorded else scratch_dir())
    config = _config(p, name or "unnamed-step", out)
    _show_parameters(p, name, out)
    with _served(config):
        policy: Policy = "record" if recorded else "explore"
        outcome, row = evaluate(
            config, policy, p.RESUME, against=p.VS, progress=False,
            notify=_tell_terminal if overrides or os.environ.get(STEP_ENV) else _tell,
        )  # fmt: skip
    show(outcome, row, name or "unnamed-step")
    return outcome


# What papermill writes at the top of the cell it injects after the `parameters` cell.
INJECTED = "# Parameters\n"
# Parameters that say where and how a run goes, not what it measures: left out of its change text.
# (HOLDOUT is the row's own column and its suite's name.)
BOOKKEEPING = {
    "OUT", "RECORD", "HOLDOUT", "CHANGE", "KIND", "VS", "RESUME", "CONCURRENCY", "EXECUTOR",
    "CACHE", "ALLOW_HOLDOUT_RERUN", "ALLOW_SELF_JUDGE",
}  # fmt: skip


def injected(namespace: Mapping[str, Any]) -> list[str]:
    """The names papermill injected (`-p NAME VALUE`, from `wikiqa experiment run` or plain
    papermill), read from the kernel's input history; a name that neither the common step
    parameters nor this notebook's `parameters` cell (the cell run just before the injected
    one) declares is refused: papermill would set it and the step would silently run its
    defaults (`-p TRAILS 1`). Empty where nothing was injected (Jupyter)."""
    history = [cell for cell in namespace.get("_ih", []) if isinstance(cell, str)]
    at = next((i for i in reversed(range(len(history))) if history[i].startswith(INJECTED)), None)
    if at is None:
        return []
    names = _assigned(history[at])
    declared = set(COMMON) | (set(_assigned(history[at - 1])) if at > 0 else set())
    unknown = [n for n in names if n not in declared]
    if unknown:
        raise ParameterError(
            f"no parameter named {', '.join(map(repr, unknown))}: neither a step parameter "
            "nor one this notebook's parameters cell declares (a typo would run the defaults)"
        )
    return names


def _assigned(source: str) -> list[str]:
    """The names a cell assigns at its top level, in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    ]


def with_overrides(change: str, given: list[str], namespace: Mapping[str, Any]) -> str:
    """The step's change text with the values `-p` set that change what it measures, so a row
    says what it ran (`... (-p ABSTAIN_BELOW=0.3)`), and each point of a grid is its own."""
    shown = [f"{n}={namespace[n]!r}" for n in given if n not in BOOKKEEPING and n in namespace]
    return f"{change} (-p {', '.join(shown)})".strip() if shown else change


def step_name_of(namespace: Mapping[str, Any]) -> str | None:
    """The notebook's file name: set by `wikiqa experiment run`, or by Jupyter (`__session__`,
    VS Code's `__vsc_ipynb_file__`); None where the kernel cannot know it (plain papermill)."""
    if os.environ.get(STEP_ENV):
        return os.environ[STEP_ENV]
    for key in ("__vsc_ipynb_file__", "__session__"):
        found = namespace.get(key)
        if isinstance(found, str) and found.endswith(".ipynb"):
            return Path(found).stem
    return None


def _tell(message: str) -> None:
    """Progress of a long run, as it goes (a line every tenth of its trials), in the notebook
    a researcher watches (Jupyter)."""
    echo(message, flush=True)


def _tell_terminal(message: str) -> None:
    """The same, for a step papermill runs: to the terminal that started it (the kernel's own
    stderr, which papermill's kernel inherits), never into the executed notebook, which keeps
    the step's results only."""
    if sys.__stderr__ is not None:
        echo(message, file=sys.__stderr__, flush=True)


def _config(p: StepParameters, name: str, out: Path) -> RunConfig:
    """The run these parameters describe: every run option they set, named for the step."""
    try:
        return RunConfig(**p.run_options(), experiment=name, agent=p.agent(), out=out)
    except ValueError as err:
        raise ParameterError(str(err).splitlines()[-1]) from None


@contextmanager
def _served(config: RunConfig) -> Iterator[None]:
    """`local` (the shipped small model) or `local:NAME` (a catalogued model: `local:qwen`)
    goes to the run as it is: the runner serves it (`ServedModel`), and records one spec
    whatever port served it. Under the local executor its server is stopped after the run;
    under Ray each node's host starts and stops its own."""
    try:
        yield
    finally:
        model = config.model
        if config.executor == "local" and (model == "local" or model.startswith("local:")):
            from wikiqa.evals.running.served import stop_all

            stop_all()


def _show_parameters(p: StepParameters, name: str | None, out: Path) -> None:
    shown = p.model_dump(exclude_defaults=True) | {"MODEL": p.run_options()["model"]}
    where = (
        "the held-out split, recorded" if p.run_options()["holdout"]
        else "recorded" if p.RECORD else "exploratory (not recorded)"
    )  # fmt: skip
    echo(
        f"step {name or '(unnamed: the kernel does not know its file)'}: {where}, into {_short(out)}"
    )
    echo("  " + " · ".join(f"{k}={v!r}" for k, v in shown.items() if v not in (None, "")))


def _short(path: Path) -> str:
    """A path as a reader should see it: relative to the project root when inside it."""
    inside = relative_to_root(path)
    if inside is not None:
        return str(inside)
    return path.name if path.is_absolute() else str(path)


def show(outcome: RunOutcome, row: ChangelogRow | None, name: str) -> None:
    """What every step shows: the table, the plot, abstention, risk-coverage, the record."""
    import matplotlib.pyplot as plt

    summary = outcome.summary
    _display(_markdown("## Category x dimension (passes/applicable [95% interval], majority vote)"))
    _display(table(summary))
    echo(render_figures(summary))
    figure = plot(summary, name)
    _display(figure)
    plt.close(figure)
    _display(
        _markdown(
            "## Abstention and calibration\n\nSimpleQA's outcomes on the answerable tasks "
            "(undecided: left to a judge), and whether `confidence` tells right answers from "
            "wrong ones: AUROC 0.5 carries no information; the risk-coverage curve should fall "
            "as the agent answers only its most confident share."
        )
    )
    _display(abstention(summary))
    figure = plot_risk_coverage(summary, f"{name}: risk-coverage")
    _display(figure)
    plt.close(figure)
    _display(_markdown("## Record"))
    record_line(outcome, row)


def record_line(outcome: RunOutcome, row: ChangelogRow | None) -> None:
    """Say where the run went, and whether (and why not) it became a change-log row."""
    out = outcome.meta.config.out
    echo(f"parquet:   {_short(outcome.parquet)}")
    if row is None:
        echo("changelog: not recorded (exploratory: RECORD = False)")
    elif row.run_id != outcome.meta.run_id:
        echo(f"changelog: not recorded: the same inputs as the recorded row {row.run_id}")
    else:
        echo(f"changelog: {_short(out / 'CHANGELOG.md')} (+ changelog.jsonl)")
        echo(f"paired Δ, tasks passing every dimension: {delta_line(row, out)}")
    echo(
        f"run {outcome.meta.run_id}: {outcome.trials_run} trials, {outcome.model_calls} model "
        f"calls ({outcome.cached_calls} from cache), model {outcome.meta.model}, "
        f"prompt {outcome.meta.prompt_hash}"
    )


def _display(*objects: object) -> None:
    """IPython's display (a table, a figure, a heading) where a notebook runs; text elsewhere."""
    from IPython.display import display

    display(*objects)  # type: ignore[no-untyped-call]


def _markdown(text: str) -> object:
    from IPython.display import Markdown

    return Markdown(text)  # type: ignore[no-untyped-call]
