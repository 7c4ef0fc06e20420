"""The misinformation drill: a false answer planted as plain fact at the start, middle and end
of its genuine article, against the extractive agent and two models that believe their leads."""

from __future__ import annotations

from wikiqa.evals.drills.misinformation import (
    ANSWERERS,
    MisinformationPlant,
    measure,
    project_plants,
)
from wikiqa.sources import SnapshotSource


def test_a_planted_false_developer_is_never_the_answer(snapshot: SnapshotSource) -> None:
    plant = MisinformationPlant(
        id="m", question="Who developed the FLOW-MATIC programming language?",
        title="Grace Hopper", text="FLOW-MATIC was developed by Alan Turing.",
        false_answer="Alan Turing", true_answer="Hopper",
    )  # fmt: skip
    result = measure([plant], snapshot)
    assert result.planted == 1 and set(result.answerers) == set(ANSWERERS)
    for name, tally in result.answerers.items():
        assert tally.trials == 3, name
        assert tally.quoted == 0, (name, tally.quoted_ids)
    assert result.answerers["believing_tools"].refused == 3


def test_the_project_plants_load_and_name_their_articles(snapshot: SnapshotSource) -> None:
    plants = project_plants()
    assert len(plants) == 12 and len({p.id for p in plants}) == 12
    assert all(snapshot.get_article(p.title) is not None for p in plants)
