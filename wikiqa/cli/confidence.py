"""`wikiqa confidence fit RUN` and `wikiqa confidence check LABELS...`.

`fit` fits the confidence model on recorded runs' decided answers (one run, or several pooled):
it prints the weights, the fit's AUROC and the review threshold (with `--cv K`, first the
task-grouped K-fold AUROC of each L2 strength, fitting with the best), and with `--write`
replaces the shipped weights (`wikiqa/data/confidence.json`) every agent scores confidence with.
`check` measures the shipped weights (or `--weights`) against human correctness labels, or a
run's graded answers, the fit never saw.
"""

from __future__ import annotations

import argparse
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikiqa.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    CliError,
    add_label_suites,
    label_suites,
    labelled,
)
from wikiqa.models.evidence import FEATURES, MODEL_FEATURES, SIGNALS
from wikiqa.terminal import echo

if TYPE_CHECKING:
    from wikiqa.evals.labels.confidence_fit import Fold


def cmd_fit(args: argparse.Namespace) -> int:
    import pandas as pd

    from wikiqa.evals.labels.confidence_fit import FitError, cross_validate, fit
    from wikiqa.experiment import load_run
    from wikiqa.models.evidence import WEIGHTS_FILES

    frames = []
    for run, split in [*((r, args.half) for r in args.runs), *((r, None) for r in args.whole)]:
        try:
            frames.append(_half(load_run(run, args.out), split))
        except (FileNotFoundError, OSError) as err:
            raise CliError(f"{run}: no such run ({err})", EXIT_NOT_FOUND) from err
    frame = pd.concat(frames, ignore_index=True)  # a task's trials: one group
    if not 0.0 < args.risk < 1.0:
        raise CliError(f"--risk must be in (0, 1), got {args.risk}", EXIT_USAGE)
    if args.l2 < 0:
        raise CliError(f"--l2 must be >= 0, got {args.l2}", EXIT_USAGE)
    l2, held_out = args.l2, None
    try:
        if args.cv:
            found = cross_validate(frame, folds=args.cv, features=args.features)
            for strength, fold in found.items():
                echo(f"l2 {strength:<5g} {args.cv}-fold AUROC {_auroc_text(fold)}")
            l2 = max(found, key=lambda k: (found[k].auroc or 0.0, k))  # ties: the stronger
            echo(f"chosen l2 {l2:g}: out-of-fold AUROC {_auroc_text(found[l2])} (by task)")
            held_out = found[l2]
        weights = fit(frame, risk=args.risk, l2=l2, features=args.features, held_out=held_out)
        if args.half:
            halved = ", ".join(args.runs) if args.whole else "its"
            weights = weights.model_copy(
                update={"fitted_on": f"{weights.fitted_on}, the {args.half} half of {halved} tasks"}
            )
    except FitError as err:
        raise CliError(f"{' '.join(args.runs)}: {err}", EXIT_USAGE) from err
    for name, w in zip(weights.features, weights.weights, strict=True):
        echo(f"{name:<12} {w:+.4f}")
    echo(f"{'bias':<12} {weights.bias:+.4f}")
    scored = "out of fold" if held_out else "in sample"
    echo(
        f"fitted on {weights.fitted_on}: {weights.points} decided answers, AUROC "
        f"{weights.auroc_fit:.3f} (in sample) · review below {weights.review_below:.3f} "
        f"(risk <= {args.risk:.2f} above it, {scored})"
    )
    shipped = files("wikiqa.data").joinpath(WEIGHTS_FILES[args.mode])
    targets = [Path(str(shipped))] if args.write else []
    for target in [*targets, *([args.save] if args.save else [])]:
        try:
            target.write_text(weights.model_dump_json(indent=2) + "\n", encoding="utf-8")
        except OSError as err:
            raise CliError(f"{target}: cannot write the weights ({err})", EXIT_NOT_FOUND) from err
        echo(f"wrote {target}")
    return 0


