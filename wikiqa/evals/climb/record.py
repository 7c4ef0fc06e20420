"""One owner of the run record: `record(outcome, policy)` decides whether a finished run becomes
a change-log row, for the CLI, the notebooks and the held-out split alike, and `check_holdout`
keeps a held-out split to one run. The runner neither renders nor records.

- `explore` (the default everywhere): the parquet is written, no row is appended.
- `record`: a row is appended, unless a row with the same inputs (clean commit, suite,
  parameters) exists already; a run whose every trial met an outage is refused.
- A held-out run is always recorded, whatever the policy: the once-only rule reads the log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from wikiqa.evals.analysis.compare import compare
from wikiqa.evals.climb.changelog import ChangelogRow, Delta, append, check, read
from wikiqa.evals.paths import results_dir, scratch_dir
from wikiqa.evals.running import RunConfig, RunMeta, RunOutcome, run_eval
from wikiqa.evals.running.locks import folder_lock
from wikiqa.evals.running.results import load, record_of
from wikiqa.evals.running.runlog import RunLog, RunLogError
from wikiqa.evals.tasks import resolve_suite, suite_hash
from wikiqa.evals.tasks.task import held_out_hashes
from wikiqa.inputs import InputError
from wikiqa.project import repo_results

Policy = Literal["explore", "record"]
POLICIES: tuple[Policy, ...] = ("explore", "record")


class HoldoutRefused(RuntimeError):
    """The held-out suite was already run on this suite hash."""


class NothingNew(RuntimeError):
    """A run to record has the same inputs as a recorded row (clean commit, suite, model,
    parameters): it would measure nothing new, so it is not run and nothing is written."""

    def __init__(self, row: ChangelogRow) -> None:
        super().__init__(
            f"nothing new: the same inputs (commit {row.git_sha} with no tracked or untracked "
            f"file changed outside results/, suite, model, parameters) as the recorded row "
            f"{row.run_id} ({row.experiment}, {row.date}); nothing was run or written"
        )
        self.row = row

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook: its one line, not a traceback."""
        return [f"{type(self).__name__}: {self}"]


class ForeignRecord(RuntimeError):
    """A run whose log this machine did not seal and the repository does not hold (someone
    else's, or edited): readable and comparable, recorded only when asked for by name."""


