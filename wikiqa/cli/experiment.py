"""`wikiqa experiment run`: execute experiment notebooks with papermill over a parameter grid.

Each executed run is summarised from the change log rows it appended, so the shell shows results.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from wikiqa.cli.common import EXIT_UNAVAILABLE, CliError


def cmd_experiment_run(args: argparse.Namespace) -> int:
    from wikiqa import experiment
    from wikiqa.evals import changelog, results_dir

    notebooks = list(args.notebooks)
    if args.current:
        notebooks.append(experiment.current_step())
    if not notebooks:
        raise CliError("name at least one notebook, or pass --current")
    for path in notebooks:
        if not Path(path).is_file():
            raise CliError(f"{path}: no such notebook")
    out = args.out or results_dir()
    runs = experiment.grid(args.parameters or [])
    if args.out is not None:
        runs = [r | {"OUT": str(args.out)} for r in runs]
    for notebook in notebooks:
        extra = experiment.missing_extra(Path(notebook))
        if extra is not None:  # `experiments/0*.ipynb` on a fresh clone: say so, go on
            print(
                f"== {Path(notebook).name}: skipped, it needs the `{extra}` extra "
                f"(`make test-local` installs it)",
                flush=True,
            )
            continue
        for parameters in runs:
            before = len(changelog.read(out))
            label = " ".join(f"{k}={v!r}" for k, v in parameters.items()) or "default parameters"
            print(f"== {Path(notebook).name} ({label})", flush=True)
            try:
                executed = experiment.execute(Path(notebook), parameters, out)
            except Exception as err:  # papermill raises PapermillExecutionError with the cell
                last = str(err).strip().splitlines()[-1]
                # a run that met only outages is the infrastructure's failure, not the step's
                code = (
                    EXIT_UNAVAILABLE if getattr(err, "ename", "") == "InfrastructureFailure" else 1
                )
                raise CliError(f"{notebook}: {last}", code) from err
            for row in changelog.read(out)[before:]:
                parquet = out / row["parquet"]
                print(experiment.summary_of(experiment.load_run(parquet)))
                print(f"parquet:            {parquet}")
            print(f"executed notebook:  {executed}")
            print(f"change log:         {out / 'CHANGELOG.md'}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    experiment_cmd = sub.add_parser("experiment", help="run experiment notebooks with papermill")
    exp_sub = experiment_cmd.add_subparsers(
        dest="experiment_command", required=True, metavar="ACTION"
    )
    exp_run = exp_sub.add_parser(
        "run", help="execute notebooks; repeating -p NAME makes a grid of parameter values"
    )
    exp_run.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run")
    exp_run.add_argument("--current", action="store_true", help="add the latest step notebook")
    exp_run.add_argument(
        "-p", "--parameter", dest="parameters", nargs=2, action="append", metavar=("NAME", "VALUE"),
        help="a parameter (values are JSON when they parse: 1, null, true, \"text\")",
    )  # fmt: skip
    exp_run.add_argument("--out", type=Path, help="results directory (default: results/)")
    exp_run.set_defaults(func=cmd_experiment_run)
