"""What every `wikiqa` command group shares: exit codes, the one-line error, argument types.

Kept apart from the group modules so they can all import it without importing each other.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from wikiqa.agent import AgentConfig
from wikiqa.agent.config import add_flags, from_flags
from wikiqa.registry import open_source
from wikiqa.sources import SnapshotError, WikiSource

if TYPE_CHECKING:
    from wikiqa.evals.labels.validation import LabelledExample
    from wikiqa.evals.tasks.task import Task
    from wikiqa.models import Model

EXIT_NOT_FOUND = 1
EXIT_UNAVAILABLE = 3
EXIT_USAGE = 2  # as argparse: the arguments do not fit together

# Help texts repeated across groups, so every command describes its specs the same way.
EXECUTOR_HELP = (
    "where trials run: local (default, this process), ray (a local Ray, or RAY_ADDRESS), "
    "ray://<host>:<port> (a Ray cluster's client port) or ray:<address>; needs the `ray` extra"
)
SOURCE_HELP = (
    "snapshot (default, offline), live, live:<host>, cassette:<run id or path> (replay a run's "
    "cassette), or a snapshot file path"
)
MODEL_HELP = (
    "extractive (default, offline), anthropic:<model>, openai:<model>@<url>, local (SmolLM2 "
    "served on loopback for the command), local:qwen, local:qwen-0.5b or local:<gguf>"
)


class CliError(Exception):
    """A user-facing failure: printed as one line, exits with `code`."""

    def __init__(self, message: str, code: int = EXIT_NOT_FOUND) -> None:
        super().__init__(message)
        self.code = code


def answering_model(spec: str) -> Model:
    """The model `ask` and `serve` answer with, opened as `eval` opens it: a local-model spec's
    server is started now (and stops when this process does), so a missing model file or
    llama.cpp is one line here, not an error on the first question."""
    from wikiqa.registry import is_served, open_model

    if not is_served(spec):
        try:
            return open_model(spec)
        except ValueError as err:
            raise CliError(str(err)) from err
    # only now: the running package imports pandas, which an `ask` of any other model skips
    from wikiqa.evals.running.served import ServedModel
    from wikiqa.models.local import LocalModelError

    try:
        model = ServedModel(spec)
        model.start()
    except (ValueError, LocalModelError) as err:
        raise CliError(str(err)) from err
    return model


def add_agent_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per agent lever, generated from `AgentConfig` (`wikiqa.agent.config`)."""
    add_flags(parser)


def agent_config(args: argparse.Namespace) -> AgentConfig:
    """The `AgentConfig` the lever flags (`add_flags`) set; a broken rule is a CliError."""
    try:
        return from_flags(args)
    except ValueError as err:
        raise CliError(str(err), EXIT_USAGE) from None


def int_from(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
    return value


def positive_int(text: str) -> int:
    return int_from(text, 1, "a positive integer")


def count(text: str) -> int:
    return int_from(text, 0, "a non-negative integer")


def unit_float(text: str) -> float:
    """A number from 0 to 1 (a threshold on a confidence)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {value}")
    return value


def wiki_source(spec: str) -> WikiSource:
    """Open a source spec, turning a bad spec or snapshot into a one-line error."""
    try:
        return open_source(spec)
    except (ValueError, SnapshotError) as err:
        raise CliError(str(err)) from err


LABEL_SUITES_HELP = (
    "suite the labels' task_ids come from: dev (default), public, public2, or a task file; repeat to look "
    "tasks up in several"
)


def add_label_suites(p: argparse.ArgumentParser) -> None:
    """`--suite` (repeatable) and `--holdout`, for commands that read labelled answers."""
    p.add_argument("--suite", action="append", help=LABEL_SUITES_HELP)
    p.add_argument(
        "--holdout",
        action="store_true",
        help="look the task_ids up in the named suites' held-out splits (dev, public, fresh): "
        "for labels of answers to held-out questions, never for tuning",
    )


def label_suites(args: argparse.Namespace) -> list[Path]:
    """The task files `add_label_suites`' arguments name (errors as CliError)."""
    from wikiqa.evals import resolve_suite
    from wikiqa.evals.tasks.task import TaskError

    try:
        return [resolve_suite(s, args.holdout) for s in args.suite or ["dev"]]
    except TaskError as err:
        raise CliError(str(err), EXIT_NOT_FOUND) from err


def labelled(
    labels: list[Path], suites: list[Path]
) -> tuple[dict[str, Task], list[LabelledExample]]:
    """The tasks of `suites` by id, and the labelled examples of `labels` (errors as CliError)."""
    from wikiqa.evals.labels.validation import LabelError, load_labels
    from wikiqa.evals.tasks.task import TaskError, load_tasks

    try:
        tasks = {t.id: t for path in suites for t in load_tasks(path)}
        examples = [e for path in labels for e in load_labels(path)]
    except (LabelError, TaskError) as err:
        raise CliError(str(err), EXIT_NOT_FOUND) from err
    return tasks, examples
