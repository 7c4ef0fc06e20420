"""`wikiqa validate LABELS...`: grade hand-labelled answers and report agreement per dimension.

The graders see each labelled answer exactly as they would in a run (the same task, the same
fetched articles), so the agreement is the grader's, not an approximation of it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from wikiqa.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_UNAVAILABLE,
    CliError,
    add_label_suites,
    label_suites,
)
from wikiqa.terminal import echo


def _aligned(rows: list[list[str]]) -> list[str]:
    """Rows as plain-text columns, each as wide as its widest cell."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def render(summary: dict[str, Any]) -> str:
    from wikiqa.evals.analysis.stats import interval_text

    rows = [["dimension", "labelled", "agree", "needs_judge", "agreement where decided [95% CI]"]]
    for dim, d in summary["dimensions"].items():
        decided = d["labelled"] - d["needs_judge"]
        rows.append([dim, str(d["labelled"]), str(d["agree"]), str(d["needs_judge"]),
                     f"{interval_text(d['agree'], decided)} ({d['agree']}/{decided})"])  # fmt: skip
    lines = _aligned(rows)
    n = summary["correctness_labelled"]
    lines += [
        "",
        f"{summary['examples']} examples · the offline tier (or judge) decided "
        f"{summary['decided']:.1%} of labelled rows",
        "correctness false passes (grader pass, human fail): "
        + interval_text(summary["correctness_false_passes"], n)
        + f" ({summary['correctness_false_passes']}/{n})",
    ]
    if summary.get("judge"):
        lines += ["", judge_table(summary)]
    return "\n".join(lines)


def judge_table(summary: dict[str, Any]) -> str:
    """The judge's own rows: what the offline tier left it, what it decided, how often it agrees
    with the humans there, and whether that clears the bar for adopting it on that dimension."""
    from wikiqa.evals.analysis.stats import interval_text
    from wikiqa.evals.labels.validation import ADOPT_AGREEMENT, ADOPT_LOWER

    rows = [["judge on", "asked", "decided", "agreement where it decided [95% CI]", "adopt"]]
    for dim, d in summary["judge"].items():
        share = f"{d['decided']} ({d['decided'] / d['asked']:.0%})" if d["asked"] else "0"
        agreement = f"{interval_text(d['agree'], d['decided'])} ({d['agree']}/{d['decided']})"
        rows.append([dim, str(d["asked"]), share, agreement, "yes" if d["adopt"] else "no"])
    lines = _aligned(rows)
    calls = summary.get("judge_calls")
    if calls == 0:
        lines.append("0 judge calls: every reply came from the response cache")
    elif calls:
        lines.append(
            f"{calls} judge calls, {summary['judge_seconds'] / calls:.1f} s per call (a local "
            "server's start-up in the first; replies from the response cache are not calls)"
        )
    lines.append(
        f"adopt: agreement >= {ADOPT_AGREEMENT:.2f} and its 95% lower bound >= {ADOPT_LOWER:.2f}"
    )
    return "\n".join(lines)


def cmd_validate(args: argparse.Namespace) -> int:
    from wikiqa.evals import Judge
    from wikiqa.evals.labels.halves import half_of
    from wikiqa.evals.labels.validation import LabelError, compare, load_labels, report
    from wikiqa.evals.running.cache import CachingModel, ResponseCache, cache_path
    from wikiqa.evals.running.served import open_run_model
    from wikiqa.evals.tasks.task import TaskError
    from wikiqa.models import ModelUnavailable
    from wikiqa.sources import SnapshotSource

    try:
        suites = label_suites(args)
        examples = [
            e
            for path in args.labels
            for e in load_labels(path)
            if args.half == "all" or half_of(path, e.id) == args.half
        ]
        if not examples:
            raise LabelError(f"no labelled examples in the {args.half} half of these files")
        judge = None
        if args.judge:  # behind the response cache: a long validation killed resumes
            cache = ResponseCache(cache_path())
            judge = Judge(CachingModel(open_run_model(args.judge), cache, "validate"))
        frame = compare(examples, SnapshotSource(), judge, suites)
    except ModelUnavailable as err:  # the judge: nothing is graded, nothing guessed
        raise CliError(f"judge unavailable: {err}", EXIT_UNAVAILABLE) from err
    except (LabelError, TaskError, ValueError) as err:
        raise CliError(str(err), EXIT_NOT_FOUND) from err
    summary = report(frame)
    if judge is not None:
        summary |= {"judge_calls": judge.calls, "judge_seconds": round(judge.seconds, 1)}
    if args.json:
        shown = {"dimensions": summary["dimensions"]}
        if judge is not None:  # the judge's rows, and its calls
            shown["judge"] = summary["judge"]
            shown |= {k: summary[k] for k in ("judge_calls", "judge_seconds")}
        echo(json.dumps(shown))
    else:
        echo(render(summary))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "validate",
        help="grade hand-labelled answers; agreement per dimension",
        description="Grade each labelled example (experiments/labels/*.jsonl format) against "
        "its task and print, per dimension: labelled, agree, needs_judge, and the agreement "
        "where the grader decided.",
    )
    p.add_argument("labels", nargs="+", type=Path, metavar="LABELS", help="label files (JSONL)")
    add_label_suites(p)
    p.add_argument("--judge", help="judge model spec (default: the offline tier only)")
    p.add_argument(
        "--half",
        choices=["all", "tune", "holdout"],
        default="all",
        help="only the examples of one half (a fixed hash of file and id, "
        "wikiqa/evals/labels/halves.py): write a judge's prompt on tune, score it on holdout",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"dimensions": {DIM: {"labelled", "agree", "needs_judge"}}, "judge": {DIM: '
        '{"asked", "decided", "agree", "agreement", "lower", "adopt"}}}',
    )
    p.set_defaults(func=cmd_validate)
