"""One hillclimb step from a notebook: run the suite, show the table and plots, record the run.

A step notebook holds only what it changes (its hypothesis, its `parameters` cell) and calls
`step(globals())`: everything every step repeats lives here. A step run from Jupyter or plain
papermill is exploratory (results/scratch/, no change-log row) unless `RECORD = True`;
`wikiqa experiment run` names it by its file and chooses where it goes (`--record`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from wikiqa.agent import DEFAULT_BUDGET
from wikiqa.evals import RunConfig, RunOutcome, evaluate, render, results_dir, scratch_dir
from wikiqa.evals.analysis import COLUMNS, Summary
from wikiqa.evals.climb import ChangelogRow
from wikiqa.experiment.notebooks import STEP_ENV
from wikiqa.experiment.params import ParameterError, StepParameters, parameters


def step(namespace: Mapping[str, Any], **levers: object) -> RunOutcome:
    """Run this notebook's step with its parameters (`namespace`: the notebook's globals) and
    show everything a step shows. `levers` are the extractive answerer's options this step sets
    (`abstain=ABSTAIN`); they join whatever MODEL sets."""
    p = parameters(dict(namespace))
    name = step_name_of(namespace)
    if p.RECORD and name is None:
        raise ParameterError(
            "RECORD = True: this kernel does not know its notebook's file name, which names the "
            "step in the change log; record with `wikiqa experiment run NOTEBOOK --record`"
        )
    model = p.MODEL
    for lever, value in levers.items():
        model = with_lever(model, lever, value)
    out = Path(p.OUT) if p.OUT else (results_dir() if p.RECORD else scratch_dir())
    _show_parameters(p, name, model, out)
    with _model_settings(p), _served(model, p.EXECUTOR) as spec:
        config = _config(p, name or "unnamed-step", spec, out)
        outcome, row = evaluate(config, "record" if p.RECORD else "explore", progress=False)
    show(outcome, row, name or "unnamed-step")
    return outcome


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


def _config(p: StepParameters, name: str, model: str, out: Path) -> RunConfig:
    try:
        return RunConfig(
            experiment=name, model=model, judge=p.JUDGE, source=p.SOURCE, suite=p.SUITE,
            trials=p.TRIALS, concurrency=p.CONCURRENCY, limit=p.LIMIT, change=p.CHANGE,
            kind=p.KIND, retrieval=p.RETRIEVAL, budget=p.BUDGET or DEFAULT_BUDGET,
            read_first=p.READ_FIRST, spotlight=p.SPOTLIGHT, out=out, executor=p.EXECUTOR,
        )  # fmt: skip
    except ValueError as err:
        raise ParameterError(str(err).splitlines()[-1]) from None


@contextmanager
def _model_settings(p: StepParameters) -> Iterator[None]:
    """MAX_TOKENS and TIMEOUT reach the model clients through their settings, for this run only."""
    names = {"WIKIQA_MODEL_MAX_TOKENS": p.MAX_TOKENS, "WIKIQA_MODEL_TIMEOUT": p.TIMEOUT}
    saved = {k: os.environ.get(k) for k in names}
    try:
        for k, v in names.items():
            if v is not None:
                os.environ[k] = str(v)
        yield
    finally:
        for k, old in saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old


@contextmanager
def _served(model: str, executor: str = "local") -> Iterator[str]:
    """`local` starts the local model's server for the run (and stops it); any other spec is
    used as given. Under Ray, `local` goes to the run as it is: each node starts its own."""
    if model != "local" or executor != "local":
        yield model
        return
    from wikiqa.models import local as local_model

    server, spec = local_model.start()
    try:
        yield spec
    finally:
        server.terminate()


def _show_parameters(p: StepParameters, name: str | None, model: str, out: Path) -> None:
    shown = p.model_dump() | {"MODEL": model}
    where = "recorded" if p.RECORD else "exploratory (not recorded)"
    print(
        f"step {name or '(unnamed: the kernel does not know its file)'}: {where}, into {_short(out)}"
    )
    print("  " + " · ".join(f"{k}={v!r}" for k, v in shown.items() if v not in (None, "")))


def _short(path: Path) -> str:
    """A path as a reader should see it: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(Path(__file__).resolve().parents[2]))
    except ValueError:
        return path.name if path.is_absolute() else str(path)


def show(outcome: RunOutcome, row: ChangelogRow | None, name: str) -> None:
    """What every step shows: the table, the plot, abstention, risk-coverage, the record."""
    import matplotlib.pyplot as plt

    summary = outcome.summary
    print(render(summary))
    _display(_markdown("## Category x dimension (passes/applicable [95% interval], majority vote)"))
    _display(table(summary))
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