def _auroc_text(fold: Fold) -> str:
    if fold.auroc is None:
        return "n/a"
    ci = f" [{fold.interval[0]:.2f}, {fold.interval[1]:.2f}]" if fold.interval else ""
    return f"{fold.auroc:.3f}{ci}"


def cmd_check(args: argparse.Namespace) -> int:
    from wikiqa.evals.analysis.stats import count_text, interval_text
    from wikiqa.evals.labels.confidence_fit import FitError, on_labels
    from wikiqa.inputs import MiB, read_text_bounded
    from wikiqa.models.evidence import Weights
    from wikiqa.models.evidence import weights as evidence_weights

    if not args.labels and not args.run:
        raise CliError("give label files, --run RUN, or both", EXIT_USAGE)
    try:
        fitted = (
            Weights.model_validate_json(read_text_bounded(args.weights, MiB, "weights file"))
            if args.weights
            else None
        )
    except (OSError, ValueError) as err:
        raise CliError(f"{args.weights}: not a weights file ({err})", EXIT_NOT_FOUND) from err
    frame = None
    if args.run:
        from wikiqa.experiment import load_run

        try:
            frame = _half(load_run(args.run, args.out), args.half)
        except (FileNotFoundError, OSError) as err:
            raise CliError(f"{args.run}: no such run ({err})", EXIT_NOT_FOUND) from err
    try:
        if args.labels:
            from wikiqa.evals.labels.confidence_fit import recorded_signals

            tasks, examples = labelled(args.labels, label_suites(args))
            recorded = recorded_signals(frame) if frame is not None else None
            result = on_labels(examples, tasks, fitted, recorded, args.mode)
            against, what = "human correctness labels", "labelled"
            if frame is not None:
                against += f" (scored by the signals {args.run} recorded)"
        else:
            from wikiqa.evals.labels.confidence_fit import on_run

            assert frame is not None
            result = on_run(frame, fitted, args.mode)
            against, what = f"the graders' decided correctness in {args.run}", "decided"
    except (FitError, ValueError) as err:
        raise CliError(str(err), EXIT_NOT_FOUND) from err
    ci = f" [{result.auroc_ci[0]:.2f}, {result.auroc_ci[1]:.2f}]" if result.auroc_ci else ""
    auroc = "n/a" if result.auroc is None else f"{result.auroc:.3f}{ci}"
    echo(
        f"confidence against {against}: AUROC {auroc} · ECE "
        f"{result.ece if result.ece is None else round(result.ece, 3)} · "
        f"{result.points} {what} answers, "
        f"{interval_text(result.correct, result.points)} {what} correct"
    )
    shipped = (fitted or evidence_weights(args.mode)).review_below
    cuts = [("shipped review threshold", shipped)]
    if args.review_below is not None:
        cuts.append(("given review threshold", args.review_below))
    if args.risk is not None:
        if not 0.0 < args.risk < 1.0:
            raise CliError(f"--risk must be in (0, 1), got {args.risk}", EXIT_USAGE)
        ok = [p.threshold for p in result.curve if p.risk <= args.risk]
        cuts.append((f"threshold chosen here for risk <= {args.risk:.2f}", min(ok, default=1.0)))
    for name, threshold in cuts:
        # the curve's point for the answers at or above the threshold (none kept above the top)
        kept = min((p for p in result.curve if p.threshold >= threshold), default=None,
                   key=lambda p: p.threshold)  # fmt: skip
        n, wrong = (kept.answered, round(kept.risk * kept.answered)) if kept else (0, 0)
        echo(
            f"{name} {threshold:.3f}: answers kept (not sent to review) "
            f"{count_text(n, result.points)}, wrong among them {count_text(wrong, n)}"
        )
    return 0


def _half(frame: Any, half: str | None) -> Any:
    """The rows of one half of the tasks (`task_half`), or all of them."""
    if half is None:
        return frame
    from wikiqa.evals.labels.halves import task_half

    return frame[frame["task_id"].map(task_half) == half]


