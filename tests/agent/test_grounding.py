from __future__ import annotations

from wikiqa.agent import Fetched, citation_problems, coverage, normalize_quote
from wikiqa.models import CitationArg
from wikiqa.sources import Article, Provenance

EVEREST = Article(
    title="Mount Everest",
    text="Mount Everest is Earth’s highest mountain above sea level.\nIt is called “Sagarmatha”.",
    url="https://en.wikipedia.org/wiki/Mount_Everest",
    infobox={"elevation_m": "8848.86"},
    provenance=Provenance(source="snapshot"),
)


def fetched() -> Fetched:
    f = Fetched()
    f.add("everest", EVEREST)
    return f


def test_normalisation_only_touches_whitespace_and_quote_marks() -> None:
    assert normalize_quote(" Earth’s  “high”\n\tpeak ") == 'Earth\'s "high" peak'
    assert normalize_quote("Earth's") != normalize_quote("earth's")


def test_verbatim_quotes_pass_with_normalised_marks_and_spacing() -> None:
    ok = [
        CitationArg(title="Mount Everest", quote="Earth's highest   mountain"),
        CitationArg(title="EVEREST", quote='It is called "Sagarmatha".'),
        CitationArg(title="mount everest", quote='"Mount Everest is Earth’s highest"'),
        CitationArg(title="Mount Everest", quote="elevation_m: 8848.86"),  # an infobox line
    ]
    assert citation_problems(ok, fetched()) == []


def test_each_failure_is_named() -> None:
    bad = [
        CitationArg(title="K2", quote="second-highest mountain"),
        CitationArg(title="Mount Everest", quote="Earth's tallest mountain above"),
        CitationArg(title="Mount Everest", quote="highest mountain…sea level"),
        CitationArg(title="Mount Everest", quote="highest mountain"),
        CitationArg(title="Mount Everest", quote="earth's highest mountain"),
    ]
    problems = citation_problems(bad, fetched())
    assert problems[0] == "citation 1: 'K2' was not fetched in this run (fetched: Mount Everest)"
    assert problems[1].startswith("citation 2: quote is not a verbatim passage of 'Mount Everest'")
    assert problems[2].startswith("citation 3: quote is not a verbatim passage")
    assert problems[3].startswith("citation 4: quote 'highest mountain' is too short")
    assert problems[4].startswith("citation 5: quote is not a verbatim passage")  # case matters
    assert len(problems) == 5


def test_nothing_fetched_rejects_everything() -> None:
    problems = citation_problems([CitationArg(title="A", quote="b c d")], Fetched())
    assert problems == [
        "nothing was fetched in this run: call get_article, then quote what it returned"
    ]


def test_coverage_is_the_share_of_answer_words_in_the_quotes() -> None:
    assert (
        coverage("Everest is the highest mountain", ["Mount Everest is the highest mountain"])
        == 1.0
    )
    assert coverage("Everest is in Nepal", ["Mount Everest is high"]) == 0.5
    assert coverage("the", ["x"]) == 0.0
