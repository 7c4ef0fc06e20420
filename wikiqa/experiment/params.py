"""What every step notebook can be given, with its default and its rule: the common parameters
live here once (as nanoGPT's `config/*.py` hold only overrides), so a step notebook's
`parameters` cell holds only what that step changes.

`-p NAME VALUE` may name any field here or any name the notebook's own `parameters` cell sets;
anything else is refused before the notebook runs (`declared`).
"""

from __future__ import annotations

from copy import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from wikiqa.agent import AgentConfig
from wikiqa.evals.running.records import KINDS as KINDS
from wikiqa.evals.running.records import Kind as Kind


class StepParameters(BaseModel):
    """A step's parameters: what it sets about its run (model, suite, trials, recording, ...),
    each description listing the allowed values, and one parameter per agent lever, generated
    from `AgentConfig` (`_STEP`), never listed again."""

    model_config = ConfigDict(extra="allow", frozen=True)

    MODEL: str = Field(
        "extractive",
        description="extractive[:option=value,...] | anthropic:<model> | "
        "openai:<model>@<base_url> | local (SmolLM2 via llama.cpp) | local:<name>",
    )
    JUDGE: str | None = Field(None, description="None: offline graders only | a judge model spec")
    SOURCE: str = Field(
        "snapshot",
        description="snapshot (offline) | live | live:<host> | cassette:<run id or path> (replay "
        "a run's cassette) | a snapshot file path",
    )
    SUITE: str = Field(
        "dev",
        description="dev | public | public2 | another suite in experiments/suite/ by name | a "
        "task file path (never a held-out split: HOLDOUT runs that)",
    )
    HOLDOUT: bool = Field(
        False,
        description="False: the suite | True: the suite's held-out split, run once at the end "
        "with this step's agent, and recorded (`wikiqa experiment run STEP --holdout`)",
    )
    TRIALS: int = Field(3, ge=1, le=100, description="trials per task, majority vote: 1..100")
    CONCURRENCY: int = Field(8, ge=1, le=256, description="worker threads: 1..256")
    EXECUTOR: str = Field(
        "local",
        description="local (this kernel's threads) | ray (a local Ray, or RAY_ADDRESS) | "
        "ray://<host>:<port> (a Ray cluster) | ray:<address>; ray needs the `ray` extra",
    )
    LIMIT: int | None = Field(
        None,
        ge=1,
        description="None: the whole suite | N: N tasks across its categories (stratified)",
    )
    OUT: str | None = Field(
        None, description="None: results/scratch/ (or results/ when recorded) | a directory"
    )
    RECORD: bool = Field(
        False, description="False: exploratory, no change-log row | True: record the step"
    )
    CHANGE: str = Field("", description="what this step changes (free text)")
    KIND: Kind = Field("adhoc", description=" | ".join(KINDS))
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

    def agent(self) -> AgentConfig:
        """The agent configuration these parameters set (their agent levers)."""
        return AgentConfig(
            **{name: getattr(self, name.upper()) for name in AgentConfig.model_fields}
        )


def _agent_parameters() -> dict[str, Any]:
    """Every `AgentConfig` lever as a step parameter: its name in capitals, the same default,
    rule and help."""
    return {
        name.upper(): (field.annotation, copy(field))
        for name, field in AgentConfig.model_fields.items()
    }


_STEP: type[StepParameters] = create_model(
    "StepParameters", __base__=StepParameters, **_agent_parameters()
)
COMMON = tuple(_STEP.model_fields)


class ParameterError(ValueError):
    """A step parameter breaks its rule; the message names the parameter and the rule."""


def parameters(namespace: dict[str, Any]) -> StepParameters:
    """The step's parameters from a notebook's globals (its `parameters` cell plus whatever
    papermill injected after it): the common ones validated, the step's own kept as given."""
    given = {k: v for k, v in namespace.items() if k.isupper() and not k.startswith("_")}
    try:
        found = _STEP(**given)
        found.agent()  # the levers' joint rules (read_first below budget)
        return found
    except ValidationError as err:
        problems = []
        for e in err.errors():
            name = ".".join(str(p) for p in e["loc"]).upper()
            rule = e["msg"].removeprefix("Value error, ")
            problems.append(f"-p {name} {e.get('input')!r}: {rule}" if name else rule)
        raise ParameterError("; ".join(problems)) from None
