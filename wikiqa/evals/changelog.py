"""The change log: one row per recorded run, in `changelog.jsonl` and as `CHANGELOG.md`.

The markdown is regenerated from the JSON lines, so the two never disagree. Rows carry `kind`
(baseline, prompt, retrieval, grader, model, holdout, ...): grader rows recalibrate the
instrument, so scores are not directly comparable across them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd

from wikiqa.evals.compare import compare
from wikiqa.evals.report import COLUMNS
from wikiqa.evals.runs import InfrastructureFailure, RunOutcome
from wikiqa.evals.stats import count_text
from wikiqa.secrets import scrub

HEADER = """# Change log

One row per recorded run: what changed, what kind of change it was, and the per-dimension pass
rate over the whole suite (passes/applicable after the majority vote across trials, with the 95%
Wilson interval of the rate). The last
column is the paired change in tasks passing everything against the previous row of the same
suite, with its 95% interval and McNemar's p; only a significant one is more than noise. Rows of
kind `grader` recalibrate the instrument; compare scores across them with care. Generated from
`changelog.jsonl` by `wikiqa.evals.changelog`; do not edit by hand.

"""


def row(outcome: RunOutcome) -> dict[str, Any]:
    meta, summary = outcome.meta, outcome.summary
    total = summary.cells.get("all", {})
    tasks = summary.task_cells.get("all")
    return {
        "date": meta.created_at[:10],
        "run_id": meta.run_id,
        "experiment": meta.config.experiment,
        "change": meta.config.change,
        "kind": "holdout" if meta.config.holdout else meta.config.kind,
        "holdout": meta.config.holdout,
        "suite": meta.config.suite_name,
        "suite_hash": meta.suite_hash,
        "model": meta.model,
        "judge": meta.judge,
        "source": meta.source_name,
        "source_hash": meta.source_hash,
        "prompt_hash": meta.prompt_hash,
        "git_sha": meta.git_sha,
        "trials": meta.config.trials,
        "parameters": parameters_hash(outcome),
        "dimensions": {d: [c.passes, c.applicable] for d, c in total.items()},
        "tasks_pass": [tasks.passes, tasks.applicable] if tasks else None,
        "pass_at_1": summary.pass_at_1,
        "needs_judge": summary.needs_judge,
        "errors": summary.errors,
        "parquet": _relative(outcome.parquet, outcome.meta.config.out),
    }


def _relative(path: Path, out: Path) -> str:
    """Paths in the log are relative to the results folder, so a clone elsewhere still reads them."""
    try:
        return str(path.resolve().relative_to(out.resolve()))
    except ValueError:
        return str(path)


def delta(entry: dict[str, Any], earlier: list[dict[str, Any]], out: Path) -> dict[str, Any] | None:
    """Tasks passing everything, against the last earlier row of the same suite (same hash):
    the paired difference with its 95% interval and McNemar's p, so a step that only moved
    noise says so. None when there is nothing comparable (or its parquet is gone)."""
    previous = next(
        (r for r in reversed(earlier)
         if r.get("suite_hash") == entry["suite_hash"] and r.get("suite") == entry["suite"]),
        None,
    )  # fmt: skip
    if previous is None or not (out / previous["parquet"]).exists():
        return None
    before = pd.read_parquet(out / previous["parquet"])
    after = pd.read_parquet(out / entry["parquet"])
    tasks = compare(before, after).rows.get("tasks")
    if tasks is None:
        return None
    return {"vs": previous["run_id"], "vs_experiment": previous["experiment"], "tasks": tasks}


# What makes two recorded runs the same measurement; a dirty tree is never the same twice.
IDENTITY = ("experiment", "change", "kind", "suite", "suite_hash", "model", "judge", "source_hash",
            "prompt_hash", "git_sha", "trials", "parameters")  # fmt: skip
# What does not change what a run measures: where it writes, how fast, how it retries.
_NOT_PARAMETERS = {"out", "concurrency", "cache", "infra_attempts", "infra_backoff",
                   "allow_holdout_rerun"}  # fmt: skip


def parameters_hash(outcome: RunOutcome) -> str:
    """Every run parameter that can change its verdicts (budget, read_first, limit, ...)."""
    config = outcome.meta.config.model_dump(mode="json", exclude=_NOT_PARAMETERS)
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def _same_inputs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    clean = not str(b.get("git_sha", "")).endswith("-dirty") and b.get("git_sha") != "unknown"
    return clean and all(a.get(k) == b.get(k) for k in IDENTITY)


def record_run(outcome: RunOutcome, out: Path) -> dict[str, Any]:
    """Append the run to `changelog.jsonl` and regenerate `CHANGELOG.md` beside it. A run whose
    every trial was an infrastructure error measured nothing and is refused; a rerun with the
    same inputs (clean commit, suite, parameters) as a recorded row adds none and returns it."""
    if outcome.all_failed:
        raise InfrastructureFailure(
            f"every trial of {outcome.meta.run_id} ended in an infrastructure error, so nothing "
            f"was recorded; the first: {outcome.first_error}"
        )
    out.mkdir(parents=True, exist_ok=True)
    entry = row(outcome)
    earlier = read(out)
    twin = next((r for r in earlier if _same_inputs(r, entry)), None)
    if twin is not None:
        return twin  # the same step rerun on the same code and suite: nothing new to record
    entry["delta"] = delta(entry, earlier, out)
    with (out / "changelog.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(scrub(json.dumps(entry, ensure_ascii=False)) + "\n")
    render_markdown(out)
    return entry


def read(out: Path) -> list[dict[str, Any]]:
    path = out / "changelog.jsonl"
    if not path.exists():
        return []
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _delta_text(r: dict[str, Any]) -> str:
    d = (r.get("delta") or {}).get("tasks")
    if not d:
        return "-"
    mark = " **significant**" if d["significant"] else ""
    return (
        f"{d['diff']:+.3f} [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}] vs "
        f"{r['delta']['vs_experiment']}, p={d['mcnemar_p']:.2f}{mark}"
    )


def render_markdown(out: Path) -> Path:
    rows = read(out)
    head = ["date", "experiment", "change", "kind", "suite", "model", "trials", *COLUMNS,
            "tasks pass-all", "Δ tasks vs previous [95% CI]"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        dims = r.get("dimensions", {})
        cells = [count_text(*dims[d]) if d in dims else "-" for d in COLUMNS]
        tasks = r.get("tasks_pass")
        tasks_text = count_text(*tasks) if tasks else "-"
        fields = [r["date"], r["experiment"], r["change"] or "-", r["kind"], r.get("suite", "-"),
                  r["model"], str(r["trials"])]  # fmt: skip
        lines.append("| " + " | ".join([*fields, *cells, tasks_text, _delta_text(r)]) + " |")
    path = out / "CHANGELOG.md"
    path.write_text(scrub(HEADER + "\n".join(lines) + "\n"), encoding="utf-8")
    return path
