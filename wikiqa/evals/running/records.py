"""What a run is: its configuration, its recorded metadata, one trial's record, its outcome, and
where results are written. Shared by the runner, the journal, the results table and the change
log, so none of them has to import another to know these shapes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pydantic import BaseModel, Field, model_validator

from wikiqa.agent import DEFAULT_BUDGET, AgentResult, Refusal
from wikiqa.config import Settings
from wikiqa.evals.analysis.summary import Summary
from wikiqa.evals.graders import Grade

REPO_RESULTS = Path(__file__).resolve().parents[3] / "results"


def scratch_dir() -> Path:
    """Where exploratory runs go (git-ignored): ad hoc evals and unrecorded experiment runs stay
    out of the committed climb unless recorded on purpose."""
    return results_dir() / "scratch"


def results_dir() -> Path:
    """`WIKIQA_RESULTS` if set (tests and notebook checks write elsewhere), else results/."""
    configured = Settings().results
    return configured.expanduser() if configured is not None else REPO_RESULTS


# Columns that identify a run; the rest describe one task x trial x dimension.
META_COLUMNS = (
    "run_id", "git_sha", "experiment", "change", "kind", "model", "judge", "source",
    "source_hash", "prompt_hash", "suite", "suite_hash", "trials", "created_at",
)  # fmt: skip


class HoldoutRefused(RuntimeError):
    """The held-out suite was already run on this suite hash."""


class RunConfig(BaseModel):
    suite: str = "dev"
    holdout: bool = False
    allow_holdout_rerun: bool = False
    trials: int = Field(3, ge=1, le=100)
    model: str = "extractive"
    judge: str | None = None
    allow_self_judge: bool = False
    source: str = "snapshot"
    concurrency: int = Field(8, ge=1, le=256)
    budget: int = Field(DEFAULT_BUDGET, ge=1, le=64)
    retrieval: bool = Field(True, description="False: the no-retrieval baseline (tools off).")
    read_first: int = Field(
        0, ge=0, description="Top search hits the agent fetches before the model's first turn."
    )
    spotlight: bool = Field(
        False, description="Datamark retrieved text for the model (spotlighting; a lever)."
    )
    limit: int | None = Field(None, ge=1, description="Run only the first N tasks.")
    experiment: str = "adhoc"
    change: str = ""
    kind: str = "adhoc"
    out: Path = Field(default_factory=results_dir)
    cache: bool = True
    infra_attempts: int = Field(3, ge=1)
    infra_backoff: float = Field(2.0, ge=0)

    @property
    def suite_name(self) -> str:
        """The name a run's rows and change-log row carry: `dev`, `holdout` (dev's held-out
        split), `public`, `public_holdout`, or the task file's path."""
        if not self.holdout:
            return self.suite
        return "holdout" if self.suite in ("dev", "holdout") else f"{self.suite}_holdout"

    @model_validator(mode="after")
    def _reads_fit_budget(self) -> RunConfig:
        if self.read_first >= self.budget:
            raise ValueError(f"read_first ({self.read_first}) must be below budget ({self.budget})")
        return self


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

    @property
    def failed(self) -> bool:
        """Lost to infrastructure (Wikipedia, the model or the judge down): rerun, never graded."""
        return self.result.infrastructure_error or self.judge_error is not None

    @property
    def cause(self) -> str:
        output = self.result.output
        return self.judge_error or (output.reason if isinstance(output, Refusal) else "?")


class InfrastructureFailure(RuntimeError):
    """Every trial of a run ended in an infrastructure error: there is nothing to record."""


class RunOutcome(BaseModel):
    meta: RunMeta
    summary: Summary
    table: str
    parquet: Path
    trials_run: int = Field(description="Trials executed now (not taken from the journal).")
    model_calls: int = Field(description="Model calls that reached the model (cache misses).")
    cached_calls: int
    judge_calls: int
    first_error: str | None = Field(None, description="The first infrastructure error's cause.")

    @property
    def all_failed(self) -> bool:
        """Every trial ended in an infrastructure error (Wikipedia or the model down)."""
        return (
            self.summary.errors > 0
            and self.summary.errors >= self.meta.tasks * self.meta.config.trials
        )


def git_sha(root: Path | None = None) -> str:
    """The commit the run's code came from, `-dirty` when tracked files were changed. The
    climb's own record (`results/`) does not count: recording one run must not mark the next
    run of the same commit dirty."""
    root = root or Path(__file__).resolve().parents[3]

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results")
        return git("rev-parse", "--short", "HEAD") + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
