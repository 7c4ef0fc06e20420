"""`wikiqa experiment render`, and the rebuild of the results notebooks that recording a row
into the committed climb triggers (`wikiqa.experiment.rendered`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from wikiqa.cli.common import CliError
from wikiqa.terminal import echo


def shown(path: Path) -> str:
    """A path relative to the project when inside it: no machine's prefix in what is printed."""
    from wikiqa.project import relative_to_root

    inside = relative_to_root(path)
    return str(inside) if inside is not None else str(path)


def render_results(out: Path, file: Any = None) -> None:
    """Once a row is recorded into the committed climb, rebuild the results notebooks over it
    (`experiment.rendered`): a copy built before the row would show a climb without it. A
    notebook that fails to build is said, not raised: the row is recorded whatever happens."""
    from wikiqa import experiment
    from wikiqa.experiment import rendered

    if not rendered.is_committed_climb(out):
        return
    echo("results notebooks: rebuilding over the climb with its new row", file=file, flush=True)
    try:
        built = rendered.rebuild(out)
    except experiment.StepFailed as err:
        echo(f"results notebooks: not rebuilt: {err} (`wikiqa experiment render` retries)",
             file=file)  # fmt: skip
        return
    echo(f"results notebooks: {', '.join(shown(p) for p in built)}", file=file)


def cmd_experiment_render(args: argparse.Namespace) -> int:
    """`wikiqa experiment render`: rebuild the results notebooks over the climb (`--out`, or
    the committed one), or with `--check` only say which are stale (exit 1 if any)."""
    from wikiqa import experiment
    from wikiqa.evals import results_dir
    from wikiqa.experiment import rendered

    out = args.out or results_dir()
    if args.check:
        found = rendered.stale(out)
        for line in found:
            echo(f"stale: {line}")
        if not found:
            echo("results notebooks: built from the change log and notebooks as they are")
        return 1 if found else 0
    try:
        built = rendered.rebuild(out)
    except experiment.StepFailed as err:
        raise CliError(str(err)) from err
    for path in built:
        echo(f"executed notebook:  {shown(path)}")
    return 0


def add_render(exp_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`wikiqa experiment render`'s arguments."""
    exp_render = exp_sub.add_parser(
        "render",
        help="rebuild the results notebooks (hillclimb, failures) over the climb; recording a "
        "row into results/ does it too",
    )
    exp_render.add_argument(
        "--check", action="store_true", help="only say which are stale (exit 1 if any)"
    )
    exp_render.add_argument(
        "--out", type=Path, help="results directory (default: results/, the committed climb)"
    )
    exp_render.set_defaults(func=cmd_experiment_render)
