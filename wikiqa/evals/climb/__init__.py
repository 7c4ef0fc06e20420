"""The climb's record: one typed change-log row per recorded run, and the one function that
decides whether a run becomes one (`record(outcome, policy)`), for the CLI, the notebooks and
the held-out split alike. `evaluate` is run-then-record with the held-out check first."""

from wikiqa.evals.climb.changelog import (
    ChangelogRow,
    Delta,
    append,
    delta_text,
    read,
    render_markdown,
    unlike,
)
from wikiqa.evals.climb.record import (
    POLICIES,
    ForeignRecord,
    HoldoutRefused,
    InfrastructureFailure,
    NothingNew,
    Policy,
    check_holdout,
    evaluate,
    parameters_hash,
    record,
)

__all__ = [
    "POLICIES",
    "ChangelogRow",
    "Delta",
    "ForeignRecord",
    "HoldoutRefused",
    "InfrastructureFailure",
    "NothingNew",
    "Policy",
    "append",
    "check_holdout",
    "delta_text",
    "evaluate",
    "parameters_hash",
    "read",
    "record",
    "render_markdown",
    "unlike",
]
