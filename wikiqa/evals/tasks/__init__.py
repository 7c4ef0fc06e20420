"""What is graded: the task-line schema, the suites and their held-out splits, and the
deterministic asserts a task may carry. The bottom room of `evals/`: it imports no other."""

from wikiqa.evals.tasks import asserts
from wikiqa.evals.tasks.task import (
    CATEGORIES,
    DIMENSIONS,
    Category,
    Dimension,
    Injection,
    Task,
    TaskError,
    TaskProvenance,
    bytes_hash,
    load_tasks,
    parse_tasks,
    read_suite,
    refuse_held_out,
    resolve_suite,
    sample,
    suite_hash,
)

__all__ = [
    "CATEGORIES",
    "DIMENSIONS",
    "Category",
    "Dimension",
    "Injection",
    "Task",
    "TaskError",
    "TaskProvenance",
    "asserts",
    "bytes_hash",
    "load_tasks",
    "parse_tasks",
    "read_suite",
    "refuse_held_out",
    "resolve_suite",
    "sample",
    "suite_hash",
]
