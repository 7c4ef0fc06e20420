"""Reading runs back: one run's parquet, the climb across recorded runs, flips between two runs,
the answer/refuse confusion matrix, failures with the grader's evidence."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from wikiqa.evals import Task, load_tasks, resolve_suite, results_dir
from wikiqa.evals.analysis import COLUMNS, render, summarize, task_verdicts, trial_verdicts
from wikiqa.evals.analysis.compare import DifferentSuites, compare
from wikiqa.evals.analysis.stats import count_text, wilson
from wikiqa.evals.climb.changelog import ChangelogRow, read
from wikiqa.evals.tasks.task import HOLDOUTS
from wikiqa.inputs import loads, read_parquet
from wikiqa.project import project_root
from wikiqa.sources.cassette_drift import Drift, drift
from wikiqa.sources.cassette_files import Cassette, CassetteError, cassette_of, read_cassette

# What every reader of a run relies on (one row per graded dimension of a trial); a parquet
# without them is some other table. Each reader checks the further columns it needs.
RUN_COLUMNS = ("dimension", "verdict")


def load_run(run: str | Path | None = None, out: Path | None = None) -> pd.DataFrame:
    """A run's long table: by parquet path, by run id, or (None) the latest run. Run ids are
    looked up in the results folder, then in its scratch area (exploratory runs); the latest
    run is the newest recorded one, or the newest exploratory one when none is recorded."""
    return read_parquet(find_run(run, out), "run", RUN_COLUMNS)


def find_run(run: str | Path | None = None, out: Path | None = None) -> Path:
    """The parquet of a run (see `load_run`), or FileNotFoundError naming where it looked."""
    base = out or results_dir()
    folders = [base / "runs", base / "scratch" / "runs"]
    if run is None:
        for folder in folders:
            paths = sorted(folder.glob("*.parquet"))
            if paths:
                return paths[-1]
        raise FileNotFoundError(f"no runs under {folders[0]} or {folders[1]}; run a step first")
    path = Path(run)
    if path.suffix:
        if not path.is_absolute() and not path.exists():
            path = base / path  # a change-log path, relative to the results folder
        if not path.exists():
            raise FileNotFoundError(f"no such run: {path}")
        return path
    for folder in folders:
        if (folder / f"{run}.parquet").exists():
            return folder / f"{run}.parquet"
    raise FileNotFoundError(f"no run {run!r} under {folders[0]} or {folders[1]}")


def drift_between(
    a: str | Path, b: str | Path, out: Path | None = None
) -> tuple[Drift | None, str | None]:
    """The drift between two runs' cassettes (beside their parquets), or (None, why not)."""
    cassettes = []
    for run in (a, b):
        try:
            path = cassette_of(find_run(run, out))
        except FileNotFoundError as err:
            return None, str(err)
        if not path.exists():
            return None, f"run {run} has no cassette (recorded before cassettes)"
        try:
            cassettes.append(_cassette(path, path.stat().st_mtime_ns))
        except CassetteError as err:
            return None, str(err)
    return drift(*cassettes), None


@lru_cache(maxsize=32)
def _cassette(path: Path, mtime_ns: int) -> Cassette:
    return read_cassette(path)  # the climb reads each run's cassette once per change


def climb(out: Path | None = None) -> pd.DataFrame:
    """The hillclimb table: one row per recorded run, in the order they were recorded, with
    passes/applicable per dimension, each rate's 95% interval, and the paired Δ of tasks passing
    everything against the row it names (`vs`), or why there is none."""
    records = []
    for number, r in enumerate(read(out or results_dir()), start=1):
        record: dict[str, Any] = {
            "row": number, "date": r.date, "run_id": r.run_id, "experiment": r.experiment,
            "change": r.change, "kind": r.kind, "suite": r.suite, "suite_hash": r.suite_hash,
            "model": r.model, "trials": r.trials,
        }  # fmt: skip
        for d in COLUMNS:
            if d in r.dimensions:
                record[d] = count_text(*r.dimensions[d])
                record |= _rate_columns(d, *r.dimensions[d])
        if r.tasks_pass:
            record["tasks"] = count_text(*r.tasks_pass)
            record |= _rate_columns("tasks", *r.tasks_pass)
        delta = r.delta.tasks if r.delta else None
        record["Δ tasks [95% CI]"] = (
            f"{delta['diff']:+.3f} [{delta['ci'][0]:+.2f}, {delta['ci'][1]:+.2f}]"
            + (" *" if delta["significant"] else "")
            if delta
            else "-"
        )
        record["vs"] = r.delta.vs_experiment if r.delta else (r.delta_note or "-")
        record["drift"] = _drift_cell(r, out) if r.delta else None
        records.append(record)
    return pd.DataFrame.from_records(records)


