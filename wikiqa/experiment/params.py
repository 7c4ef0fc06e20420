"""What every step notebook can be given, with its default and its rule: the common parameters
live here once (as nanoGPT's `config/*.py` hold only overrides), so a step notebook's
`parameters` cell holds only what that step changes.

`-p NAME VALUE` may name any field here or any name the notebook's own `parameters` cell sets;
anything else is refused before the notebook runs (`declared`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# One vocabulary for what a change-log row changed (checked, so a typo is not a new kind).
Kind = Literal[
    "adhoc", "baseline", "prompt", "retrieval", "reading", "confidence", "abstention", "text",
    "injection", "grader", "model",
]  # fmt: skip
KINDS: tuple[str, ...] = Kind.__args__  # type: ignore[attr-defined]


class StepParameters(BaseModel):
    """A step's parameters; each description lists the allowed values (shown by `--help`-like
    tables in the executed notebook)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    MODEL: str = Field(
        "extractive",
        description="extractive (levers as in the README) | anthropic:<model> | "
        "openai:<model>@<base_url> | local (SmolLM2 via llama.cpp) | local:<name>",
    )
    JUDGE: str | None = Field(None, description="None: offline graders only | a judge model spec")
    SOURCE: str = Field(
        "snapshot",
        description="snapshot (offline) | live | live:<host> | cassette:<run id or path> (replay "
        "a run's cassette) | a snapshot file path",
    )
    SUITE: str = Field("dev", description="dev | public | a task file path (never a holdout)")
    TRIALS: int = Field(3, ge=1, le=100, description="trials per task, majority vote: 1..100")
    CONCURRENCY: int = Field(8, ge=1, le=256, description="worker threads: 1..256")
    EXECUTOR: str = Field(
        "local",
        description="local (this kernel's threads) | ray (a local Ray, or RAY_ADDRESS) | "
        "ray://<host>:<port> (a Ray cluster) | ray:<address>; ray needs the `ray` extra",
    )
    LIMIT: int | None = Field(None, ge=1, description="None: the whole suite | N: the first N")
    OUT: str | None = Field(
        None, description="None: results/scratch/ (or results/ when recorded) | a directory"
    )
    RECORD: bool = Field(
        False, description="False: exploratory, no change-log row | True: record the step"
    )
    CHANGE: str = Field("", description="what this step changes (free text)")
    KIND: Kind = Field("adhoc", description=" | ".join(KINDS))
    RETRIEVAL: bool = Field(True, description="True: the agent | False: no retrieval (tools off)")
    BUDGET: int | None = Field(None, ge=1, le=64, description="None: the default | tool calls")
    READ_FIRST: int = Field(0, ge=0, description="top hits fetched before the model's first turn")
    SPOTLIGHT: bool = Field(False, description="datamark retrieved text (a live-model lever)")
    STRICT_SUPPORT: bool = Field(
        False, description="reject an answer whose own words (not the question's) are unquoted"
    )
    TRIM_QUOTES: bool = Field(
        False, description="cut a quote's non-verbatim tail to its verbatim leading sentences"
    )
    CITE_SENTENCES: bool = Field(
        False, description="show articles' sentences numbered and take citations by number"
    )
    ABSTAIN_BELOW: float = Field(
        0.0, ge=0.0, le=1.0, description="0: never | refuse an answer whose confidence is under it"
    )
    MAX_TOKENS: int | None = Field(
        None, ge=16, le=32768, description="None: the default | output tokens per model call"
    )
    TIMEOUT: float | None = Field(None, gt=0, description="None: the default | seconds per call")
    VS: str | None = Field(
        None,
        description="None: the Δ against the suite's last row | a step's name: against that "
        "step's latest row of the suite (the step this one changes)",
    )
    RESUME: str | None = Field(
        None, description="None: a new run | the run id of an interrupted run to finish"
    )


COMMON = tuple(StepParameters.model_fields)


class ParameterError(ValueError):
    """A step parameter breaks its rule; the message names the parameter and the rule."""


def parameters(namespace: dict[str, Any]) -> StepParameters:
    """The step's parameters from a notebook's globals (its `parameters` cell plus whatever
    papermill injected after it): the common ones validated, the step's own kept as given."""
    given = {k: v for k, v in namespace.items() if k.isupper() and not k.startswith("_")}
    try:
        return StepParameters(**given)
    except ValidationError as err:
        problems = []
        for e in err.errors():
            name = ".".join(str(p) for p in e["loc"])
            rule = e["msg"].removeprefix("Value error, ")
            problems.append(f"-p {name} {e.get('input')!r}: {rule}")
        raise ParameterError("; ".join(problems)) from None
