"""`wikiqa eval`, `wikiqa check` and `wikiqa regrade`: run the eval suite, gate a run against the
baseline, and grade a journaled run's answers again with today's graders.

Both share the run options (suite, trials, model, judge, ...) that build a `RunConfig`; the
evals package is imported inside the handlers so the other commands start without it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wikiqa.agent.config import flag_errors
from wikiqa.cli.common import (
    EXECUTOR_HELP,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    MODEL_HELP,
    SOURCE_HELP,
    CliError,
    add_agent_flags,
    agent_config,
    positive_int,
)
from wikiqa.config import Settings
from wikiqa.sources import SnapshotError
from wikiqa.terminal import echo


def _run_config(args: argparse.Namespace) -> Any:
    from wikiqa.evals import RunConfig, scratch_dir

    settings = Settings()
    fields = {
        "suite": args.suite,
        "holdout": args.holdout,
        "allow_holdout_rerun": args.allow_holdout_rerun,
        "trials": args.trials,
        "model": args.model or settings.model,
        "judge": args.judge,
        "allow_self_judge": args.allow_self_judge,
        "source": args.source or settings.source,
        "concurrency": args.concurrency,
        "agent": agent_config(args),
        "limit": args.limit,
        "experiment": args.experiment,
        "change": args.change,
        "kind": args.kind,
        "cache": not args.no_cache,
        "executor": args.executor,
    }
    if args.out is not None:
        fields["out"] = args.out
    elif not getattr(args, "record", False) and not args.holdout:
        # an ad hoc run is exploration: it stays out of the committed climb (results/scratch/)
        fields["out"] = scratch_dir()
    try:
        return RunConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as err:
        raise CliError(flag_errors(err), EXIT_USAGE) from None


def _tell(message: str) -> None:
    echo(message, file=sys.stderr, flush=True)


def _resumed(config: Any, resume: str) -> Any:
    """The configuration that resumes run `resume`: what it measured (suite, trials, limit,
    levers not given now) from its log, where it runs from the command line, and its model,
    judge and source from the command line too: a log never names where a request (and the key
    on it) goes. The runner refuses any difference from the log, naming it."""
    from wikiqa.evals import results_dir, scratch_dir
    from wikiqa.evals.running.runlog import RunLog, RunLogError, log_path
    from wikiqa.outputs import check_run_id

    try:
        check_run_id(resume)
    except ValueError as err:
        raise CliError(str(err), EXIT_USAGE) from None
    # a run is resumed where it was written: the folder given, the climb or the scratch area
    places = [config.out, results_dir(), scratch_dir()]
    out = next((o for o in places if log_path(o, resume).exists()), None)
    if out is None:
        raise CliError(f"no run {resume!r} under {config.out / 'runs'}")
    try:
        logged = RunLog.load(out, resume).meta.config
    except RunLogError as err:
        raise CliError(str(err)) from None
    measured = ("suite", "holdout", "trials", "limit", "experiment", "change", "kind")
    return config.model_copy(
        update={name: getattr(logged, name) for name in measured}
        | {"out": out, "agent": logged.agent.model_copy(update=config.agent.changed())}
    )


def _evaluate(
    config: Any, resume: str | None, progress: bool, policy: Any = "explore"
) -> tuple[Any, Any]:
    """Run (or resume) and record by `policy`: (the outcome, its change-log row or None); the
    row, if any, is `climb`'s call."""
    from wikiqa.evals import ExecutorError, HoldoutRefused, SelfJudging, TaskError, evaluate
    from wikiqa.evals.running.locks import Busy
    from wikiqa.evals.running.runlog import RunLogError

    try:
        if resume:
            config = _resumed(config, resume)
        return evaluate(config, policy, resume, progress=progress, notify=_tell)
    except (TaskError, HoldoutRefused, SelfJudging, SnapshotError, RunLogError, Busy) as err:
        raise CliError(str(err)) from err
    except ExecutorError as err:  # Ray missing, or the cluster unreachable
        raise CliError(str(err), EXIT_UNAVAILABLE) from err
    except ValueError as err:  # bad model / source specs
        raise CliError(str(err)) from err


