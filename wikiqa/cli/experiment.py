"""`wikiqa experiment run`: execute experiment notebooks with papermill over a parameter grid.

Each executed run is summarised from the change log rows it appended, so the shell shows results.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikiqa.cli.common import EXIT_UNAVAILABLE, EXIT_USAGE, CliError
from wikiqa.cli.render import add_render
from wikiqa.inputs import InputError
from wikiqa.terminal import echo

if TYPE_CHECKING:
    from wikiqa.evals.climb import ChangelogRow


def cmd_experiment_run(args: argparse.Namespace) -> int:
    import time

    from wikiqa import experiment
    from wikiqa.evals import results_dir, scratch_dir

    notebooks = list(args.notebooks)
    if args.current:
        notebooks.append(experiment.current_step())
    if not notebooks:
        raise CliError("name at least one notebook, or pass --current")
    for path in notebooks:
        if not Path(path).exists():
            raise CliError(f"{path}: no such notebook")
        if Path(path).suffix != ".ipynb":
            raise CliError(f"{path}: not a notebook (a step is an .ipynb file)")
        try:
            experiment.read_notebook(Path(path))  # bounded, a regular file, JSON: or one line
        except InputError as err:
            raise CliError(str(err)) from None
    for path in notebooks:
        _check_names(Path(path), [name for name, _ in args.parameters or []])
    runs = experiment.grid(args.parameters or [])
    for path in notebooks:
        _check_values(Path(path), runs)
    # One place for everything a run writes (notebook, parquet, change log): --out, or -p OUT,
    # or the committed climb with --record, or else the git-ignored scratch area.
    given = {str(r["OUT"]) for r in runs if r.get("OUT")}
    if len(given) > 1:
        raise CliError("give one -p OUT (or --out) per invocation", EXIT_USAGE)
    out = args.out or (Path(given.pop()) if given else None)
    out = out or (results_dir() if args.record or args.holdout else scratch_dir())
    # relative to the repository when inside it: executed notebooks show no machine's paths
    chosen = {"OUT": _shown(out)}
    for notebook in notebooks:
        extra = experiment.missing_extra(Path(notebook))
        if extra is not None:  # `experiments/0*.ipynb` on a fresh clone: say so, go on
            echo(
                f"== {Path(notebook).name}: skipped, it needs the `{extra}` extra "
                f"({experiment.INSTALLS.get(extra, f'pip install -e .[{extra}]')})",
                flush=True,
            )
            continue
        # `experiment run` records a step into the folder it chose (scratch's own change log, or
        # the climb with --record); a step run any other way is exploratory unless it sets RECORD.
        takes = experiment.declared_parameters(Path(notebook))
        # a step writes where this command chose; a notebook that reads runs (hillclimb,
        # failures) reads the committed climb unless given -p OUT
        step = "RECORD" in takes
        if args.holdout and not step:
            raise CliError(
                f"{notebook}: --holdout runs a step notebook's agent; this is not a step"
            )
        where = chosen if step or given or args.out else {}
        recording = ({"RECORD": True} if step else {}) | ({"HOLDOUT": True} if args.holdout else {})
        points = [recording | r | where for r in runs]
        if step and not args.holdout:
            anchored = _check_base(Path(notebook), runs[0], out, args.anchor)
            if anchored is not None:
                echo(f"== {anchored.name}: the base, recorded first (--anchor)", flush=True)
                try:
                    experiment.execute(anchored, {"RECORD": True} | where, out)
                except experiment.StepFailed as err:
                    if getattr(err.cause, "ename", "") != experiment.NOTHING_NEW:
                        raise CliError(f"{anchored}: {err}") from err
        varied = [k for k in runs[0] if len({str(r.get(k)) for r in runs}) > 1]
        grid_rows = []
        for parameters in points:
            before = len(_rows(out))
            started = time.time()
            shown = {k: v for k, v in parameters.items() if k not in {"OUT", "RECORD", "HOLDOUT"}}
            label = " ".join(f"{k}={v!r}" for k, v in shown.items()) or "default parameters"
            echo(f"== {Path(notebook).name} ({label})", flush=True)
            try:
                executed = experiment.execute(Path(notebook), parameters, out)
            except KeyboardInterrupt:
                return _interrupted(Path(notebook), parameters, out, started, args)
            except experiment.StepFailed as err:  # papermill's error, with where the copy is
                ename = getattr(err.cause, "ename", "")
                if ename == experiment.NOTHING_NEW:  # a rerun of a recorded row: not an error
                    said = str(getattr(err.cause, "evalue", ""))
                    if not (args.record or args.holdout):  # exploring: the table, once more
                        twin = next((r for r in _rows(out) if r.run_id in said), None)
                        if twin is not None:
                            echo(experiment.summary_of(experiment.load_run(out / twin.parquet)))
                            echo(f"(the same inputs as the exploratory run {twin.run_id}: its "
                                 "table; nothing was run again)")  # fmt: skip
                            continue
                    echo(f"change log:         not recorded: {said}")
                    echo("executed notebook:  the earlier copy is kept")
                    continue
                # a run that met only outages is the infrastructure's failure, not the step's
                outage = ename == "InfrastructureFailure"
                raise CliError(f"{notebook}: {err}", EXIT_UNAVAILABLE if outage else 1) from err
            rows = _rows(out)[before:]
            point = ", ".join(f"{k}={parameters[k]}" for k in varied)
            grid_rows += [(point, r) for r in rows]
            if not step:  # a notebook that reads runs (hillclimb, failures): what it printed
                echo(experiment.printed(executed))
                echo(f"executed notebook:  {_shown(executed)}")
                continue
            # RECORD=False writes no row: show the run's parquet all the same
            parquets = [out / r.parquet for r in rows] or [
                p for p in sorted((out / "runs").glob("*.parquet")) if p.stat().st_mtime >= started
            ]
            for parquet in parquets:
                echo(experiment.summary_of(experiment.load_run(parquet)))
                echo(f"parquet:            {_shown(parquet)}")
            echo(f"executed notebook:  {_shown(executed)}")
            if rows:
                echo(f"change log:         {_shown(out / 'CHANGELOG.md')}")
                for r in rows:
                    echo(f"Δ tasks pass-all:   {experiment.delta_line(r, out)}")
            elif not parameters.get("RECORD"):
                echo("change log:         not recorded: RECORD is false (exploratory)")
            else:
                echo(
                    "change log:         not recorded: a row with the same inputs (clean commit, "
                    "suite, parameters) is already there; a rerun adds nothing"
                )
        if step and grid_rows:
            from wikiqa.cli.render import render_results

            render_results(out)
        if len(points) > 1 and grid_rows:
            echo(f"== the grid of {Path(notebook).name}, one row per point (95% intervals)")
            echo(_grid_table(grid_rows))
        if step and not (args.record or args.holdout) and args.out is None and not given:
            echo(
                f"(exploratory: written to {_shown(out)}; --record adds it to the committed climb)"
            )
    return 0


def _check_base(notebook: Path, given: dict[str, Any], out: Path, anchor: bool) -> Path | None:
    """Before a step runs: when the step it changes (`VS`) has no row of this suite version in
    `out`'s climb (or the committed one), say so and the command that records it; with
    `anchor`, the base notebook to record first. None when the base is there (or named none)."""
    import ast

    import papermill as pm

    from wikiqa.evals import results_dir
    from wikiqa.evals.climb.record import no_base_note
    from wikiqa.evals.tasks import resolve_suite, suite_hash
    from wikiqa.experiment.notebooks import STEP_CALL

    declared = pm.inspect_notebook(str(notebook))
    try:
        values = {k: ast.literal_eval(str(v["default"])) for k, v in declared.items()}
    except (ValueError, SyntaxError):
        return None
    values |= given
    vs, suite = values.get("VS"), values.get("SUITE", "dev")
    if not isinstance(vs, str) or not isinstance(suite, str):
        return None
    try:
        digest = suite_hash(resolve_suite(suite))
    except (ValueError, OSError):
        return None  # the step itself will say what is wrong with its suite
    rows = _rows(out) + (_rows(results_dir()) if out != results_dir() else [])
    if any(r.experiment == vs and r.suite_hash == digest and not r.holdout for r in rows):
        return None
    base = notebook.parent / f"{vs}.ipynb"
    if anchor and base.exists() and STEP_CALL in base.read_text(encoding="utf-8"):
        return base
    echo(f"note: {no_base_note(vs, suite)}", flush=True)
    return None


EXIT_INTERRUPTED = 130  # as a shell reports a command stopped by Ctrl-C


def _interrupted(
    notebook: Path, parameters: dict[str, Any], out: Path, started: float, args: Any
) -> int:
    """Ctrl-C during a step: the run it started keeps every finished trial in its log, with
    the cassette of what its source answered; say which run and how to finish it. A run
    stopped before its first trial was logged has nothing to resume: its log and cassette go."""
    import shlex

    from wikiqa.evals.running.runlog import SUFFIX, RunLog, RunLogError
    from wikiqa.evals.running.runner import slug

    logs = [
        p
        for p in (out / "runs").glob(f"*-{slug(notebook.stem)}-*{SUFFIX}")
        if p.is_file() and p.stat().st_mtime >= started
    ]
    if parameters.get("RESUME"):
        logs = [p for p in logs if p.name == f"{parameters['RESUME']}{SUFFIX}"] or logs
    if not logs:
        echo(f"wikiqa: interrupted: {notebook.name} had not started a run", file=sys.stderr)
        return EXIT_INTERRUPTED
    run_id = max(logs, key=lambda p: p.stat().st_mtime).name.removesuffix(SUFFIX)
    try:
        trials = len(RunLog.load(out, run_id).trials)
    except RunLogError:
        trials = 0
    if trials == 0:
        for leftover in (out / "runs").glob(f"{run_id}.*"):
            leftover.unlink()
        echo(f"wikiqa: interrupted: run {run_id} had logged no trial; nothing kept",
             file=sys.stderr)  # fmt: skip
        return EXIT_INTERRUPTED
    given = [a for k, v in parameters.items() if k not in {"OUT", "RECORD", "HOLDOUT", "RESUME"}
             for a in ("-p", k, v if isinstance(v, str) else json.dumps(v))]  # fmt: skip
    where = ["--holdout"] if args.holdout else ["--record"] if args.record else []
    where += ["--out", _shown(out)] if args.out else []
    command = shlex.join(["wikiqa", "experiment", "run", str(notebook), *where, *given,
                          "-p", "RESUME", run_id])  # fmt: skip
    echo(
        f"wikiqa: interrupted: run {run_id} keeps its {trials} finished trials in "
        f"{_shown(out / 'runs' / (run_id + SUFFIX))} (and its cassette beside it); finish it "
        f"with:\n  {command}",
        file=sys.stderr,
    )
    return EXIT_INTERRUPTED


def _rows(out: Path) -> list[ChangelogRow]:
    """The change log's rows; a log that does not read (a cut line, a link) is a one-line error,
    before the step runs."""
    from wikiqa.evals.climb import changelog

    try:
        return changelog.read(out)
    except ValueError as err:
        raise CliError(str(err)) from err


def _shown(path: Path) -> str:
    """`path` as the notebooks read OUT: relative to the project root when inside it."""
    from wikiqa.project import relative_to_root

    inside = relative_to_root(path)
    return str(inside) if inside is not None else str(path)


def _check_names(notebook: Path, names: list[str]) -> None:
    """Refuse a `-p NAME` the notebook's `parameters` cell does not declare, before papermill
    runs: papermill pastes the name into the injected cell as written, so a name is code
    (`-p "X=1;import os;..."` would run), and a typo (`-p TRAILS 1`) would silently run the
    defaults."""
    from wikiqa import experiment

    try:
        declared = experiment.declared_parameters(notebook)
    except InputError as err:
        raise CliError(str(err)) from None
    except (OSError, ValueError) as err:
        raise CliError(f"{notebook}: {err}") from err
    unknown = [n for n in dict.fromkeys(names) if n not in declared]
    if unknown:
        raise CliError(
            f"{notebook}: no parameter named {', '.join(map(repr, unknown))}; its parameters "
            f"cell declares {', '.join(declared) or 'none'}"
        )


def _check_values(notebook: Path, runs: list[dict[str, Any]]) -> None:
    """A step's common parameters checked against their rules before papermill runs, so a bad
    value (`-p TRIALS 0`, `-p KIND bogus`) is one line on stderr naming the parameter and the
    rule, not a traceback inside the executed notebook."""
    from wikiqa import experiment

    if experiment.STEP_CALL not in experiment.read_notebook(notebook)[0]:
        return
    from wikiqa.evals import TaskError, resolve_suite

    for run in runs:
        try:
            experiment.parameters(run)
            if "SUITE" in run:  # a suite that does not resolve fails the step's first line
                resolve_suite(str(run["SUITE"]))
        except experiment.ParameterError as err:
            raise CliError(f"{notebook}: {err}", EXIT_USAGE) from None
        except TaskError as err:
            raise CliError(f"{notebook}: -p SUITE {run['SUITE']!r}: {err}", EXIT_USAGE) from None


def _grid_table(rows: list[tuple[str, ChangelogRow]]) -> str:
    """One table of a grid's points (labelled by the values that vary), each rate with its 95%
    interval."""
    from wikiqa.evals.analysis import COLUMNS
    from wikiqa.evals.analysis.stats import count_text

    header = ["point", "tasks pass-all", *COLUMNS]
    lines = [header]
    for label, r in rows:
        tasks = count_text(*r.tasks_pass) if r.tasks_pass else "-"
        dims = [count_text(*r.dimensions[d]) if d in r.dimensions else "-" for d in COLUMNS]
        lines.append([label, tasks, *dims])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in lines)  # fmt: skip


def cmd_experiment_new(args: argparse.Namespace) -> int:
    from wikiqa import experiment
    from wikiqa.project import relative_to_root

    try:
        created = experiment.new_step(args.name, args.base)
    except InputError as err:
        raise CliError(str(err)) from None
    except (OSError, ValueError) as err:
        raise CliError(str(err), EXIT_USAGE) from None
    shown = relative_to_root(created) or created
    echo(f"{shown}: a copy of {args.base}, which its Δ is against (VS in its parameters cell)")
    echo("edit its first cell (why, the change, the hypothesis) and its parameters cell (CHANGE,")
    echo("KIND, the lever), then explore it, and record it:")
    echo(f"  wikiqa experiment run {shown} -p TRIALS 1 -p LIMIT 10")
    echo(f"  wikiqa experiment run {shown} --record")
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
    exp_run.add_argument(
        "--current",
        action="store_true",
        help="add the current step: the highest-numbered step notebook that needs no extra",
    )
    exp_run.add_argument(
        "-p", "--parameter", dest="parameters", nargs=2, action="append", metavar=("NAME", "VALUE"),
        help="a parameter (values are JSON when they parse: 1, null, true, \"text\")",
    )  # fmt: skip
    exp_run.add_argument(
        "--record",
        action="store_true",
        help="write into the committed climb (results/); without it runs are exploratory and go "
        "to results/scratch/ (git-ignored)",
    )
    exp_run.add_argument(
        "--anchor",
        action="store_true",
        help="when the step it changes (VS) has no row of this suite version, record that "
        "step first, so this one's Δ has its base",
    )
    exp_run.add_argument(
        "--holdout",
        action="store_true",
        help="run each step's agent on its suite's held-out split, recorded in results/ (once, "
        "at the end: a second run of a split is refused)",
    )
    exp_run.add_argument(
        "--out", type=Path, help="results directory (default: results/scratch/, or results/)"
    )
    exp_run.set_defaults(func=cmd_experiment_run)
    add_render(exp_sub)
    exp_new = exp_sub.add_parser(
        "new",
        help="start a step: copy STEP as the next numbered notebook, its Δ against STEP",
    )
    exp_new.add_argument("name", help="what the step changes, in a few words (its file name)")
    exp_new.add_argument(
        "--from",
        dest="base",
        required=True,
        metavar="STEP",
        help="the step it changes: a name (08_injection_defences), a number (08) or a path",
    )
    exp_new.set_defaults(func=cmd_experiment_new)
