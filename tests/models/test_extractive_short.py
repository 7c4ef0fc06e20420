"""The extractive answerer's `short` option (on by default): for a question with an answer type,
the value of that type its chosen sentence states is the answer, the sentence its quote."""

from __future__ import annotations

from wikiqa.agent import Agent, Answer, Refusal
from wikiqa.models import ExtractiveModel
from wikiqa.sources import SnapshotSource


def test_who_wrote_dune_is_answered_with_the_author_not_a_landform(
    snapshot: SnapshotSource,
) -> None:
    result = Agent(ExtractiveModel(), snapshot).ask("Who wrote Dune?")
    # the sentence names two people (the author, and a magazine's), so it answers whole
    assert isinstance(result.output, Answer)
    assert "Frank Herbert" in result.output.text and "landform" not in result.output.text
    assert "Frank Herbert" in result.output.citations[0].quote


def test_a_sentence_about_she_is_answered_with_its_article(tiny: SnapshotSource) -> None:
    result = Agent(ExtractiveModel(), tiny).ask("Who developed FLOW-MATIC?")
    assert isinstance(result.output, Answer) and result.output.text == "Grace Hopper"
    assert result.output.citations[0].quote.startswith("She developed")


def test_off_it_answers_with_the_best_sentence(snapshot: SnapshotSource) -> None:
    model = ExtractiveModel.from_options({"short": "off"})
    assert model.spec == "extractive:short=False"
    result = Agent(model, snapshot).ask("Who wrote Dune?")
    assert isinstance(result.output, Answer) and result.output.text.startswith("A dune is")


def test_the_2030_world_cup_is_refused(snapshot: SnapshotSource) -> None:
    result = Agent(ExtractiveModel(), snapshot).ask("Who won the 2030 World Cup?")
    assert isinstance(result.output, Refusal)


def test_a_question_of_no_type_keeps_the_sentence(snapshot: SnapshotSource) -> None:
    result = Agent(ExtractiveModel(), snapshot).ask("What is the FLOW-MATIC programming language?")
    if isinstance(result.output, Answer):
        assert result.output.text == result.output.citations[0].quote