def _add_split(p: argparse.ArgumentParser) -> None:
    p.add_argument("--half", choices=("fit", "check"), help="only the tasks of this half (a "
                   "fixed split by task id): fit on `fit`, check on labels of `check`")  # fmt: skip
    p.add_argument("--mode", choices=("tools", "reading"), default="tools", help="the answering "
                   "mode whose shipped weights are read or written (default tools)")  # fmt: skip


def _features(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in SIGNALS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown signal {', '.join(unknown) or '(none)'}: choose from {', '.join(SIGNALS)}"
        )
    return names


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("confidence", help="fit the confidence model on a recorded run")
    group = p.add_subparsers(dest="confidence_command", required=True, metavar="COMMAND")
    f = group.add_parser(
        "fit",
        help="fit confidence weights on one or more runs' decided answers",
        description="Logistic regression of the graders' decided correctness on the evidence "
        "signals each answer recorded; the review threshold is the lowest confidence whose kept "
        "answers are wrong at most --risk of the time.",
    )
    f.add_argument("runs", nargs="+", metavar="RUN", help="run ids (under results/runs/) or "
                   "parquet paths: their decided answers are fitted on together")  # fmt: skip
    f.add_argument("--risk", type=float, default=0.25, help="error allowed above the review "
                   "threshold (default 0.25)")  # fmt: skip
    f.add_argument("--l2", type=float, default=1.0, help="L2 strength (default 1)")
    f.add_argument("--cv", type=int, default=0, metavar="K", help="choose --l2 by task-grouped "
                   "K-fold cross-validation and print each strength's out-of-fold AUROC")  # fmt: skip
    f.add_argument("--out", type=Path, help="results directory the run is in")
    f.add_argument("--features", type=_features, default=FEATURES, metavar="A,B,...",
                   help=f"signals to fit on (default the evidence ones: {','.join(FEATURES)}; "
                   f"the reading mode's model also gives {','.join(MODEL_FEATURES)})")  # fmt: skip
    _add_split(f)
    f.add_argument("--whole", action="append", default=[], metavar="RUN", help="a run whose "
                   "every task is fitted on, whatever --half says (a suite no check label is "
                   "drawn from: dev beside public2's fit half); repeatable")  # fmt: skip
    f.add_argument("--write", action="store_true", help="replace the --mode's shipped weights")
    f.add_argument("--save", type=Path, metavar="PATH", help="also write the weights to PATH "
                   "(for `confidence check --weights`), leaving the shipped ones alone")  # fmt: skip
    f.set_defaults(func=cmd_fit)
    c = group.add_parser(
        "check",
        help="AUROC of the shipped confidence against human correctness labels",
        description="Score every labelled answer (experiments/labels/*.jsonl format) with a "
        "correctness label by the shipped confidence, and report AUROC (95% bootstrap "
        "interval) and ECE against the human's call.",
    )
    c.add_argument("labels", nargs="*", type=Path, metavar="LABELS", help="label files (JSONL)")
    c.add_argument("--run", help="alone: a run id or parquet path, scored against its graders' "
                   "decided correctness (a run the weights were not fitted on); with labels: the "
                   "run the labelled answers come from, whose recorded signals score them")  # fmt: skip
    _add_split(c)
    c.add_argument("--out", type=Path, help="results directory the --run is in")
    add_label_suites(c)
    c.add_argument("--weights", type=Path, metavar="PATH", help="score with these weights (a "
                   "file `confidence fit --save` wrote) instead of the shipped ones")  # fmt: skip
    c.add_argument("--risk", type=float, metavar="R", help="also choose the review threshold on "
                   "these labels' risk-coverage curve: the lowest confidence whose kept answers "
                   "are wrong at most R of the time")  # fmt: skip
    c.add_argument("--review-below", type=float, metavar="T", help="also say what threshold T "
                   "keeps and how often the kept answers are wrong (a threshold chosen on other "
                   "labels, checked on these)")  # fmt: skip
    c.set_defaults(func=cmd_check)