def _rate_columns(name: str, passes: int, applicable: int) -> dict[str, float | None]:
    bounds = wilson(passes, applicable)
    return {
        f"{name}_rate": passes / applicable if applicable else None,
        f"{name}_low": bounds[0] if bounds else None,
        f"{name}_high": bounds[1] if bounds else None,
    }


def _drift_cell(row: ChangelogRow, out: Path | None) -> str | None:
    """Beside a row's Δ: how much of the text and searches changed since the run it is
    compared with (`revs` articles at other revisions, `hits` searches with other hits)."""
    if row.delta is None:
        return None
    found, _ = drift_between(row.delta.vs, row.run_id, out)
    if found is None:
        return None
    mark = " CONFOUNDED" if found.confounded else ""
    return (
        f"{found.drifted_articles}/{found.shared_articles} revs, "
        f"{found.drifted_searches}/{found.shared_searches} hits{mark}"
    )


def latest_pair(out: Path | None = None) -> tuple[str | None, str | None]:
    """(A, B) for "did it help?": B the newest recorded run, A the row its Δ is against (the
    last earlier row of the same suite and suite version); A is None when there is none. The
    hillclimb and failures notebooks both read the newest run this way."""
    rows = read(out or results_dir())
    if not rows:
        return None, None
    newest = rows[-1]
    before = next(
        (r for r in reversed(rows[:-1])
         if r.suite == newest.suite and r.suite_hash == newest.suite_hash),
        None,
    )  # fmt: skip
    return (before.run_id if before else None), newest.run_id


def compare_runs(a: str, b: str, out: Path | None = None) -> pd.DataFrame:
    """B - A per dimension on the tasks both runs decided, with the 95% interval and McNemar's p
    (`wikiqa compare`), formatted to be read: rates to 3 places, the interval as one span,
    significance said in words. Raises `DifferentSuites` for runs of different suites."""
    result = compare(load_run(a, out), load_run(b, out))
    rows = {
        dimension: {
            "tasks both decided": r["tasks"],
            "A": f"{r['a']:.3f}",
            "B": f"{r['b']:.3f}",
            "B - A [95% CI]": f"{r['diff']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]",
            "gained": r["gained"],
            "lost": r["lost"],
            "McNemar p": f"{r['mcnemar_p']:.3f}",
            "significant": "yes" if r["significant"] else "no",
        }
        for dimension, r in result.rows.items()
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def drift_line(a: str, b: str, out: Path | None = None) -> str:
    """The drift between two runs, as `wikiqa compare` prints it beside the Δ."""
    found, why = drift_between(a, b, out)
    return found.line() if found is not None else f"drift: unknown ({why})"


def flips(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Tasks whose verdict (per dimension or overall) changed between two runs of one suite;
    runs of different suites raise `DifferentSuites` (0 flips between them would mean nothing)."""
    suites = {(str(f["suite"].iloc[0]), str(f["suite_hash"].iloc[0])) for f in (before, after)}
    if len(suites) > 1:
        raise DifferentSuites(f"the runs graded different suites: {sorted(suites)}")
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
                    "citations": [c["title"] for c in loads(first["citations"], "citations")],
                    "detail": loads(first["detail"], "detail"),
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
        "output_tokens_per_call": float(called["output_tokens"].sum() / called["model_calls"].sum())
        if len(called)
        else 0.0,
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


def run_tasks(frame: pd.DataFrame) -> dict[str, Task]:
    """The tasks of the suite a run graded, by id (its held-out split too: reading a run's
    failures is not a scored run), so a failing task can be re-run with its trace."""
    name = str(frame["suite"].iloc[0])
    held = {split: suite for suite, split in HOLDOUTS.items()}
    path = resolve_suite(held[name], holdout=True) if name in held else resolve_suite(name)
    return {t.id: t for t in load_tasks(path)}


def resolve_out(out: str | Path | None) -> Path | None:
    """A notebook's OUT: None stays None (the results folder); a relative path is read from the
    project root, wherever the kernel's working directory is (papermill's `--cwd notebooks`
    would make `results/scratch` point into notebooks/)."""
    if out is None or str(out) == "":
        return None
    path = Path(out).expanduser()
    return path if path.is_absolute() else project_root() / path
