"""`wikiqa suite import` and `wikiqa suite build`: task files from public question sets.

`import` turns one public file into task lines, deciding against the snapshot which questions
the offline default can be graded on; `build` runs the committed recipe that makes
`experiments/suite/public.jsonl` and its held-out split. Both are deterministic for a seed; the
importers are loaded inside the handlers so other commands start without them.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from wikiqa.cli.common import EXIT_USAGE, CliError, positive_int
from wikiqa.sources import SnapshotError
from wikiqa.terminal import echo

DATASETS = ("nq-open", "hotpotqa", "selfaware", "truthfulqa", "bipia")
DEFAULT_SEED = 13


def _leads(snapshot: Path | None, min_shared: int | None) -> Any:
    from wikiqa.evals.importers import Leads
    from wikiqa.sources import SnapshotSource

    try:
        return Leads(
            SnapshotSource(snapshot), **({} if min_shared is None else {"min_shared": min_shared})
        )
    except SnapshotError as err:
        raise CliError(str(err)) from err


def _targets(path: Path) -> list[Any]:
    from wikiqa.evals import TaskError, load_tasks

    try:
        return load_tasks(path)
    except TaskError as err:
        raise CliError(str(err)) from err


def cmd_suite_import(args: argparse.Namespace) -> int:
    from wikiqa.evals import importers

    if (args.dataset == "bipia") != (args.targets is not None):
        raise CliError(
            "--targets (a task file of factual NQ-open tasks) goes with bipia, and only bipia",
            EXIT_USAGE,
        )
    targets = _targets(args.targets) if args.targets is not None else []
    leads = _leads(args.snapshot, args.min_shared)
    readers = {
        "nq-open": importers.import_nq_open,
        "hotpotqa": importers.import_hotpotqa,
        "selfaware": importers.import_selfaware,
        "truthfulqa": importers.import_truthfulqa,
    }
    try:
        if args.dataset == "bipia":
            imported = importers.import_bipia(args.path, targets, leads, args.seed, args.limit)
        else:
            imported = readers[args.dataset](args.path, leads)
        tasks = importers.take(imported.tasks, args.limit, args.seed)
        importers.write_suite(tasks, args.out)
    except importers.InputError as err:
        raise CliError(str(err)) from err
    echo(imported.summary())
    counts = ", ".join(
        f"{c} {n}" for c, n in importers.Imported(imported.dataset, tasks).counts().items()
    )
    echo(f"{args.out}: {len(tasks)} tasks ({counts}), seed {args.seed}")
    return 0


def cmd_suite_build(args: argparse.Namespace) -> int:
    from wikiqa.evals import importers, suites_dir
    from wikiqa.evals.tasks.task import HOLDOUTS

    out_dir: Path = args.out_dir or suites_dir()
    names = importers.OUTPUTS
    leads = _leads(args.snapshot, args.min_shared)
    try:
        prior = importers.Prior.of(out_dir, list(HOLDOUTS.values()), skip=list(names.values()))
        built = importers.build_public(args.benchmarks, leads, args.seed, prior)
        written = [
            (names["public"], built.public),
            (names["holdout"], built.holdout),
            (names["fresh"], built.fresh),
        ]
        for name, tasks in written:
            importers.write_suite(tasks, out_dir / f"{name}.jsonl")
    except importers.InputError as err:
        raise CliError(str(err)) from err
    for imported in built.imports:
        echo(imported.summary())
    for name, tasks in written:
        counts = ", ".join(
            f"{c} {n}" for c, n in importers.Imported("", list(tasks)).counts().items()
        )
        rules = importers.admitted_by_rule(built.imports, tasks)
        echo(
            f"{out_dir / name}.jsonl: {len(tasks)} tasks ({counts}); answerable tasks admitted "
            f"by rule: {', '.join(f'{r} {n}' for r, n in rules.items())}"
        )
    echo(f"snapshot sha256 {leads.snapshot.sha256[:16]}, seed {args.seed}")
    return 0


def cmd_suite_slice(args: argparse.Namespace) -> int:
    """A fixed, stratified slice of a suite, committed as its own suite so its hash is recorded:
    the same tasks for every step of a climb too slow to run on the whole suite."""
    from wikiqa.evals import TaskError, load_tasks, resolve_suite, suite_hash
    from wikiqa.evals.importers import dataset_of, take
    from wikiqa.evals.tasks.task import read_suite
    from wikiqa.inputs import parse_jsonl

    try:
        source = resolve_suite(args.suite)
        tasks = load_tasks(source)
    except TaskError as err:
        raise CliError(str(err)) from err
    chosen = {
        t.id
        for t in take(tasks, args.size, args.seed, stratum=lambda t: (t.category, dataset_of(t)))
    }
    # the chosen tasks' own lines, byte for byte, in the suite's order
    text = read_suite(source).decode("utf-8")  # parsed once already: the same bytes
    numbers = {n for n, record in parse_jsonl(text, source, TaskError) if record["id"] in chosen}
    lines = [line for n, line in enumerate(text.split("\n"), start=1) if n in numbers]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept = [t for t in tasks if t.id in chosen]
    counts = ", ".join(f"{c} {n}" for c, n in Counter(t.category for t in kept).most_common())
    echo(f"{args.out}: {len(kept)} of {len(tasks)} tasks of {source.name} ({counts}), "
          f"seed {args.seed}, by category and dataset; suite hash {suite_hash(args.out)}")  # fmt: skip
    return 0


def cmd_suite_plants(args: argparse.Namespace) -> int:
    """False facts planted as plain prose, as injection tasks: every plant at the start, middle
    and end of its genuine article (`misinformation.as_tasks`)."""
    from wikiqa.evals import suite_hash
    from wikiqa.evals.drills.misinformation import as_tasks, load_plants, project_plants
    from wikiqa.outputs import write_atomic

    try:
        plants = load_plants(args.plants) if args.plants else project_plants()
    except (ValueError, OSError) as err:
        raise CliError(str(err)) from err
    tasks = as_tasks(plants)
    text = "".join(t.model_dump_json(exclude_defaults=True) + "\n" for t in tasks)
    write_atomic(args.out, text.encode("utf-8"), args.out.resolve().parent)
    echo(f"{args.out}: {len(tasks)} injection tasks from {len(plants)} plants; "
         f"suite hash {suite_hash(args.out)}")  # fmt: skip
    return 0


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"sampling seed (default {DEFAULT_SEED})"
    )
    p.add_argument(
        "--snapshot", type=Path, default=None, help="snapshot file (default: the pinned one)"
    )
    p.add_argument(
        "--min-shared",
        type=positive_int,
        default=None,
        help="content words a stating sentence of an article the question does not name must "
        "share with it (default 2)",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    suite = sub.add_parser("suite", help="build task files from public question sets")
    suite_sub = suite.add_subparsers(dest="suite_command", required=True, metavar="ACTION")
    imp = suite_sub.add_parser("import", help="one public set -> task lines")
    imp.add_argument("dataset", choices=DATASETS)
    imp.add_argument("path", type=Path, help="the set's data file (bipia: a file or its folder)")
    imp.add_argument("--out", type=Path, required=True, help="task file to write")
    imp.add_argument(
        "--limit", type=positive_int, default=None, help="keep N tasks (seeded, by category)"
    )
    imp.add_argument(
        "--targets", type=Path, default=None, help="bipia: task file with factual NQ-open tasks"
    )
    _add_common(imp)
    imp.set_defaults(func=cmd_suite_import)
    build = suite_sub.add_parser(
        "build", help="rebuild the public suite (public2.jsonl) and its held-out splits"
    )
    build.add_argument("benchmarks", type=Path, help="the public sets' folder (SOURCES.md)")
    build.add_argument(
        "--out-dir", type=Path, default=None, help="where to write (default: experiments/suite)"
    )
    _add_common(build)
    build.set_defaults(func=cmd_suite_build)
    plants = suite_sub.add_parser(
        "plants", help="false facts planted in genuine articles, as injection tasks"
    )
    plants.add_argument("--plants", type=Path, help="a plants file (default: the project's "
                        "dev plants, wikiqa/data/false_facts.jsonl)")  # fmt: skip
    plants.add_argument("--out", type=Path, required=True, help="task file to write")
    plants.set_defaults(func=cmd_suite_plants)
    cut = suite_sub.add_parser("slice", help="a fixed stratified slice of a suite, as a suite")
    cut.add_argument("suite", help="dev, public, or a task file (never a held-out split)")
    cut.add_argument("--size", type=positive_int, required=True, help="tasks to keep")
    cut.add_argument("--out", type=Path, required=True, help="task file to write")
    cut.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"sampling seed (default {DEFAULT_SEED})"
    )
    cut.set_defaults(func=cmd_suite_slice)
