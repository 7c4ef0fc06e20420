"""What the notebooks share: run a hillclimb step, show it, record it, compare runs.

The notebooks in `experiments/` and `notebooks/` stay short because everything they reuse lives
here (and is unit-tested here), and `wikiqa experiment run` drives them through papermill.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from wikiqa.agent import DEFAULT_BUDGET
from wikiqa.evals.changelog import read, record_run
from wikiqa.evals.report import COLUMNS, Summary, render, summarize, task_verdicts, trial_verdicts
from wikiqa.evals.runner import RunConfig, RunOutcome, results_dir, run_eval

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def run_step(
    experiment: str,
    *,
    model: str = "extractive",
    judge: str | None = None,
    source: str = "snapshot",
    suite: str = "dev",
    trials: int = 3,
    concurrency: int = 8,
    limit: int | None = None,
    change: str = "",
    kind: str = "adhoc",
    retrieval: bool = True,
    budget: int = DEFAULT_BUDGET,
    read_first: int = 0,
    out: str | Path | None = None,
) -> RunOutcome:
    """One hillclimb step: run the suite and return the outcome (parquet already written)."""
    config = RunConfig(
        experiment=experiment, model=model, judge=judge, source=source, suite=suite,
        trials=trials, concurrency=concurrency, limit=limit, change=change, kind=kind,
        retrieval=retrieval, budget=budget, read_first=read_first,
        out=Path(out) if out else results_dir(),
    )  # fmt: skip
    return run_eval(config, progress=False)


def table(summary: Summary) -> pd.DataFrame:
    """Category x dimension, as passes/applicable strings (the notebook's headline table)."""
    rows = {}
    for category, cells in summary.cells.items():
        rows[category] = {d: cells[d].text() if d in cells else "-" for d in COLUMNS}
        rows[category]["tasks"] = summary.task_cells[category].text()
    return pd.DataFrame.from_dict(rows, orient="index")


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
    ax = frame.plot.bar(figsize=(10, 4), ylim=(0, 1), rot=0, width=0.8)
    ax.set_ylabel("pass rate (majority vote)")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1, 0.5), fontsize="small")
    plt.tight_layout()
    return ax.figure


def record(outcome: RunOutcome) -> dict[str, Any]:
    """Append the run to the change log (jsonl + markdown) and say where everything is."""
    out = outcome.meta.config.out
    row = record_run(outcome, out)
    print(f"parquet:   {outcome.parquet}")
    print(f"changelog: {out / 'CHANGELOG.md'} (+ changelog.jsonl)")
    return row


# -- reading runs back ----------------------------------------------------------------------------


def load_run(run: str | Path | None = None, out: Path | None = None) -> pd.DataFrame:
    """A run's long table: by parquet path, by run id, or (None) the latest run."""
    folder = (out or results_dir()) / "runs"
    if run is None:
        paths = sorted(folder.glob("*.parquet"))
        if not paths:
            raise FileNotFoundError(f"no runs under {folder}; run an experiment first")
        return pd.read_parquet(paths[-1])
    path = Path(run)
    if not path.suffix:
        path = folder / f"{run}.parquet"
    elif not path.is_absolute() and not path.exists():
        path = folder.parent / path  # a change-log path, relative to the results folder
    return pd.read_parquet(path)


def climb(out: Path | None = None) -> pd.DataFrame:
    """The hillclimb table: one row per recorded run, passes/applicable per dimension."""
    rows = read(out or results_dir())
    records = []
    for r in rows:
        dims = r.get("dimensions", {})
        record = {
            k: r.get(k)
            for k in ("date", "run_id", "experiment", "change", "kind", "model", "trials")
        }
        for d in COLUMNS:
            if d in dims:
                passes, applicable = dims[d]
                record[d] = f"{passes}/{applicable}"
                record[f"{d}_rate"] = passes / applicable if applicable else None
        tasks = r.get("tasks_pass")
        record["tasks"] = f"{tasks[0]}/{tasks[1]}" if tasks else None
        record["tasks_rate"] = tasks[0] / tasks[1] if tasks and tasks[1] else None
        records.append(record)
    return pd.DataFrame.from_records(records)


def plot_climb(climb_frame: pd.DataFrame) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    labels = [f"{i}: {e}" for i, e in enumerate(climb_frame.get("experiment", []))]
    for column in [*COLUMNS, "tasks"]:
        key = f"{column}_rate"
        if key in climb_frame and climb_frame[key].notna().any():
            ax.plot(labels, climb_frame[key], marker="o", label=column)
    ax.set_ylim(0, 1)
    ax.set_ylabel("pass rate")
    ax.set_title("The climb, one point per recorded run")
    ax.legend(loc="center left", bbox_to_anchor=(1, 0.5), fontsize="small")
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    plt.tight_layout()
    return fig