def with_lever(model: str, lever: str, value: object) -> str:
    """`model` with one extractive lever set (`extractive:scoring=idf` + hits_read=5 ->
    `extractive:scoring=idf,hits_read=5`), so a step's own lever survives a MODEL that sets
    others. The same lever set both ways is a mistake, said at once; another model is returned
    unchanged (the lever is the extractive answerer's)."""
    kind, _, options = model.partition(":")
    if kind != "extractive":
        print(f"{lever} applies to the extractive answerer only; running {model} unchanged")
        return model
    given = dict(item.split("=", 1) for item in filter(None, options.split(",")) if "=" in item)
    if lever in given and given[lever] != str(value):
        raise ValueError(f"{lever} is set twice: {given[lever]} in MODEL, {value} as the lever")
    given[lever] = str(value)
    return "extractive:" + ",".join(f"{k}={v}" for k, v in given.items())


def table(summary: Summary) -> pd.DataFrame:
    """Category x dimension, as "passes/applicable [95% interval]" (the headline table)."""
    rows = {}
    for category, cells in summary.cells.items():
        rows[category] = {d: cells[d].text(interval=True) if d in cells else "-" for d in COLUMNS}
        rows[category]["tasks"] = summary.task_cells[category].text(interval=True)
    return pd.DataFrame.from_dict(rows, orient="index")


def abstention(summary: Summary) -> pd.DataFrame:
    """SimpleQA's outcomes and what confidence is worth, as one small table."""
    rows: dict[str, object] = {}
    if summary.simpleqa is not None:
        s = summary.simpleqa
        for name, count in [
            ("correct", s.correct),
            ("incorrect", s.incorrect),
            ("not attempted", s.not_attempted),
            ("undecided", s.undecided),
        ]:
            rows[name] = f"{count}/{s.tasks}"  # fmt: skip
        rows["correct given attempted"] = s.correct_given_attempted
        rows["F-score"] = s.f_score
    if summary.confidence is not None:
        rows["confidence AUROC (correctness)"] = summary.confidence.auroc
        rows["expected calibration error"] = summary.confidence.ece
        rows["answered trials with decided correctness"] = summary.confidence.points
    return pd.DataFrame.from_dict(rows, orient="index", columns=["value"])


def plot_risk_coverage(summary: Summary, title: str = "") -> Any:
    """Risk (error among answered) against coverage, answering the most confident first; a
    confidence worth having makes the curve fall to the left."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    curve = summary.confidence.curve if summary.confidence else []
    if curve:
        ax.plot([p.coverage for p in curve], [p.risk for p in curve], marker="o")
    else:
        ax.text(0.5, 0.5, "no answered trial with decided correctness", ha="center")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1)
    ax.set_xlabel("coverage (share answered, most confident first)")
    ax.set_ylabel("risk (share incorrect)")
    ax.set_title(title or "Risk-coverage")
    plt.tight_layout()
    return fig


def rates(summary: Summary) -> pd.DataFrame:
    """Category x dimension pass rates (NaN where nothing applied), for plots."""
    return pd.DataFrame.from_dict(
        {
            c: {d: cells[d].rate if d in cells else None for d in COLUMNS}
            for c, cells in summary.cells.items()
        },
        orient="index",
    ).astype(float)


def plot(summary: Summary, title: str = "") -> Any:
    """Pass rate per dimension, one group of bars per category."""
    import matplotlib.pyplot as plt

    frame = rates(summary).drop(index="all", errors="ignore")
    # error bars: distance from the rate to each end of its 95% interval (NaN where none)
    errors = []
    for d in frame.columns:
        below, above = [], []
        for category in frame.index:
            cell = summary.cells[str(category)].get(str(d))
            if cell is None or cell.rate is None or cell.low is None or cell.high is None:
                below.append(float("nan"))
                above.append(float("nan"))
            else:
                below.append(cell.rate - cell.low)
                above.append(cell.high - cell.rate)
        errors.append([below, above])
    ax = frame.plot.bar(figsize=(10, 4), ylim=(0, 1), rot=25, width=0.8, yerr=errors, capsize=2)
    plt.setp(ax.get_xticklabels(), ha="right")  # category names no longer overlap
    # a dimension that does not apply is no bar at all, which would read as 0: say "n/a"
    width = 0.8 / len(frame.columns)
    for i in range(len(frame.index)):
        for j, d in enumerate(frame.columns):
            if frame[d].isna().iloc[i]:
                x = i - 0.4 + width * (j + 0.5)
                ax.text(x, 0.01, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
    ax.set_ylabel("pass rate (majority vote), 95% interval")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1, 0.5), fontsize="small")
    plt.tight_layout()
    return ax.figure


def record_line(outcome: RunOutcome, row: ChangelogRow | None) -> None:
    """Say where the run went, and whether (and why not) it became a change-log row."""
    out = outcome.meta.config.out
    print(f"parquet:   {_short(outcome.parquet)}")
    if row is None:
        print("changelog: not recorded (exploratory: RECORD = False)")
    elif row.run_id != outcome.meta.run_id:
        print(f"changelog: not recorded: the same inputs as the recorded row {row.run_id}")
    else:
        print(f"changelog: {_short(out / 'CHANGELOG.md')} (+ changelog.jsonl)")
    print(
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
