from __future__ import annotations

import pytest

from wikiqa.models import ExtractiveModel
from wikiqa.registry import open_model
from wikiqa.sources import Article, Provenance


def article(title: str, text: str) -> Article:
    return Article(title=title, text=text, url="u", provenance=Provenance(source="snapshot"))


HOPPER = article(
    "Grace Hopper",
    "Grace Brewster Hopper was an American computer scientist. "
    "She developed the FLOW-MATIC programming language. She was a Navy admiral.",
)


def test_overlap_ranks_the_sentence_sharing_most_question_words() -> None:
    ranked = ExtractiveModel().rank("Who developed the FLOW-MATIC language?", [HOPPER])
    assert ranked[0].sentence == "She developed the FLOW-MATIC programming language."
    assert ranked[0].score == 1.0
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)


def test_title_words_earn_partial_credit() -> None:
    ranked = ExtractiveModel(title_weight=0.5).rank("Was Grace Hopper an admiral?", [HOPPER])
    # "She was a Navy admiral." matches admiral fully and grace/hopper through the title.
    assert ranked[0].sentence == "Grace Brewster Hopper was an American computer scientist."
    assert ranked[0].score == pytest.approx(2 / 3, abs=1e-4)
    navy = next(c for c in ranked if "admiral" in c.sentence)
    assert navy.score == pytest.approx((1 + 0.5 + 0.5) / 3, abs=1e-4)  # a tie: order decides


def test_idf_scoring_weights_rare_words() -> None:
    text = "Alpha beta gamma. Alpha beta delta. Alpha epsilon zeta."
    doc = article("Doc", text)
    overlap = ExtractiveModel(scoring="overlap", title_weight=0).rank("alpha zeta", [doc])
    idf = ExtractiveModel(scoring="idf", title_weight=0).rank("alpha zeta", [doc])
    assert overlap[0].sentence == idf[0].sentence == "Alpha epsilon zeta."
    assert idf[1].score < overlap[1].score  # "alpha" alone is worth less when it is everywhere


def test_options_parse_validate_and_round_trip_through_the_spec() -> None:
    model = open_model("extractive:threshold=0.7,hits_read=2,scoring=idf")
    assert isinstance(model, ExtractiveModel)
    assert (model.threshold, model.hits_read, model.scoring) == (0.7, 2, "idf")
    assert model.spec == "extractive:threshold=0.7,hits_read=2,scoring=idf"
    assert open_model(model.spec) == model
    assert ExtractiveModel().spec == "extractive"
    for bad, message in [
        ("extractive:threshold=high", "bad extractive option"),
        ("extractive:depth=3", "unknown extractive option"),
        ("extractive:hits_read=0", "hits_read must be at least 1"),
        ("extractive:scoring=bm25", "scoring must be overlap or idf"),
        ("extractive:threshold", "expected key=value"),
    ]:
        with pytest.raises(ValueError, match=message):
            open_model(bad)
