"""`wikiqa confidence fit RUN`: fit the confidence model on a recorded run's decided answers.

It prints the weights, the fit's AUROC and the review threshold, and with `--write` replaces the
shipped weights (`wikiqa/data/confidence.json`) that every agent scores confidence with.
"""

from __future__ import annotations

import argparse
from importlib.resources import files
from pathlib import Path

from wikiqa.cli.common import EXIT_NOT_FOUND, EXIT_USAGE, CliError


def cmd_fit(args: argparse.Namespace) -> int:
    from wikiqa.evals.confidence_fit import FitError, fit
    from wikiqa.experiment import load_run
    from wikiqa.models.evidence import WEIGHTS_FILE

    try:
        frame = load_run(args.run, args.out)
    except (FileNotFoundError, OSError) as err:
        raise CliError(f"{args.run}: no such run ({err})", EXIT_NOT_FOUND) from err
    if not 0.0 < args.risk < 1.0:
        raise CliError(f"--risk must be in (0, 1), got {args.risk}", EXIT_USAGE)
    try:
        weights = fit(frame, risk=args.risk)
    except FitError as err:
        raise CliError(f"{args.run}: {err}", EXIT_USAGE) from err
    for name, w in zip(weights.features, weights.weights, strict=True):
        print(f"{name:<12} {w:+.4f}")
    print(f"{'bias':<12} {weights.bias:+.4f}")
    print(
        f"fitted on {weights.fitted_on}: {weights.points} decided answers, AUROC "
        f"{weights.auroc_fit:.3f} (in sample) · review below {weights.review_below:.3f} "
        f"(risk <= {args.risk:.2f} above it)"
    )
    if args.write:
        target = Path(str(files("wikiqa.data").joinpath(WEIGHTS_FILE)))
        target.write_text(weights.model_dump_json(indent=2) + "\n", encoding="utf-8")
        print(f"wrote {target}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("confidence", help="fit the confidence model on a recorded run")
    group = p.add_subparsers(dest="confidence_command", required=True, metavar="COMMAND")
    f = group.add_parser(
        "fit",
        help="fit confidence weights on a run's decided answers",
        description="Logistic regression of the graders' decided correctness on the evidence "
        "signals each answer recorded; the review threshold is the lowest confidence whose kept "
        "answers are wrong at most --risk of the time.",
    )
    f.add_argument("run", help="run id (under results/runs/) or parquet path")
    f.add_argument("--risk", type=float, default=0.25, help="error allowed above the review "
                   "threshold (default 0.25)")  # fmt: skip
    f.add_argument("--out", type=Path, help="results directory the run is in")
    f.add_argument("--write", action="store_true", help="replace the shipped weights")
    f.set_defaults(func=cmd_fit)
