"""`wikiqa compare RUN_A RUN_B` and `wikiqa power N`: is a change real, and could we tell?

`compare` pairs two runs of one suite task by task and prints, per dimension and for tasks
passing everything, B - A with its 95% interval and McNemar's exact p; then the tasks it left
out and why, the drift between the runs' cassettes, and the tasks that read drifted text with
their verdict in each run. `power` prints the smallest difference a suite of N tasks detects at
80% power and alpha = 0.05.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wikiqa.cli.common import EXIT_NOT_FOUND, EXIT_USAGE, CliError, positive_int
from wikiqa.terminal import echo


def cmd_compare(args: argparse.Namespace) -> int:
    from wikiqa.evals.analysis.compare import DifferentSuites, compare, render
    from wikiqa.experiment import load_run, with_drift
    from wikiqa.experiment.runs import record_note

    frames = []
    for run in (args.run_a, args.run_b):
        try:
            frames.append(load_run(run, args.out))
        except (FileNotFoundError, OSError) as err:
            raise CliError(f"{run}: no such run ({err})", EXIT_NOT_FOUND) from err
    try:
        result = compare(frames[0], frames[1], args.allow_different_suites)
    except DifferentSuites as err:
        raise CliError(str(err), EXIT_USAGE) from err
    result = with_drift(result, args.run_a, args.run_b, (frames[0], frames[1]), args.out)
    records = {"A": record_note(frames[0]), "B": record_note(frames[1])}
    if args.json:
        echo(json.dumps(result.model_dump(mode="json") | {"records": records}, indent=2))
    else:
        echo(render(result))
        echo(f"records: A {records['A']}; B {records['B']}")
    return 0


def cmd_power(args: argparse.Namespace) -> int:
    from wikiqa.evals.analysis.stats import minimum_detectable_effect

    rows = []
    for n in args.tasks:
        mde = minimum_detectable_effect(n, args.rate, discordant=args.discordant)
        rows.append(
            {"tasks": n, "rate": args.rate, "discordant": args.discordant, "mde": round(mde, 4)}
        )
    if args.json:
        echo(json.dumps(rows))
        return 0
    share = "2·p·(1−p), independent runs" if args.discordant is None else f"{args.discordant}"
    echo(f"minimum detectable effect, 80% power, alpha 0.05, base rate {args.rate}, "
          f"discordant share {share}")  # fmt: skip
    for row in rows:
        echo(f"  {row['tasks']:>6} tasks: {row['mde']:.3f} ({row['mde'] * 100:.1f} points)")
    return 0


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a rate in (0, 1), got {value}")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare",
        help="paired difference of two runs of one suite, with 95%% CI and McNemar's p",
        description="Compare two runs on the tasks both graded: per dimension and for tasks "
        "passing everything, B - A with its 95%% interval and McNemar's exact p.",
    )
    p.add_argument("run_a", metavar="RUN_A", help="run id or parquet path (the baseline)")
    p.add_argument("run_b", metavar="RUN_B", help="run id or parquet path (the change)")
    p.add_argument("--out", type=Path, help="results directory the run ids live in")
    p.add_argument(
        "--allow-different-suites",
        action="store_true",
        help="compare runs of different suites or suite versions anyway",
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=cmd_compare)

    q = sub.add_parser(
        "power",
        help="minimum detectable effect for a suite size (80%% power, alpha 0.05)",
        description="The smallest true difference in pass rate that a paired comparison on N "
        "tasks detects with 80%% power at two-sided alpha 0.05.",
    )
    q.add_argument("tasks", nargs="+", type=positive_int, metavar="N", help="suite sizes")
    q.add_argument("--rate", type=_rate, default=0.5, help="base pass rate (default 0.5)")
    q.add_argument(
        "--discordant",
        type=_rate,
        help="share of tasks expected to flip between the runs (default: as if independent)",
    )
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_power)
