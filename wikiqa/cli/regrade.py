"""`wikiqa regrade`: a logged run's answers graded again with this checkout's graders (a pass
appended to its log), `--check` counting what would change, `--bind` binding a kept log to its
parquet."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from wikiqa.cli.common import EXIT_USAGE, CliError
from wikiqa.terminal import echo


def cmd_regrade(args: argparse.Namespace) -> int:
    from wikiqa.evals import record, render, results_dir
    from wikiqa.evals.climb import delta_text
    from wikiqa.evals.running import regrade as regrading
    from wikiqa.outputs import check_run_id

    out = args.out or results_dir()
    judge = _judge_for(args.judge) if args.judge else None
    if args.all:
        runs = regrading.logged_runs(out)
        if not runs:
            raise CliError(f"no run logs under {out / 'runs'}")
    elif args.run is None:
        raise CliError("name a run to regrade, or --all with --check", EXIT_USAGE)
    else:
        try:
            runs = [check_run_id(args.run)]
        except ValueError as err:
            raise CliError(str(err), EXIT_USAGE) from None
    try:
        if args.bind:
            moved = sum(_bound(run, out, judge) for run in runs)
            return 1 if moved else 0
        if args.check or args.all:
            total = changed = drifted = 0
            for run in runs:
                try:
                    moved, compared = regrading.check(run, out, judge)
                except regrading.RegradeError as err:
                    if not args.all:
                        raise
                    echo(f"{run}: skipped: {err}")  # an unfinished run: nothing to compare yet
                    continue
                if regrading.graded_earlier(run, out):
                    # its table was graded by an earlier checkout (a grader change since)
                    echo(f"{run}: {moved} of {compared} verdicts differ from its parquet, "
                         "graded by an earlier checkout's graders")  # fmt: skip
                    drifted += moved
                    continue
                echo(f"{run}: {moved} of {compared} verdicts differ from its parquet")
                total, changed = total + compared, changed + moved
            echo(f"{changed} of {total} verdicts changed across the runs this checkout graded"
                 f"; {drifted} differ from tables graded by earlier graders")  # fmt: skip
            if args.all:
                _no_log_kept(out)
            return 1 if changed else 0
        if not args.change:
            raise CliError("--change says what changed in the graders", EXIT_USAGE)
        if "\n" in args.change or "\r" in args.change:
            raise CliError("--change is one line (a change-log row holds it)", EXIT_USAGE)
        outcome = regrading.regrade(runs[0], out, args.change, judge)
    except (regrading.RegradeError, OSError) as err:
        raise CliError(str(err)) from err
    echo(render(outcome.summary))
    echo()
    echo(
        f"run {outcome.meta.run_id}: {args.run}'s answers, regraded (0 model calls, "
        f"{outcome.judge_calls} judge calls)"
    )
    echo(f"parquet: {outcome.parquet}")
    if args.record:
        from wikiqa.evals.climb.record import ForeignRecord
        from wikiqa.evals.running.locks import Busy, folder_lock

        try:
            with folder_lock(out):
                row = record(outcome, "record", against=args.run, foreign=args.foreign)
        except (Busy, ForeignRecord) as err:
            raise CliError(str(err)) from None
        if row is not None:
            from wikiqa.cli.render import render_results

            echo(f"change log: kind grader, paired Δ {delta_text(row)}")
            render_results(out)
    return 0


def _bound(run: str, out: Path, judge: Any) -> int:
    """Bind one kept log to its parquet (`regrade.bind`), saying what it did; its differences."""
    from wikiqa.evals.running import regrade as regrading

    try:
        moved = regrading.bind(run, out, judge)
    except regrading.RegradeError as err:
        echo(f"{run}: not bound: {err}")
        return 0
    echo(f"{run}: " + (f"not bound: {moved} verdicts differ" if moved else "bound"))
    return moved


def _no_log_kept(out: Path) -> None:
    """The change-log rows whose run log was never kept: shown, never regraded."""
    from wikiqa.evals.climb import changelog
    from wikiqa.evals.running.runlog import existing_log

    rows = changelog.read(out)
    missing = [r for r in rows if existing_log(out, r.log_run or r.run_id) is None]
    echo(f"{len(missing)} of {len(rows)} change-log rows have no log kept (recorded before "
         "logs were committed): shown as such, not regradable")  # fmt: skip


def _judge_for(spec: str) -> Any:
    """A regrade's judge: its calls through the response cache, one namespace per trial (as the
    run made them), so an unchanged verdict costs no call."""
    from wikiqa.evals.graders.judge import Judge
    from wikiqa.evals.running.cache import CachingModel, ResponseCache, cache_path
    from wikiqa.evals.running.served import open_run_model

    try:
        model = open_run_model(spec)
    except ValueError as err:
        raise CliError(str(err)) from None
    cache = ResponseCache(cache_path())
    return lambda trial: Judge(CachingModel(model, cache, f"judge:trial={trial}"))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    again = sub.add_parser(
        "regrade",
        help="grade a logged run's answers again with today's graders (no model call)",
        description="A new run holding RUN_ID's logged results with fresh grades, kind "
        "grader; with --record its change-log row is paired with the original's, so the Δ is "
        "the graders' alone. The run must be complete. --check (or --all) writes nothing: it "
        "counts the verdicts that differ from each run's parquet, and exits 1 if any does.",
    )
    again.add_argument("run", metavar="RUN_ID", nargs="?", help="a run with a log (results/runs/)")
    again.add_argument("--change", help="what changed in the graders")
    again.add_argument("--judge", help="the judge the run was graded with (its calls cached)")
    again.add_argument("--check", action="store_true", help="count changed verdicts; write nothing")
    again.add_argument("--all", action="store_true", help="--check every logged run")
    again.add_argument("--out", type=Path, help="results directory (default: results/)")
    again.add_argument("--record", action="store_true", help="append it to the change log")
    again.add_argument(
        "--foreign",
        metavar="RUN_ID",
        help="record this run although its log is foreign (not sealed here, not committed)",
    )
    again.add_argument(
        "--bind",
        action="store_true",
        help="bind a log kept from before passes bound their parquet: if grading it again "
        "changes no verdict, append a pass binding its parquet's hash (with --all: every log)",
    )
    again.set_defaults(func=cmd_regrade)