def cmd_eval(args: argparse.Namespace) -> int:
    from wikiqa.evals import InfrastructureFailure, NothingNew, render

    config = _run_config(args)
    progress = not args.json and sys.stderr.isatty()
    row = None
    try:
        outcome, row = _evaluate(
            config, args.resume, progress, "record" if args.record else "explore"
        )
    except InfrastructureFailure as err:  # nothing to record; the run is reported below
        outcome = err.outcome
    except NothingNew as err:  # a rerun of a recorded row: nothing ran, nothing to add
        echo(str(err))
        return 0
    if args.json:
        echo(outcome.model_dump_json(indent=2))
    else:
        echo(render(outcome.summary))
        echo()
        echo(
            f"run {outcome.meta.run_id}: {outcome.trials_run} trials run now, "
            f"{outcome.model_calls} model calls made, {outcome.cached_calls} served from cache, "
            f"{outcome.judge_calls} judge calls"
        )
        echo(f"parquet: {outcome.parquet}")
        if row is not None:
            from wikiqa.experiment import delta_line

            echo(f"change log: Δ tasks pass-all {delta_line(row, config.out)}")
    if outcome.summary.errors:
        asked = args.record or outcome.meta.config.holdout
        recorded = " (nothing recorded)" if outcome.all_failed and asked else ""
        echo(
            f"wikiqa: {outcome.summary.errors} trials ended in infrastructure errors{recorded}; "
            f"the first: {outcome.first_error}; rerun with --resume {outcome.meta.run_id}",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import tempfile

    from wikiqa.evals.analysis import gate
    from wikiqa.inputs import InputError, read_parquet

    # The default is resolved here, not in the parser, to keep the evals import off start-up.
    if args.baseline is None:
        args.baseline = gate.baseline_path()
    if args.run is not None:
        try:
            frame = read_parquet(args.run)
        except InputError as err:
            raise CliError(str(err)) from err
    else:
        with tempfile.TemporaryDirectory(prefix="wikiqa-check-") as tmp:
            if args.out is None:
                args.out = Path(tmp)
            trials = args.trials
            if trials is None and not args.write_baseline and args.baseline.exists():
                trials = gate.read_baseline(args.baseline).trials
            args.trials = trials
            outcome, _ = _evaluate(_run_config(args), None, progress=False)
            frame = outcome.frame  # the run in memory: nothing it wrote is read back
    if args.write_baseline:
        baseline = gate.write_baseline(frame, args.baseline)
        echo(f"wrote {args.baseline} from run {baseline.run_id}")
        return 0
    try:
        baseline = gate.read_baseline(args.baseline)
    except FileNotFoundError as err:
        raise CliError(str(err)) from err
    drops = gate.compare(baseline, gate.baseline_from(frame))
    if drops:
        echo(f"gate: FAILED against {args.baseline} (run {baseline.run_id})")
        for line in drops:
            echo(f"  {line}")
        return gate.EXIT_REGRESSION
    cells = sum(len(row) for row in baseline.cells.values())
    echo(f"gate: ok, none of {cells} category x dimension rates dropped below {args.baseline}")
    return 0


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--suite",
        default="dev",
        help="dev (default), public, public2, or a task file path; with --holdout: dev, public, "
        "public2, fresh or fresh2",
    )
    p.add_argument(
        "--holdout", action="store_true", help="run the held-out suite (once, at the end)"
    )
    p.add_argument(
        "--allow-holdout-rerun",
        action="store_true",
        help="run a held-out split already run (another agent's one look); recorded as a holdout row",
    )
    p.add_argument("--trials", type=positive_int, default=None, help="trials per task (default 3)")
    p.add_argument(
        "--model",
        help=MODEL_HELP,
    )
    p.add_argument("--judge", help="judge model spec (default: offline graders only)")
    p.add_argument("--allow-self-judge", action="store_true", help="let the answerer's model judge")
    p.add_argument("--source", help=SOURCE_HELP)
    p.add_argument("--concurrency", type=positive_int, default=8)
    p.add_argument("--executor", default=None, help=EXECUTOR_HELP)
    add_agent_flags(p)
    p.add_argument(
        "--limit",
        type=positive_int,
        default=None,
        help="run N tasks drawn across the suite's categories "
        "(each category at least once, then in proportion)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results directory (default: results/scratch/, or results/ with --record or --holdout)",
    )
    p.add_argument("--experiment", default=None, help="experiment name recorded with the run")
    p.add_argument("--change", default=None, help="what this run changed (for the change log)")
    p.add_argument("--kind", default=None, help="baseline, prompt, retrieval, grader, model, ...")
    p.add_argument(
        "--no-cache", action="store_true", help="do not read or write the response cache"
    )


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
        if args.check or args.all:
            total = changed = 0
            for run in runs:
                try:
                    moved, compared = regrading.check(run, out, judge)
                except regrading.RegradeError as err:
                    if not args.all:
                        raise
                    echo(f"{run}: skipped: {err}")  # an unfinished run: nothing to compare yet
                    continue
                echo(f"{run}: {moved} of {compared} verdicts differ from its parquet")
                total, changed = total + compared, changed + moved
            echo(f"{changed} of {total} verdicts changed across {len(runs)} runs")
            return 1 if changed else 0
        if not args.change:
            raise CliError("--change says what changed in the graders", EXIT_USAGE)
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
        from wikiqa.evals.running.locks import Busy, folder_lock

        try:
            with folder_lock(out):
                row = record(outcome, "record", against=args.run)
        except Busy as err:
            raise CliError(str(err)) from None
        if row is not None:
            echo(f"change log: kind grader, paired Δ {delta_text(row)}")
    return 0


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


def cmd_convert(args: argparse.Namespace) -> int:
    from wikiqa.evals import results_dir
    from wikiqa.evals.running.legacy import convert
    from wikiqa.evals.running.runlog import RunLogError

    out = args.out or results_dir()
    for folder in args.journals:
        try:
            log = convert(folder, out)
        except (RunLogError, OSError) as err:
            raise CliError(str(err)) from err
        echo(f"{folder} -> {log.path} ({len(log.trials)} trials)")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate = sub.add_parser("eval", help="run the eval suite and print the table")
    _add_run_options(evaluate)
    evaluate.add_argument("--resume", metavar="RUN_ID", help="finish an interrupted run")
    evaluate.add_argument("--record", action="store_true", help="append the run to the change log")
    evaluate.add_argument("--json", action="store_true", help="print the run summary as JSON")
    evaluate.set_defaults(func=cmd_eval)

    check = sub.add_parser("check", help="regression gate against results/baseline.json")
    _add_run_options(check)
    check.add_argument("--run", type=Path, help="read this results parquet instead of running")
    check.add_argument(
        "--baseline", type=Path, default=None, help="baseline JSON (default: results/baseline.json)"
    )
    check.add_argument(
        "--write-baseline", action="store_true", help="refresh the baseline from this run"
    )
    check.set_defaults(func=cmd_check)

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
    again.set_defaults(func=cmd_regrade)

    convert = sub.add_parser(
        "convert-journal",
        help="convert a run recorded before run logs (meta.json + journal.jsonl) into one",
    )
    convert.add_argument("journals", nargs="+", type=Path, metavar="FOLDER")
    convert.add_argument("--out", type=Path, help="results directory (default: results/)")
    convert.set_defaults(func=cmd_convert)
