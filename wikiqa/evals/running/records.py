"""The plain shapes of a run: its configuration, its recorded metadata and one trial's record.
Shared by the runner, the journal, the results table and the change log, so none of them has to
import another to know these shapes; they import nothing that reads or summarises a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from wikiqa.agent import AgentConfig, AgentResult, Refusal
from wikiqa.agent.config import split_spec_levers
from wikiqa.evals.graders import Grade
from wikiqa.evals.paths import results_dir
from wikiqa.outputs import check_run_id
from wikiqa.project import relative_to_root

# Columns that identify a run; the rest describe one task x trial x dimension.
META_COLUMNS = (
    "run_id", "git_sha", "experiment", "change", "kind", "model", "judge", "source",
    "source_hash", "prompt_hash", "suite", "suite_hash", "trials", "created_at", "cassette_hash",
    "max_tokens", "imported_replies",
)  # fmt: skip


# One vocabulary for what a change-log row changed (checked, so a typo is not a new kind);
# `holdout` is what a held-out split's run is, whatever it changed.
Kind = Literal[
    "adhoc", "baseline", "prompt", "retrieval", "reading", "confidence", "abstention", "text",
    "injection", "grader", "model", "holdout",
]  # fmt: skip
KINDS: tuple[str, ...] = Kind.__args__  # type: ignore[attr-defined]

# Run options set by the code that calls the runner, never a flag or a step parameter: the agent
# (its levers are each their own flag and parameter) and how an infrastructure error is retried.
INTERNAL = ("agent", "infra_attempts", "infra_backoff")


class RunConfig(BaseModel):
    """What a run measures (suite, trials, model, judge, source, the output-token cap and the
    agent's levers), then how it executes (concurrency, executor, output folder, caching,
    timeouts, retries), which never changes a verdict.

    The one declaration of every run option, with its default, its rule and its help: the
    flags of `wikiqa eval` and `wikiqa check` and the step notebooks' parameters are generated
    from these fields (`wikiqa.cli.evals`, `wikiqa.experiment.params`), except `INTERNAL`."""

    suite: str = Field(
        "dev",
        description="dev | public | public2 | another suite in experiments/suite/ by name | a "
        "task file path; with holdout: dev, public, public2, fresh or fresh2 (their held-out "
        "split)",
    )
    holdout: bool = Field(
        False,
        description="run the suite's held-out split: once, at the end, with the final agent, "
        "and recorded",
    )
    allow_holdout_rerun: bool = Field(
        False,
        description="run a held-out split already run (another agent's one look); recorded as "
        "a holdout row",
    )
    trials: int = Field(3, ge=1, le=100, description="trials per task, majority vote: 1..100")
    model: str = Field(
        "extractive",
        description="extractive[:option=value,...] (offline) | anthropic:<model> | "
        "openai:<model>@<base_url> | local (SmolLM2 served on loopback for the run) | "
        "local:<name> (local:qwen, local:qwen-0.5b) | local:<gguf>",
    )
    judge: str | None = Field(None, description="None: offline graders only | a judge model spec")
    allow_self_judge: bool = Field(False, description="let the answerer's model judge")
    source: str = Field(
        "snapshot",
        description="snapshot (offline) | live | live:<host> | cassette:<run id or path> (replay "
        "a run's cassette) | a snapshot file path",
    )
    agent: AgentConfig = Field(default_factory=AgentConfig)
    limit: int | None = Field(
        None,
        ge=1,
        description="None: the whole suite | N: N tasks drawn across its categories (each "
        "category at least once, then in proportion)",
    )
    max_tokens: int | None = Field(
        None,
        ge=16,
        le=32768,
        description="None: the settings' cap (model_max_tokens, 1024) | output tokens per model "
        "call; recorded with the run (a resume must call its model with the same cap)",
    )
    experiment: str = Field("adhoc", description="the experiment name recorded with the run")
    change: str = Field(
        "", pattern=r"^[^\r\n]*$", description="what the run changed, one line (the change log's)"
    )
    kind: Kind = Field("adhoc", description="what kind of change the change-log row records")
    concurrency: int = Field(8, ge=1, le=256, description="trials at once: 1..256")
    out: Path = Field(default_factory=results_dir, description="the results directory")
    cache: bool = Field(
        True, description="read and write the response cache (an unchanged rerun calls no model)"
    )
    timeout: float | None = Field(
        None,
        gt=0,
        description="None: the settings' (model_timeout, 60) | seconds per model call; how a "
        "run executes, never part of what it measures",
    )
    infra_attempts: int = Field(3, ge=1)
    infra_backoff: float = Field(2.0, ge=0)
    executor: str = Field(
        "local",
        description="Where trials run: local (this process's threads) | ray (a local Ray, or "
        "RAY_ADDRESS) | ray://<host>:<port> (a Ray cluster's client port) | ray:<gcs address>; "
        "ray needs the `ray` extra",
    )

    @property
    def suite_name(self) -> str:
        """The name a run's rows and change-log row carry: `dev`, `holdout` (dev's held-out
        split), `public`, `public_holdout`, or the task file's path."""
        if not self.holdout:
            return self.suite
        return "holdout" if self.suite in ("dev", "holdout") else f"{self.suite}_holdout"

    @model_validator(mode="before")
    @classmethod
    def _older_record(cls, data: Any) -> Any:
        """A configuration recorded before the agent had one: its levers were fields of the
        run (`trim_quotes`), or options of the model spec (`local:qwen;brief=1`,
        `extractive:abstain=0.4`); they are gathered into `agent`."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        agent = dict(data.pop("agent", None) or {})
        for name in AgentConfig.model_fields:
            if name in data:
                agent[name] = data.pop(name)
        if isinstance(data.get("model"), str):
            data["model"], levers = split_spec_levers(data["model"])
            agent.update(levers)
        if agent.get("budget") is None:
            agent.pop("budget", None)
        data["agent"] = agent
        return data

    @field_validator("executor")
    @classmethod
    def _known_executor(cls, value: str) -> str:
        if value == "local" or value == "ray" or (value.startswith("ray:") and len(value) > 4):
            return value
        raise ValueError(
            f"unknown executor {value!r}: use local, ray, ray://<host>:<port> or ray:<address>"
        )


class RunMeta(BaseModel):
    run_id: str
    created_at: str
    git_sha: str
    wikiqa_version: str
    config: RunConfig
    suite_path: str
    suite_hash: str
    source_name: str
    source_hash: str | None
    prompt_hash: str
    model: str
    judge: str | None
    tasks: int
    # The output-token cap the run's model was called with (None: a model without one, or a run
    # recorded before runs kept it): a reply that reaches it is cut, so it is pinned with the run.
    max_tokens: int | None = None
    # What the source answered: runs/RUN_ID.cassette.jsonl.gz and its content hash (set at the end).
    cassette: str | None = None
    cassette_hash: str | None = None
    # How many of the run's model calls imported replies answered (None: none), set at its end
    # from its logged trials: "12 of 40 calls answered from imported replies, file sha256 ...".
    imported_replies: str | None = None

    @field_validator("run_id")
    @classmethod
    def _names_no_path(cls, value: str) -> str:
        return check_run_id(value)


class TrialRecord(BaseModel):
    task_id: str
    trial: int
    attempts: int
    decision: str
    result: AgentResult
    grades: list[Grade]
    judge_error: str | None = Field(
        None,
        description="The judge was unreachable after its retries: infrastructure, not a grade.",
    )
    node: str | None = Field(
        None,
        description="The Ray node that ran the trial (None: this process, the local executor).",
    )
    imported: dict[str, int] = Field(
        default_factory=dict,
        description="Model calls of this trial answered from imported replies, by the replies "
        "file's sha256 (`wikiqa replies import`): someone else's replies, said so in the record.",
    )

    @property
    def failed(self) -> bool:
        """Lost to infrastructure (Wikipedia, the model or the judge down): rerun, never graded."""
        return self.result.infrastructure_error or self.judge_error is not None

    @property
    def cause(self) -> str:
        output = self.result.output
        return self.judge_error or (output.reason if isinstance(output, Refusal) else "?")


def portable(meta: RunMeta) -> RunMeta:
    """The metadata as a run log is committed: its results folder and suite file relative to
    the project root when inside it, so no machine's path is committed (a resume writes where it
    is resumed, and reads its suite from the config)."""
    out, suite = relative_to_root(meta.config.out), relative_to_root(Path(meta.suite_path))
    config = meta.config.model_copy(update={"out": out}) if out is not None else meta.config
    return meta.model_copy(
        update={"config": config, "suite_path": str(suite) if suite else meta.suite_path}
    )


class Verdicts(BaseModel):
    """One trial's grading, as a pass recorded it."""

    task_id: str
    trial: int
    decision: str
    grades: list[dict[str, Any]]
    judge_error: str | None = None
