"""`wikiqa eval`, `wikiqa check` and `wikiqa convert-journal`: run the eval suite, gate a run
against the baseline, and turn a run recorded before run logs into one.

Both share the run options (suite, trials, model, judge, ...) that build a `RunConfig`; the
evals package is imported inside the handlers so the other commands start without it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import ValidationError

from wikiqa.agent.config import flag_errors
from wikiqa.cli.common import (
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CliError,
    add_agent_flags,
    agent_config,
)
from wikiqa.config import Settings
from wikiqa.sources import SnapshotError
from wikiqa.terminal import echo


def _run_config(args: argparse.Namespace) -> Any:
    """The `RunConfig` the run flags (`_add_run_options`) set: each flag given, by its field;
    the model and the source the settings name when not given; and an ad hoc run's results
    under results/scratch/."""
    from wikiqa.evals import RunConfig, scratch_dir
    from wikiqa.evals.running.records import INTERNAL

    settings = Settings()
    fields = {
        name: getattr(args, name)
        for name in RunConfig.model_fields
        if name not in INTERNAL and getattr(args, name, None) is not None
    }
    fields.setdefault("model", settings.model)
    fields.setdefault("source", settings.source)
    fields["agent"] = agent_config(args)
    if "out" not in fields and not getattr(args, "record", False) and not fields.get("holdout"):
        # an ad hoc run is exploration: it stays out of the committed climb (results/scratch/)
        fields["out"] = scratch_dir()
    try:
        return RunConfig(**fields)
    except ValidationError as err:
        raise CliError(flag_errors(err), EXIT_USAGE) from None


def _tell(message: str) -> None:
    echo(message, file=sys.stderr, flush=True)


def _resumed(config: Any, resume: str) -> Any:
    """The configuration that resumes run `resume`: the command line's, whole, run where the
    log lies (the folder given, the climb or the scratch area). Nothing is taken from the log's
    header: the runner compares it with this configuration and refuses any difference, naming
    the flags that would match."""
    from wikiqa.evals import results_dir, scratch_dir
    from wikiqa.evals.running.runlog import existing_log
    from wikiqa.outputs import check_run_id

    try:
        check_run_id(resume)
    except ValueError as err:
        raise CliError(str(err), EXIT_USAGE) from None
    places = [config.out, results_dir(), scratch_dir()]
    out = next((o for o in places if existing_log(o, resume) is not None), None)
    if out is None:
        raise CliError(f"no run {resume!r} under {config.out / 'runs'}")
    return config.model_copy(update={"out": out})


def _evaluate(
    config: Any,
    resume: str | None,
    progress: bool,
    policy: Any = "explore",
    foreign: str | None = None,
) -> tuple[Any, Any]:
    """Run (or resume) and record by `policy`: (the outcome, its change-log row or None); the
    row, if any, is `climb`'s call."""
    from wikiqa.evals import ExecutorError, HoldoutRefused, SelfJudging, TaskError, evaluate
    from wikiqa.evals.climb.record import ForeignRecord
    from wikiqa.evals.running.locks import Busy
    from wikiqa.evals.running.runlog import RunLogError

    try:
        if resume:
            config = _resumed(config, resume)
        return evaluate(config, policy, resume, foreign=foreign, progress=progress, notify=_tell)
    except (
        TaskError, HoldoutRefused, SelfJudging, SnapshotError, RunLogError, Busy, ForeignRecord
    ) as err:  # fmt: skip
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
            config, args.resume, progress, "record" if args.record else "explore", args.foreign
        )
    except InfrastructureFailure as err:  # nothing to record; the run is reported below
        outcome = err.outcome
    except NothingNew as err:  # a rerun of a recorded row: nothing ran, nothing to add
        echo(str(err))
        return 0
    if row is not None:  # the JSON on stdout stays JSON: what rebuilding says goes to stderr
        from wikiqa.cli.render import render_results

        render_results(config.out, sys.stderr if args.json else None)
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
            f"the first: {outcome.first_error}; finish them with the same command and "
            f"--resume {outcome.meta.run_id}",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import tempfile

    from wikiqa.evals.analysis import gate
    from wikiqa.inputs import InputError
    from wikiqa.parquets import read_parquet

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


