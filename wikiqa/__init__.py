"""wikiqa: a Wikipedia-grounded question-answering agent and the evals that climb it.

The public surface is what `__all__` lists; everything else is an implementation detail.
"""

from importlib.metadata import version
from typing import Any

from wikiqa.agent.loop import Agent
from wikiqa.agent.result import AgentResult, Answer, Citation, Refusal, TraceEvent
from wikiqa.models.protocol import Model, ModelUnavailable, open_model
from wikiqa.sources.injection import InjectionSource, Plant
from wikiqa.sources.protocol import SourceError, SourceUnavailable, WikiSource, open_source
from wikiqa.sources.recording import RecordingSource
from wikiqa.sources.records import Article, Depth, Provenance, SearchHit
from wikiqa.sources.snapshot import SnapshotError, SnapshotInfo, SnapshotSource

__version__ = version("wikiqa")

__all__ = [
    "Agent",
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
    # LiveSource pulls in mwclient and requests; load them only when the live path is used.
    if name == "LiveSource":
        from wikiqa.sources.live import LiveSource

        return LiveSource
    raise AttributeError(f"module 'wikiqa' has no attribute {name!r}")
