"""`wikiqa outcomes RUN --labels LABELS...`: a run's SimpleQA outcomes, its undecided answers by
reason, and the outcomes with the undecided resolved at the human-labelled rates
(`wikiqa.evals.labels.undecided`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from wikiqa.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    CliError,
    add_label_suites,
    label_suites,
    labelled,
)
from wikiqa.terminal import echo


def cmd_outcomes(args: argparse.Namespace) -> int:
    from wikiqa.evals.labels.undecided import human_rates, resolve, run_outcomes
    from wikiqa.evals.tasks.task import CATEGORIES
    from wikiqa.experiment import load_run
    from wikiqa.experiment.runs import record_note

    unknown = set(args.category or []) - set(CATEGORIES)
    if unknown:
        raise CliError(f"unknown category {sorted(unknown)}; known: {list(CATEGORIES)}", EXIT_USAGE)
    try:
        frame = load_run(args.run, args.out)
    except (FileNotFoundError, OSError) as err:
        raise CliError(f"{args.run}: no such run ({err})", EXIT_NOT_FOUND) from err
    tasks, examples = labelled(args.labels, label_suites(args))
    decided, reasons = run_outcomes(frame, args.category)
    if not decided.tasks:
        raise CliError(f"{args.run}: no answerable task with a correctness grade", EXIT_USAGE)
    try:
        rates = human_rates(examples, tasks)
    except ValueError as err:
        raise CliError(str(err), EXIT_NOT_FOUND) from err
    echo(f"run {args.run}: {record_note(frame)}")
    echo(decided.text())
    for reason, n in reasons.most_common():
        rate = rates.get(reason)
        human = (
            f"humans: {rate.correct}/{rate.labelled} correct, {rate.share:.2f} "
            f"[{rate.interval[0]:.2f}, {rate.interval[1]:.2f}]"
            if rate
            else "no labelled answer undecided for this reason"
        )
        echo(f"  undecided, {reason}: {n} ({human})")
    echo(resolve(decided, reasons, rates).text())
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "outcomes",
        help="a run's SimpleQA outcomes, undecided resolved at human-labelled rates",
        description="Count a run's answerable tasks as correct, incorrect, not attempted and "
        "undecided (by the reason the offline grader gives), then spread the undecided at the "
        "rate humans called such answers correct in LABELS.",
    )
    p.add_argument("run", help="run id (under results/runs/) or parquet path")
    p.add_argument("--labels", nargs="+", type=Path, required=True, metavar="LABELS",
                   help="label files (experiments/labels/*.jsonl format)")  # fmt: skip
    add_label_suites(p)
    p.add_argument("--category", action="append", help="count only these categories "
                   "(repeatable; default: every answerable one)")  # fmt: skip
    p.add_argument("--out", type=Path, help="results directory the run is in")
    p.set_defaults(func=cmd_outcomes)
