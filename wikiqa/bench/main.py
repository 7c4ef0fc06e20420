"""The command line of `python -m wikiqa.bench`: pick a benchmark, run it, print its figures."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wikiqa.agent.config import add_flags, from_flags
from wikiqa.bench.ask import bench_ask
from wikiqa.bench.cassette import bench_cassette
from wikiqa.bench.cassette import report as cassette_report
from wikiqa.bench.eval import bench_eval
from wikiqa.bench.load import bench_load
from wikiqa.bench.local import bench_local
from wikiqa.bench.local import report as local_report
from wikiqa.bench.public import bench_public
from wikiqa.bench.report import line, report_ask, report_eval, report_sources
from wikiqa.bench.retrieval import bench_retrieval
from wikiqa.bench.retrieval import report as retrieval_report
from wikiqa.bench.scale import bench_scale
from wikiqa.bench.sources import bench_sources
from wikiqa.evals.drills.injection import bench_injection
from wikiqa.evals.drills.injection import report as injection_report
from wikiqa.secrets import scrubbed_output
from wikiqa.terminal import echo


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wikiqa.bench")
    parser.add_argument(
        "suite",
        choices=[
            "sources",
            "ask",
            "eval",
            "public",
            "injection",
            "load",
            "local",
            "cassette",
            "scale",
            "retrieval",
        ],
    )
    parser.add_argument(
        "--suite-name", default="public2", help="retrieval: the suite (default public2)"
    )
    parser.add_argument(
        "--holdout", action="store_true", help="retrieval: the suite's held-out split"
    )
    parser.add_argument("--clients", type=int, default=32, help="load: concurrent clients")
    parser.add_argument("--seconds", type=float, default=30.0, help="load: how long to drive it")
    parser.add_argument(
        "--idle", type=int, default=300, help="load: anonymous idle sockets held open meanwhile"
    )
    parser.add_argument(
        "--attackers",
        type=int,
        default=64,
        help="load: connections from each of 127.0.0.2 and 127.0.0.3 holding /healthz bodies open",
    )
    parser.add_argument("--bipia", type=Path, help="folder with BIPIA's text_attack_test.json")
    parser.add_argument(
        "--attacks",
        type=Path,
        action="append",
        help="injection: a JSONL of {id, text, canary} attacks (repeatable; default: the "
        "project's own)",
    )
    parser.add_argument(
        "--misinformation",
        type=Path,
        help="injection: a JSONL of {id, question, title, text, false_answer, true_answer} "
        "(default: the project's wikiqa/data/false_facts.jsonl)",
    )
    parser.add_argument(
        "--answerer",
        help="injection: a real model as a fourth answerer, by spec (local:qwen serves Qwen; "
        "its replies are cached, so a rerun after a kill resumes)",
    )
    parser.add_argument("--pairs", type=Path, help="JSONL of {question, titles} (default: bundled)")
    parser.add_argument(
        "--model", default="smollm2", help="local, scale: a model name (smollm2, qwen, qwen-0.5b)"
    )
    parser.add_argument("--questions", type=int, default=8, help="local, scale: dev questions")
    parser.add_argument(
        "--options", default="", help="local: openai spec options, e.g. tool_choice=auto"
    )
    # local and injection --answerer run the agent with a step's levers (read_first 3 unless
    # given: the small models' steps read three leads first)
    add_flags(parser)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    with scrubbed_output():
        try:
            figures, report = _run(args)
        except (OSError, ValueError) as err:  # a file named on the command line: say which
            echo(f"wikiqa.bench: error: {err}", file=sys.stderr)
            return 1
        echo(json.dumps(figures, indent=2) if args.json else report)
    return 0


def _run(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The chosen benchmark's figures and its printed report."""
    if args.suite == "sources":
        figures = bench_sources(args.pairs)
        report = report_sources(figures)
    elif args.suite == "ask":
        figures = bench_ask(pairs_path=args.pairs)
        report = report_ask(figures)
    elif args.suite == "eval":
        figures = bench_eval()
        report = report_eval(figures)
    elif args.suite == "public":
        figures = bench_public()
        report = "public suite, offline (targets: x3 <= 60 s, compare <= 2 s)\n" + "\n".join(
            line(k, v, "{:.2f}") for k, v in figures.items()
        )
    elif args.suite == "cassette":
        figures = bench_cassette()
        report = cassette_report(figures)
    elif args.suite == "load":
        figures = bench_load(args.clients, args.seconds, args.idle, args.attackers)
        report = (
            "load (wikiqa serve with a token, offline, loopback): token holders quiet (quiet_*), "
            "under an idle-socket flood (no prefix), and under the healthz attack (attack_*: "
            "/healthz bodies held open from 127.0.0.2 and 127.0.0.3)\n"
        )
        report += "\n".join(line(k, v, "{:.2f}" if k.endswith("_vs_quiet") else "{:.1f}")
                             for k, v in figures.items())  # fmt: skip
    elif args.suite == "local":
        figures = bench_local(
            args.model, args.questions, from_flags(args, read_first=3), args.options
        )
        report = local_report(figures)
    elif args.suite == "retrieval":
        figures = bench_retrieval(args.suite_name, args.holdout)
        report = retrieval_report(figures)
    elif args.suite == "scale":
        served = "local" if args.model == "smollm2" else f"local:{args.model}"
        figures = bench_scale(served=served, served_tasks=args.questions)
        report = (
            "scale: the Ray executor on a Ray of its own on this machine (targets: overhead "
            "<= 20 ms per trial, the median of paired runs; >= 0.85 of linear at 8 actors on a "
            "fixed-latency stub once they are up, their start-up shown apart)\n"
            + "\n".join(line(k, v, "{:.3f}") for k, v in figures.items())
        )
    else:
        agent = from_flags(args, read_first=3)
        figures = bench_injection(
            args.bipia, args.attacks, args.misinformation, args.answerer, agent
        )
        report = injection_report(figures)
    return figures, report
