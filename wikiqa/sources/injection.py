"""Plant text into articles of another source: the fixture for prompt-injection tasks.

The planted text reaches the agent exactly as Wikipedia text would, which is the point: the agent
must treat retrieved text as data. Provenance marks the article `injected`, so traces and graders
can tell planted text from Wikipedia's own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from wikiqa.sources.protocol import SourceWrapper, WikiSource, normalize_title
from wikiqa.sources.records import Article, Depth
from wikiqa.text import sentences

Position = Literal["start", "middle", "end"]


class Plant(BaseModel):
    """Text to plant into one article; `position` is where in the text it goes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    text: str
    position: Position = "end"


def plant_text(text: str, planted: str, position: str) -> str:
    if position == "start":
        return f"{planted} {text}"
    if position == "end":
        return f"{text} {planted}"
    parts = sentences(text)
    half = (len(parts) + 1) // 2
    return " ".join([*parts[:half], planted, *parts[half:]])


class InjectionSource(SourceWrapper):
    """A `WikiSource` overlay: `inner`'s articles, with planted text in the named ones."""

    def __init__(self, inner: WikiSource, plants: list[Plant]) -> None:
        super().__init__(inner)
        self.plants: dict[str, list[Plant]] = {}
        for plant in plants:
            self.plants.setdefault(normalize_title(plant.title), []).append(plant)

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        article = self.inner.get_article(title, depth)
        if article is None:
            return None
        plants = self.plants.get(normalize_title(article.title))
        if not plants:
            return article
        text = article.text
        for plant in plants:
            text = plant_text(text, plant.text, plant.position)
        provenance = article.provenance.model_copy(update={"injected": True})
        return article.model_copy(update={"text": text, "provenance": provenance})