def flips(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Tasks whose verdict (per dimension or overall) changed between two runs."""
    a = task_verdicts(before).set_index("task_id")
    b = task_verdicts(after).set_index("task_id")
    rows = []
    for task_id in a.index.intersection(b.index):
        for column in [*COLUMNS, "task"]:
            was = a.at[task_id, column] if column in a else None
            now = b.at[task_id, column] if column in b else None
            if isinstance(was, str) and isinstance(now, str) and was != now:
                rows.append(
                    {
                        "task_id": task_id,
                        "category": a.at[task_id, "category"],
                        "dimension": column,
                        "before": was,
                        "after": now,
                    }
                )
    return pd.DataFrame.from_records(
        rows, columns=["task_id", "category", "dimension", "before", "after"]
    )


def confusion(frame: pd.DataFrame) -> pd.DataFrame:
    """Answer/refuse decisions (per trial) against what the task expected."""
    trials = trial_verdicts(frame)
    trials = trials[~trials["infra_error"]]
    matrix = pd.crosstab(
        trials["should_refuse"].map({False: "should answer", True: "should refuse"}),
        trials["decision"],
    )
    return matrix.reindex(columns=["answer", "refusal"], fill_value=0)


def failures(frame: pd.DataFrame) -> pd.DataFrame:
    """Every failing task x dimension (majority vote), with the first failing trial's evidence."""
    verdicts = task_verdicts(frame)
    rows = []
    for _, task in verdicts.iterrows():
        for dimension in COLUMNS:
            if task.get(dimension) != "fail":
                continue
            hit = frame[
                (frame.task_id == task.task_id)
                & (frame.dimension == dimension)
                & (frame.verdict == "fail")
            ]
            first = hit.iloc[0]
            rows.append(
                {
                    "task_id": task.task_id,
                    "category": task.category,
                    "dimension": dimension,
                    "question": first["question"],
                    "outcome": first["outcome"],
                    "answer": first["answer"]
                    if first["outcome"] == "answer"
                    else first["refusal_reason"],
                    "citations": [c["title"] for c in json.loads(first["citations"])],
                    "detail": json.loads(first["detail"]),
                }
            )
    return pd.DataFrame.from_records(rows)


def model_figures(frame: pd.DataFrame) -> dict[str, float]:
    """Speed and behaviour of the answering model in a run, per trial: the median over trials
    of a trial's wall time per model call (retrieval is milliseconds; the parquet keeps no
    per-call times, the trace in the journal does), output tokens per second, seconds per
    task, and how often the grounding checks had to step in."""
    trials = frame.drop_duplicates(["task_id", "trial"])
    called = trials[trials["model_calls"] > 0]
    seconds = called["latency_ms"].sum() / 1000
    return {
        "trials": float(len(trials)),
        "seconds_per_call_p50_by_trial": float(
            (called["latency_ms"] / called["model_calls"]).median() / 1000
        )
        if len(called)
        else 0.0,
        "output_tokens_per_s": float(called["output_tokens"].sum() / seconds) if seconds else 0.0,
        "seconds_per_task": float(trials["latency_ms"].mean() / 1000),
        "answered": float((trials["outcome"] == "answer").mean()),
        "repair_needed": float((trials["repairs"] > 0).mean()),
        "ungrounded_refusals": float((trials["reason_code"] == "ungrounded").mean()),
        "no_decision_or_budget": float(
            trials["reason_code"].isin(["no_decision", "budget_exhausted"]).mean()
        ),
    }


def summary_of(frame: pd.DataFrame) -> str:
    return render(summarize(frame))


# -- papermill --------------------------------------------------------------------------------


def grid(params: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """`-p NAME VALUE` pairs to runs: a name given several values makes a grid (cartesian)."""
    values: dict[str, list[Any]] = {}
    for name, raw in params:
        values.setdefault(name, []).append(_coerce(raw))
    names = list(values)
    return [
        dict(zip(names, combo, strict=True)) for combo in itertools.product(*values.values())
    ] or [{}]


def _coerce(raw: str) -> Any:
    """Parameter values as papermill's CLI reads them: JSON when it parses, else the string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def execute(notebook: Path, parameters: dict[str, Any], out: Path | None = None) -> Path:
    """Run one notebook with papermill; the executed copy goes to results/notebooks/."""
    import papermill as pm

    folder = (out or results_dir()) / "notebooks"
    folder.mkdir(parents=True, exist_ok=True)
    suffix = "".join(f"-{k.lower()}={_slug(v)}" for k, v in parameters.items() if k not in {"OUT"})
    target = folder / f"{notebook.stem}{suffix}.ipynb"
    pm.execute_notebook(
        str(notebook),
        str(target),
        parameters=parameters,
        cwd=str(notebook.parent),
        progress_bar=False,
    )
    return target


def _slug(value: Any) -> str:
    text = str(value)
    return "".join(c if c.isalnum() or c in ".=_" else "_" for c in text)[:40]


def current_step() -> Path:
    """The highest-numbered experiment notebook that runs on the offline default (no optional
    extra): what `make eval` runs on a fresh clone."""
    steps = [
        p
        for p in sorted(EXPERIMENTS.glob("[0-9][0-9]_*.ipynb"))
        if not json.loads(p.read_text(encoding="utf-8"))["metadata"]
        .get("wikiqa", {})
        .get("requires")
    ]
    if not steps:
        raise FileNotFoundError(f"no step notebooks in {EXPERIMENTS}")
    return steps[-1]