# What a run flag's help says of a default set elsewhere than in `RunConfig`.
DEFAULTS_ELSEWHERE = {
    "model": "the settings' model (WIKIQA_MODEL), else extractive",
    "source": "the settings' source (WIKIQA_SOURCE), else snapshot",
    "out": "results/scratch/, or results/ with --record or --holdout",
}


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """One flag per run option, generated from `RunConfig`'s fields (`INTERNAL` aside), each
    with the field's help: `--holdout` for a switch off by default, `--no-cache` for one on by
    default, choices for a closed set (`--kind`), a typed value otherwise. A flag not given
    stays None, so only what the user set reaches the config (`_run_config`); the field's rule
    is checked there, named by its flag. Then one flag per agent lever."""
    from wikiqa.evals.running.records import INTERNAL, RunConfig

    group = parser.add_argument_group("run options")
    for name, field in RunConfig.model_fields.items():
        if name in INTERNAL:
            continue
        flag = "--" + name.replace("_", "-")
        default = DEFAULTS_ELSEWHERE.get(name, field.default)
        text = field.description or ""
        shown = f"{text} (default: {default})" if default not in (None, "") else text
        kind = _given(field.annotation)
        if kind is bool and field.default is True:
            group.add_argument(
                "--no-" + flag[2:], dest=name, action="store_false", default=None,
                help=f"do not {text}",
            )  # fmt: skip
        elif kind is bool:
            group.add_argument(flag, action="store_true", default=None, help=text)
        elif get_origin(kind) is Literal:
            group.add_argument(flag, choices=get_args(kind), default=None, help=shown)
        else:
            group.add_argument(flag, type=kind, default=None, metavar=name.upper(), help=shown)
    add_agent_flags(parser)


def _given(annotation: Any) -> Any:
    """A field's type without its None (`int | None` is int: None is the flag not given)."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    return (
        args[0] if get_origin(annotation) in (Union, UnionType) and len(args) == 1 else annotation
    )


class _RunCommand(argparse.ArgumentParser):
    """A command that takes the run options. Their flags are generated from `RunConfig` the
    first time the command is parsed or its help is shown: building the command line for any
    other command (`wikiqa ask` starts in half a second) never imports the run machinery."""

    generated = False

    def _generate(self) -> None:
        if not self.generated:
            self.generated = True
            _add_run_options(self)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        self._generate()
        return super().parse_known_args(*args, **kwargs)

    def format_usage(self) -> str:
        self._generate()
        return super().format_usage()

    def format_help(self) -> str:
        self._generate()
        return super().format_help()


def _run_command(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`parser` (a new subcommand's) as a command taking the run options."""
    parser.__class__ = _RunCommand
    return parser


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
    evaluate = _run_command(sub.add_parser("eval", help="run the eval suite and print the table"))
    evaluate.add_argument("--resume", metavar="RUN_ID", help="finish an interrupted run")
    evaluate.add_argument("--record", action="store_true", help="append the run to the change log")
    evaluate.add_argument(
        "--foreign",
        metavar="RUN_ID",
        help="with --resume --record: record it although its log is foreign (not sealed here, "
        "not committed)",
    )
    evaluate.add_argument("--json", action="store_true", help="print the run summary as JSON")
    evaluate.set_defaults(func=cmd_eval)

    check = _run_command(
        sub.add_parser("check", help="regression gate against results/baseline.json")
    )
    check.add_argument("--run", type=Path, help="read this results parquet instead of running")
    check.add_argument(
        "--baseline", type=Path, default=None, help="baseline JSON (default: results/baseline.json)"
    )
    check.add_argument(
        "--write-baseline", action="store_true", help="refresh the baseline from this run"
    )
    check.set_defaults(func=cmd_check)

    convert = sub.add_parser(
        "convert-journal",
        help="convert a run recorded before run logs (meta.json + journal.jsonl) into one",
    )
    convert.add_argument("journals", nargs="+", type=Path, metavar="FOLDER")
    convert.add_argument("--out", type=Path, help="results directory (default: results/)")
    convert.set_defaults(func=cmd_convert)