class InfrastructureFailure(RuntimeError):
    """Every trial of a run ended in an infrastructure error: there is nothing to record. The
    run itself (`outcome`) is kept: its parquet and journal are written, and it can resume."""

    def __init__(self, message: str, outcome: RunOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


def evaluate(
    config: RunConfig,
    policy: Policy = "explore",
    resume: str | None = None,
    against: str | None = None,
    foreign: str | None = None,
    **runner: Any,
) -> tuple[RunOutcome, ChangelogRow | None]:
    """Run the suite and record it by `policy`: for a run that will be recorded, the change
    log's own check (it reads whole, neither file is a link) and the held-out check first,
    before any trial runs; then the run, then the row (its Δ paired with `against`, see
    `record`). `runner` goes to the runner (model, source, progress...). A recorded or held-out
    run holds its results folder's lock from before the checks to its row: two such runs at
    once would both pass the run-once check, or pair their rows with the same earlier one."""
    if policy == "explore" and not config.holdout:
        return (outcome := run_eval(config, resume, **runner)), record(outcome, policy, against)
    with folder_lock(config.out):
        rows = check(config.out)
        if config.holdout:
            check_holdout(config)  # a resumed copy of a recorded held-out run is a rerun too
        # a rerun with nothing new is refused, unless a held-out rerun was asked for by name
        twins = [] if config.allow_holdout_rerun else rows
        outcome = run_eval(config, resume, admit=lambda meta: _refuse_twin(meta, twins), **runner)
        return outcome, record(outcome, policy, against, foreign)


def _refuse_twin(meta: RunMeta, rows: list[ChangelogRow]) -> None:
    """NothingNew when a recorded row has the inputs `meta` describes, before anything runs."""
    wanted = identity(meta)
    twin = next((r for r in rows if _same_inputs(r, wanted)), None)
    if twin is not None:
        raise NothingNew(twin)


def check_holdout(config: RunConfig) -> None:
    """Refuse a second run of a held-out split (same suite hash) unless a rerun is allowed. The
    rows looked at are the run's results folder's and the committed climb's: a run written
    elsewhere (`--out`) still counts the climb's one look, and a resumed copy of a recorded
    held-out run is refused like a new one (an interrupted run has no row yet)."""
    if config.allow_holdout_rerun:
        return
    digest = suite_hash(resolve_suite(config.suite, config.holdout))
    rows = read(config.out)
    for climb in {results_dir().resolve(), repo_results().resolve()} - {config.out.resolve()}:
        rows += read(climb) if climb.exists() else []
    earlier = next((r for r in rows if r.holdout and r.suite_hash == digest), None)
    if earlier is not None:
        raise HoldoutRefused(
            f"the held-out suite {digest} was already run ({earlier.run_id}); it is run "
            "once, at the end. Pass --allow-holdout-rerun to run it again anyway."
        )


def record(
    outcome: RunOutcome,
    policy: Policy = "explore",
    against: str | None = None,
    foreign: str | None = None,
) -> ChangelogRow | None:
    """The run's change-log row by `policy` (None when it is not recorded). A run whose every
    trial was an infrastructure error measured nothing and is refused; a rerun with the same
    inputs as a recorded row adds none and returns that row; a run whose log is foreign is
    refused unless `foreign` names it. `against` pairs the Δ with that run's row (a regraded run
    with its original), or with that step's latest row of the suite (a lever with the step it
    changes); without it there is no Δ. Once the row is in, the run's log is packed
    (`RUN_ID.log.jsonl.gz`), the form the climb commits."""
    if policy not in POLICIES:
        raise ValueError(f"unknown record policy {policy!r}: one of {', '.join(POLICIES)}")
    if policy == "explore" and not outcome.meta.config.holdout:
        return None
    if outcome.all_failed:
        raise InfrastructureFailure(
            f"every trial of {outcome.meta.run_id} ended in an infrastructure error, so nothing "
            f"was recorded; the first: {outcome.first_error}",
            outcome,
        )
    log_run = outcome.log_run or outcome.meta.run_id
    if outcome.provenance == "foreign" and foreign != log_run:
        raise ForeignRecord(
            f"{log_run}'s log was not sealed on this machine and is not the repository's "
            f"(someone else's, or edited since): nothing was recorded; to record it anyway, "
            f"name it: --foreign {log_run}"
        )
    out = outcome.meta.config.out
    entry = row(outcome)
    earlier = read(out)
    twin = next((r for r in earlier if _same_inputs(r, identity(outcome.meta))), None)
    if twin is not None:
        return twin  # the same step rerun on the same code and suite: nothing new to record
    entry.delta, entry.delta_note = delta(entry, earlier, out, outcome.frame, against)
    append(out, entry)
    with contextlib.suppress(RunLogError):  # a stand-in run without a log here: nothing to pack
        RunLog.load(out, log_run).pack()
    return entry


def identity(meta: RunMeta) -> dict[str, Any]:
    """What makes a run the measurement it is (`IDENTITY`), known before it runs."""
    return {
        "experiment": meta.config.experiment,
        "change": meta.config.change,
        "kind": "holdout" if meta.config.holdout else meta.config.kind,
        "suite": meta.config.suite_name,
        "suite_hash": meta.suite_hash,
        "model": meta.model,
        "judge": meta.judge,
        "source_hash": meta.source_hash,
        "prompt_hash": meta.prompt_hash,
        "git_sha": meta.git_sha,
        "trials": meta.config.trials,
        "parameters": parameters_hash(meta.config, meta.max_tokens),
    }


def row(outcome: RunOutcome) -> ChangelogRow:
    meta, summary = outcome.meta, outcome.summary
    total = summary.cells.get("all", {})
    tasks = summary.task_cells.get("all")
    return ChangelogRow(
        **identity(meta),
        date=meta.created_at[:10],
        run_id=meta.run_id,
        # a held-out split by its content, not by what a header says it ran
        holdout=meta.config.holdout or meta.suite_hash in held_out_hashes(),
        source=meta.source_name,
        dimensions={d: (c.passes, c.applicable) for d, c in total.items()},
        tasks_pass=(tasks.passes, tasks.applicable) if tasks else None,
        pass_at_1=summary.pass_at_1,
        needs_judge=summary.needs_judge,
        errors=summary.errors,
        parquet=_relative(outcome.parquet, meta.config.out),
        cassette_hash=meta.cassette_hash,
        imported_replies=meta.imported_replies,
        log_run=outcome.log_run or meta.run_id,
        foreign=outcome.provenance == "foreign",
    )


def _relative(path: Path, out: Path) -> str:
    """Paths in the log are relative to the results folder, so a clone elsewhere still reads them."""
    try:
        return str(path.resolve().relative_to(out.resolve()))
    except ValueError:
        return str(path)


def delta(
    entry: ChangelogRow,
    earlier: list[ChangelogRow],
    out: Path,
    frame: pd.DataFrame,
    against: str | None = None,
) -> tuple[Delta | None, str | None]:
    """Tasks passing everything, paired with the row this run is a change of: `against` (a run
    id, or a step's name: that step's latest row of this suite version). Never another row:
    without `against`, or where that step has no row of this suite version, (None, why), the
    why naming the command that records the base. The paired difference with its 95% interval
    and McNemar's p, so a step that only moved noise says so. This run is read from memory
    (`frame`), the base from its parquet as its log vouches for it (`results.load`). An
    exploratory run (in the scratch area) looks for its base in the committed climb too."""
    candidates = [(r, out) for r in earlier]
    if out.resolve() == scratch_dir().resolve() and results_dir().exists():
        candidates = [(r, results_dir()) for r in read(results_dir())] + candidates
    if against is None:
        if not any(r.suite == entry.suite for r, _ in candidates):
            return None, f"the first row of suite {entry.suite}"
        return None, "no base named (a step's VS)"
    found = [(r, at) for r, at in candidates if r.run_id == against] or [
        (r, at)
        for r, at in candidates
        if r.experiment == against and r.suite == entry.suite and r.suite_hash == entry.suite_hash
        and not r.holdout
    ]  # fmt: skip
    if not found:
        return None, no_base_note(against, entry.suite)
    previous, at = found[-1]
    try:
        base = load(at / previous.parquet, at, previous.log_run)
    except (RunLogError, InputError, OSError) as err:
        return None, f"{previous.experiment}'s run cannot be read as its log holds it: {err}"
    tasks = compare(base, frame).rows.get("tasks")
    if tasks is None:
        return None, f"no task both this run and {previous.experiment} decided"
    notes = []
    kept = record_of(base)
    if kept and kept not in ("sealed", "committed"):
        notes.append(f"({previous.experiment}: {kept})")
    if at != out:
        notes.append("(recorded in the committed climb)")
    return Delta(
        vs=previous.run_id,
        vs_experiment=previous.experiment,
        tasks=tasks,
        note=" ".join(notes) or None,
    ), None


def no_base_note(step: str, suite: str) -> str:
    """Why a step's Δ has no base: its `VS` has no row of this suite version, and the command
    that records one. A run id (a regraded run's original) has no such command: it is a run
    this change log never recorded."""
    if re.match(r"\d{8}T\d{6}Z-", step):
        return f"run {step} has no row in this change log to pair with"
    return (
        f"{step} has no row of this {suite} version to pair with: record it first "
        f"(wikiqa experiment run experiments/{step}.ipynb --record -p SUITE {suite}), or run "
        "this step with --anchor"
    )


# What makes two recorded runs the same measurement; a dirty tree is never the same twice.
IDENTITY = ("experiment", "change", "kind", "suite", "suite_hash", "model", "judge", "source_hash",
            "prompt_hash", "git_sha", "trials", "parameters")  # fmt: skip
# What does not change what a run measures: where it writes, how fast, how long a call may
# take, how it retries. (The output-token cap does, but as the cap the model was called with,
# `RunMeta.max_tokens`, whether the run's option or the settings' default set it.)
_NOT_PARAMETERS = {"out", "concurrency", "cache", "infra_attempts", "infra_backoff",
                   "allow_holdout_rerun", "executor", "timeout", "max_tokens"}  # fmt: skip


def parameters_hash(config: RunConfig, max_tokens: int | None = None) -> str:
    """Every run parameter that can change its verdicts (budget, read_first, limit, ...), and
    the model's output-token cap (`max_tokens`: the run's option or the settings' default, as
    the model was called), so that two runs that differ only in it are two rows."""
    fields = config.model_dump(mode="json", exclude=_NOT_PARAMETERS)
    if max_tokens is not None:  # runs without a cap keep the hash they always had
        fields["max_tokens"] = max_tokens
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def _same_inputs(a: ChangelogRow, b: dict[str, Any]) -> bool:
    clean = not b["git_sha"].endswith("-dirty") and b["git_sha"] != "unknown"
    return clean and all(getattr(a, k) == b[k] for k in IDENTITY)
