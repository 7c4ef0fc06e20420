"""The `strict_support` lever: an answer's own words, not the question's, must be quoted."""

from __future__ import annotations

from wikiqa.agent import Agent, AgentConfig, Answer, Refusal
from wikiqa.agent.decide import support_problems
from wikiqa.agent.support import unquoted, unsupported
from wikiqa.models import CitationArg, ScriptedModel, SubmitArgs
from wikiqa.sources import SnapshotSource

# Qwen's answer on the public slice (selfaware-2891), accepted by the default checks
QUESTION = "Can we decide to love and not to or does love come automatically?"
ECHO = SubmitArgs(
    answer="Love comes from personal choice and can be decided upon.",
    citations=[
        CitationArg(title="Machine gun", quote="A machine gun (MG) is a fully automatic and "
                    "rifled firearm designed for sustained direct fire."),
        CitationArg(title="Reflex", quote="In biology, a reflex, or reflex action, is an "
                    "involuntary, unplanned sequence or action and nearly instantaneous response "
                    "to a stimulus."),
    ],
)  # fmt: skip


def test_an_answer_made_of_the_questions_words_passes_only_the_default_checks() -> None:
    assert support_problems(ECHO, QUESTION) == []
    strict = support_problems(ECHO, QUESTION, strict=True)
    assert strict == [
        "most of what the answer adds to the question is in no quote: answer with what the "
        "quoted passages say, or call refuse"
    ]
    assert unquoted(ECHO.answer, [c.quote for c in ECHO.citations], QUESTION) == 1.0


def test_a_quoted_answer_keeps_passing_under_the_lever() -> None:
    quote = "Dune is a 1965 epic science fiction novel by American author Frank Herbert."
    grounded = SubmitArgs(
        answer="Frank Herbert wrote Dune, a 1965 novel.",
        citations=[CitationArg(title="Dune (novel)", quote=quote)],
    )
    assert unquoted(grounded.answer, [quote], "Who wrote Dune?") == 0.0
    assert support_problems(grounded, "Who wrote Dune?", strict=True) == []


def test_through_the_loop_the_lever_turns_the_echo_into_a_repair_then_a_refusal(
    tiny: SnapshotSource,
) -> None:
    quote = "Mercury is the first planet from the Sun and the smallest in the Solar System."
    echo = {
        "name": "submit_answer",
        "arguments": {
            "answer": "Mercury orbits closest, surely warmest and windiest.",
            "citations": [{"title": "Mercury (planet)", "quote": quote}],
        },
    }
    script = [[{"name": "get_article", "arguments": {"title": "Mercury (planet)"}}], [echo], [echo]]
    question = "Which planet orbits closest to the Sun?"
    default = Agent(ScriptedModel(script), tiny).ask(question)
    assert isinstance(default.output, Answer)  # 2 of its 4 own words are quoted: accepted
    strict = Agent(ScriptedModel(script), tiny, AgentConfig(strict_support=True)).ask(question)
    assert isinstance(strict.output, Refusal) and strict.output.reason_code == "ungrounded"
    repairs = [e for e in strict.trace if e.kind == "repair"]
    assert len(repairs) == 1 and "most of what the answer adds" in repairs[0].summary


def test_a_name_after_an_elided_article_is_found_in_its_quote() -> None:
    """The answer's tokens split "d'Orsay" at the apostrophe, the text's words do not: the
    name is found either way, and a name the quote lacks is still named."""
    quote = "The Musée d'Orsay is a museum in Paris, France, on the Left Bank of the Seine."
    question = "What famous museum in Paris is housed in a former railway station?"
    assert unsupported("Musée d'Orsay", [quote], question) == []
    assert unsupported("Côte d'Ivoire", ["Côte d'Ivoire is a country."], "Which country?") == []
    assert unsupported("Musée d'Orsay and the Louvre", [quote], question) == ["Louvre"]
