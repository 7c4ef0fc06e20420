"""wikiqa: a Wikipedia-grounded question-answering agent and the evals that climb it.

The public surface is what `__all__` lists. The subpackages follow the pipeline, each with its
own `__all__`: `sources` (Wikipedia text), `models` (who takes the turns), `agent` (the loop),
`evals` (tasks, graders, runner, report, gate), `experiment` (the notebook workflow), and the
front ends `cli`, `api` and `bench`. `registry` builds models and sources from spec strings.
"""

from importlib.metadata import version
from typing import Any

from wikiqa import sources
from wikiqa.agent import Agent, AgentConfig, AgentResult, Answer, Citation, Refusal, TraceEvent
from wikiqa.models import Model, ModelUnavailable
from wikiqa.registry import open_model, open_source
from wikiqa.sources import (
    Article,
    Depth,
    InjectionSource,
    Plant,
    Provenance,
    RecordingSource,
    SearchHit,
    SnapshotError,
    SnapshotInfo,
    SnapshotSource,
    SourceError,
    SourceUnavailable,
    WikiSource,
)

__version__ = version("wikiqa")

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentResult",
    "Answer",
    "Article",
    "Citation",
    "Depth",
    "InjectionSource",
    "LiveSource",
    "Model",
    "ModelUnavailable",
    "Plant",
    "Provenance",
    "RecordingSource",
    "Refusal",
    "SearchHit",
    "SnapshotError",
    "SnapshotInfo",
    "SnapshotSource",
    "SourceError",
    "SourceUnavailable",
    "TraceEvent",
    "WikiSource",
    "open_model",
    "open_source",
]


def __getattr__(name: str) -> Any:
    # LiveSource pulls in mwclient and requests: `wikiqa.sources` loads it only when asked for.
    if name == "LiveSource":
        return sources.LiveSource
    raise AttributeError(f"module 'wikiqa' has no attribute {name!r}")
