"""Reading runs back: one run's parquet, the climb across recorded runs, flips between two runs,
the answer/refuse confusion matrix, failures with the grader's evidence."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pandas as pd

from wikiqa.evals import Task, load_tasks, resolve_suite, results_dir
from wikiqa.evals.analysis import COLUMNS, render, summarize, task_verdicts, trial_verdicts
from wikiqa.evals.analysis.compare import DifferentSuites, compare
from wikiqa.evals.analysis.stats import count_text, wilson
from wikiqa.evals.climb.changelog import ChangelogRow, delta_text, log_kept, read, unlike
from wikiqa.evals.tasks.task import HOLDOUTS
from wikiqa.experiment.drift import drift_cell
from wikiqa.experiment.runs import load_run
from wikiqa.inputs import InputError, loads
from wikiqa.project import project_root
from wikiqa.registry import model_levers


def climb(out: Path | None = None) -> pd.DataFrame:
    """The hillclimb table: one row per recorded run, in the order they were recorded, with its
    line (`model · suite`: the model without where it was served, its options being the
    `lever`), passes/applicable per dimension, each rate's 95% interval, and the paired Δ of
    tasks passing everything against the row it names (`vs`), or why there is none, and what
    makes that row unlike this one (`unlike`: another model, source or judge). The Δ's figures
    are columns too (`delta`, `delta_low`, `delta_high`, `delta_p`); `significant` only where
    the pair is like with like (`like`): McNemar's verdict on a pair of another model, source
    or judge is not the change's. `record` says what vouches for the row (`log`, `foreign log`,
    `no log kept`)."""
    records = []
    folder = out or results_dir()
    rows = read(folder)
    by_id = {r.run_id: r for r in rows}
    for number, r in enumerate(rows, start=1):
        model, lever = model_levers(r.model)
        record: dict[str, Any] = {
            "row": number, "date": r.date, "run_id": r.run_id, "experiment": r.experiment,
            "change": r.change, "kind": r.kind, "suite": r.suite, "suite_hash": r.suite_hash,
            "model": model, "lever": lever, "line": f"{model} · {r.suite}", "trials": r.trials,
        }  # fmt: skip
        for d in COLUMNS:
            if d in r.dimensions:
                record[d] = count_text(*r.dimensions[d])
                record |= _rate_columns(d, *r.dimensions[d])
        if r.tasks_pass:
            record["tasks"] = count_text(*r.tasks_pass)
            record |= _rate_columns("tasks", *r.tasks_pass)
        delta = r.delta.tasks if r.delta else None
        base = _base_of(r, by_id)
        differs = unlike(base, r) if base is not None else []
        # significance is claimed only like with like: a Δ against a row of another model,
        # source or judge (or a base that cannot be read back) measures that difference too
        like = delta is not None and base is not None and not differs
        significant = like and bool(delta and delta["significant"])
        record |= {
            "delta": delta["diff"] if delta else None,
            "delta_low": delta["ci"][0] if delta else None,
            "delta_high": delta["ci"][1] if delta else None,
            "delta_p": delta["mcnemar_p"] if delta else None,
            "like": like,
            "significant": significant,
        }
        record["Δ tasks [95% CI]"] = (
            f"{delta['diff']:+.3f} [{delta['ci'][0]:+.2f}, {delta['ci'][1]:+.2f}]"
            + (" *" if significant else "")
            if delta
            else "-"
        )
        record["vs"] = r.delta.vs_experiment if r.delta else (r.delta_note or "-")
        record["unlike"] = (
            "; ".join(differs)
            if differs
            else ("its base's row is not in this change log" if delta and base is None else "")
        )
        record["drift"] = drift_cell(r, out) if r.delta else None
        record["record"] = _record_cell(r, folder)
        records.append(record)
    return pd.DataFrame.from_records(records)


def steps(climb: pd.DataFrame) -> pd.DataFrame:
    """One row per step of each suite, in step order (the climb's chart points): of a step's
    rows on a suite, the newest whose Δ is against another step (what the step changed), else
    the newest that is not a regrade of the step itself, else the newest. A regrade's Δ
    against its own original measures the grader, not the step, so it does not stand for it."""
    if not len(climb):
        return climb
    chosen = []
    for _, group in climb.groupby(["suite", "experiment"], sort=False):
        against = group["vs"].astype(str)
        has_delta = group["delta"].notna() if "delta" in group else group["vs"].isna()
        changes = group[has_delta & (against != group["experiment"])]
        itself = has_delta & (against == group["experiment"])
        pick = changes if len(changes) else group[~itself] if (~itself).any() else group
        chosen.append(pick.iloc[-1])
    frame = pd.DataFrame(chosen)
    order = frame["experiment"].map(step_order)
    frame = frame.assign(_order=order).sort_values(["suite", "_order", "experiment"])
    return frame.drop(columns="_order").reset_index(drop=True)


def step_order(experiment: object) -> int:
    """A step's number (`NN_name`), for ordering; unnumbered names last."""
    head = str(experiment).split("_", 1)[0]
    return int(head) if head.isdigit() else 10**6


def _base_of(row: ChangelogRow, by_id: dict[str, ChangelogRow]) -> ChangelogRow | None:
    """The row a row's Δ is against: in its own change log, else (an exploratory run paired
    with the committed climb) in the committed one."""
    if row.delta is None:
        return None
    if row.delta.vs not in by_id and results_dir().exists():
        with contextlib.suppress(InputError):
            by_id = by_id | {r.run_id: r for r in read(results_dir())}
    return by_id.get(row.delta.vs)


def _record_cell(row: ChangelogRow, out: Path) -> str:
    """What vouches for a row, as the change log says it: `log`, `foreign log`, `no log kept`."""
    try:
        return log_kept(row, out)
    except (InputError, OSError, ValueError):
        return "log unreadable"


def _rate_columns(name: str, passes: int, applicable: int) -> dict[str, float | None]:
    bounds = wilson(passes, applicable)
    return {
        f"{name}_rate": passes / applicable if applicable else None,
        f"{name}_low": bounds[0] if bounds else None,
        f"{name}_high": bounds[1] if bounds else None,
    }


def latest_pair(out: Path | None = None) -> tuple[str | None, str | None]:
    """(A, B) for "did it help?": B the newest recorded row, A the row its Δ was paired with when
    it was recorded (the step it changes, `VS`), or None when it has none: a row is never
    paired with another row than its base. The hillclimb and failures notebooks read it so."""
    rows = read(out or results_dir())
    if not rows:
        return None, None
    newest = rows[-1]
    return (newest.delta.vs if newest.delta is not None else None), newest.run_id


def pair_for(
    run_b: str | None = None, run_a: str | None = None, out: Path | None = None
) -> tuple[str | None, str | None, str]:
    """(A, B, why) for "did it help?": B is `run_b` or the newest recorded row; A is `run_a`
    when given, else the row B's Δ was recorded against (its step's `VS`, `latest_pair`'s
    rule), else None, and `why` says plainly why B has no A: a step is never paired with a row
    other than its base."""
    rows = read(out or results_dir())
    if run_b is None and not rows:
        return None, None, "no recorded run yet"
    b = run_b or rows[-1].run_id
    if run_a is not None:
        return run_a, b, "RUN_A, as given"
    row = next((r for r in reversed(rows) if r.run_id == b), None)
    if row is None:
        return None, b, f"{b} is not a recorded row: name the run to compare it with (RUN_A)"
    if row.delta is None:
        why = row.delta_note or "no base named (a step's VS)"
        return None, b, f"{row.experiment} ({row.suite}) has no Δ: {why}"
    base = row.delta.vs_experiment
    return row.delta.vs, b, f"{base}, the base {row.experiment}'s Δ was recorded against"


def unlike_runs(a: str, b: str, out: Path | None = None) -> list[str]:
    """What makes runs A and B other than like with like (model, source, judge), read from
    their parquets; empty when a Δ between them measures only the change."""
    first = [load_run(run, out).iloc[0] for run in (a, b)]
    return unlike(*first)


def delta_line(row: ChangelogRow, out: Path | None = None) -> str:
    """A recorded row's Δ as `wikiqa experiment run` prints it, saying when the row it is
    against ran another model, source or judge (read from this log, else the committed one)."""
    if row.delta is None:
        return delta_text(row)
    rows = {r.run_id: r for r in read(out or results_dir())}
    if row.delta.vs not in rows and results_dir().exists():
        rows |= {r.run_id: r for r in read(results_dir())}
    return delta_text(row, rows.get(row.delta.vs))


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


def lines(climb: pd.DataFrame) -> pd.DataFrame:
    """One row per line of the climb (a model on a suite), the line with the newest run first:
    how many runs, its newest run (its step, date, tasks passing every dimension and Δ), and
    its best on the suite version of its newest run."""
    if not len(climb):
        return climb
    records = []
    for line, group in climb.groupby("line", sort=False):
        newest = group.iloc[-1]
        same = group[group["suite_hash"] == newest["suite_hash"]]
        best = same.loc[same["tasks_rate"].idxmax()] if same["tasks_rate"].notna().any() else None
        records.append({
            "line": line, "runs": len(group), "newest": newest["experiment"],
            "date": newest["date"], "tasks pass-all": newest.get("tasks", "-"),
            "Δ [95% CI]": newest["Δ tasks [95% CI]"]
            + (f" vs {newest['vs']}" if newest["Δ tasks [95% CI]"] != "-" else "")
            + (f" (not like with like: {newest['unlike']})" if newest["unlike"] else ""),
            "best on this suite version": "-" if best is None
            else f"{best['tasks']} ({best['experiment']})",
            "_row": newest["row"],
        })  # fmt: skip
    frame = pd.DataFrame.from_records(records).sort_values("_row", ascending=False)
    return frame.drop(columns="_row").reset_index(drop=True)


def evidence_text(detail: Any, width: int = 160) -> str:
    """A grader's evidence (its `detail`), as lines a reader can take in: one line per field,
    lists and nested fields spelled out, each line cut at `width` characters on a word."""

    def say(value: Any) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{k.replace('_', ' ')} {say(v)}" for k, v in value.items())
        if isinstance(value, list):
            return "; ".join(say(v) for v in value) if value else "none"
        if isinstance(value, float):
            return f"{value:.2f}"
        return str(value)

    if not isinstance(detail, dict):
        return _cut(say(detail), width)
    return "\n".join(_cut(f"{k.replace('_', ' ')}: {say(v)}", width) for k, v in detail.items())


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + " …"
