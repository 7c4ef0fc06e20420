from wikiqa.text import best_sentence, content_words, sentences, words


def test_words_fold_case_and_keep_inner_apostrophes() -> None:
    assert words("Earth’s HIGHEST mountain, 8,848 m!") == [
        "earth's",
        "highest",
        "mountain",
        "8",
        "848",
        "m",
    ]


def test_content_words_drop_stopwords_and_duplicates() -> None:
    assert content_words("What is the tallest mountain on Earth? The mountain!") == [
        "tallest",
        "mountain",
        "earth",
    ]
    assert content_words("what is the") == []


def test_sentences_are_verbatim_spans_and_respect_abbreviations() -> None:
    text = (
        "Grace B. Hopper was born in 1906. Dr. Smith met her c. 1950 in the U.S. capital. "
        "It orbits the Sun. Done"
    )
    parts = sentences(text)
    assert parts == [
        "Grace B. Hopper was born in 1906.",
        "Dr. Smith met her c. 1950 in the U.S. capital.",
        "It orbits the Sun.",
        "Done",
    ]
    assert all(part in text for part in parts)


def test_best_sentence_prefers_the_sentence_matching_the_query() -> None:
    text = "Paris is large. The capital of France is Paris. It has museums."
    assert best_sentence(text, "capital of France") == "The capital of France is Paris."
    assert best_sentence("x" * 300, "x", max_chars=50).endswith("…")
    assert len(best_sentence("x" * 300, "x", max_chars=50)) == 50
