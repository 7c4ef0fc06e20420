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
from pydantic.fields import FieldInfo

from wikiqa.agent import AgentConfig
from wikiqa.evals.running.records import INTERNAL, RunConfig
from wikiqa.evals.running.records import KINDS as KINDS
from wikiqa.evals.running.records import Kind as Kind

# Run options a step sets its own way: its experiment is the notebook's name, and its results
# folder (`OUT`, below) defaults by whether the step is recorded.
STEP_OWN = ("experiment", "out")
# The run options a step takes as parameters, by `RunConfig` field name.
RUN_OPTIONS = tuple(n for n in RunConfig.model_fields if n not in INTERNAL + STEP_OWN)


class StepParameters(BaseModel):
    """A step's parameters: the step's own (where its run goes, whether it is recorded, what
    its Δ is against, what it resumes), one parameter per run option (generated from
    `RunConfig`) and one per agent lever (generated from `AgentConfig`), never listed again."""

    model_config = ConfigDict(extra="allow", frozen=True)

    OUT: str | None = Field(
        None, description="None: results/scratch/ (or results/ when recorded) | a directory"
    )
    RECORD: bool = Field(
        False, description="False: exploratory, no change-log row | True: record the step"
    )
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

    def run_options(self) -> dict[str, Any]:
        """The run options these parameters set, by `RunConfig` field name."""
        return {name: getattr(self, name.upper()) for name in RUN_OPTIONS}


def _upper(fields: dict[str, FieldInfo], names: tuple[str, ...]) -> dict[str, Any]:
    """Fields as step parameters: each name in capitals, the same type, default, rule and help."""
    return {name.upper(): (fields[name].annotation, copy(fields[name])) for name in names}


_STEP: type[StepParameters] = create_model(
    "StepParameters",
    __base__=StepParameters,
    **_upper(RunConfig.model_fields, RUN_OPTIONS),
    **_upper(AgentConfig.model_fields, tuple(AgentConfig.model_fields)),
)
COMMON = tuple(_STEP.model_fields)


def fields() -> dict[str, FieldInfo]:
    """Every common step parameter (the step's own, the run options, the agent levers)."""
    return dict(_STEP.model_fields)


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
