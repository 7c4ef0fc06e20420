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

from wikiqa.cli.common import (
    EXECUTOR_HELP,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    MODEL_HELP,
    SOURCE_HELP,
    CliError,
    add_agent_flags,
    agent_config,
    flag_errors,
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


def _evaluate(config: Any, resume: str | None, progress: bool, policy: Any = "explore") -> Any:
    """Run (or resume) and record by `policy`: the change-log row, if any, is `climb`'s call."""
    from wikiqa.evals import (
        ExecutorError,
        HoldoutRefused,
        RunConfig,
        RunMeta,
        SelfJudging,
        TaskError,
        evaluate,
        journal_dir,
        results_dir,
        scratch_dir,
    )
    from wikiqa.inputs import MiB, first_problem, read_text

    try:
        if resume:
            # a run is resumed where it was written: the climb or the scratch area
            places = [config.out, results_dir(), scratch_dir()]
            out = next((o for o in places if (journal_dir(o, resume) / "meta.json").exists()), None)
            if out is None:
                raise CliError(f"no run {resume!r} under {config.out / 'journals'}")
            config = config.model_copy(update={"out": out})
            meta_path = journal_dir(out, resume) / "meta.json"
            try:
                meta = RunMeta.model_validate_json(read_text(meta_path, MiB, "run metadata"))
            except ValidationError as err:
                raise CliError(f"{meta_path}: not a run's metadata: {first_problem(err)}") from None
            saved = meta.config
            config = RunConfig(
                **saved.model_dump()
                # how a run executes is not what it measures: the resumed part runs as asked now
                | {
                    "concurrency": config.concurrency,
                    "out": config.out,
                    "executor": config.executor,
                }
            )
        outcome, _ = evaluate(config, policy, resume, progress=progress, notify=_tell)
        return outcome
    except (TaskError, HoldoutRefused, SelfJudging, SnapshotError) as err:
        raise CliError(str(err)) from err
    except ExecutorError as err:  # Ray missing, or the cluster unreachable
        raise CliError(str(err), EXIT_UNAVAILABLE) from err
    except ValueError as err:  # bad model / source specs
        raise CliError(str(err)) from err


def cmd_eval(args: argparse.Namespace) -> int:
    from wikiqa.evals import InfrastructureFailure, render

    config = _run_config(args)
    progress = not args.json and sys.stderr.isatty()
    try:
        outcome = _evaluate(config, args.resume, progress, "record" if args.record else "explore")
    except InfrastructureFailure as err:  # nothing to record; the run is reported below
        outcome = err.outcome
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
        args.baseline = gate.BASELINE
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
            outcome = _evaluate(_run_config(args), None, progress=False)
            frame = read_parquet(outcome.parquet)
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
        help="dev (default), public, or a task file path; with --holdout: dev, public or fresh",
    )
    p.add_argument(
        "--holdout", action="store_true", help="run the held-out suite (once, at the end)"
    )
    p.add_argument("--allow-holdout-rerun", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--trials", type=positive_int, default=None, help="trials per task (default 3)")
    p.add_argument("--model", help=MODEL_HELP + ", local (start SmolLM2) or local:<gguf>")
    p.add_argument("--judge", help="judge model spec (default: offline graders only)")
    p.add_argument("--allow-self-judge", action="store_true", help="let the answerer's model judge")
    p.add_argument("--source", help=SOURCE_HELP)
    p.add_argument("--concurrency", type=positive_int, default=8)
    p.add_argument("--executor", default=None, help=EXECUTOR_HELP)
    add_agent_flags(p)
    p.add_argument("--limit", type=positive_int, default=None, help="run only the first N tasks")
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
    from wikiqa.evals.running.regrade import RegradeError, regrade

    out = args.out or results_dir()
    try:
        outcome = regrade(args.run, out, args.change)
    except (RegradeError, OSError) as err:
        raise CliError(str(err)) from err
    echo(render(outcome.summary))
    echo()
    echo(f"run {outcome.meta.run_id}: {args.run}'s answers, regraded (0 model calls)")
    echo(f"parquet: {outcome.parquet}")
    if args.record:
        row = record(outcome, "record", against=args.run)
        if row is not None:
            echo(f"change log: kind grader, paired Δ {delta_text(row)}")
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
        help="grade a journaled run's answers again with today's graders (no model call)",
        description="A new run holding RUN_ID's journaled results with fresh grades, kind "
        "grader; with --record its change-log row is paired with the original's, so the Δ is "
        "the graders' alone. The run must be complete and graded without a judge.",
    )
    again.add_argument("run", metavar="RUN_ID", help="a run with a journal (results/journals/)")
    again.add_argument("--change", required=True, help="what changed in the graders")
    again.add_argument("--out", type=Path, help="results directory (default: results/)")
    again.add_argument("--record", action="store_true", help="append it to the change log")
    again.set_defaults(func=cmd_regrade)
