"""The dense engine itself (`wikiqa.sources.dense.MiniLM`): the int8 all-MiniLM-L6-v2 on
onnxruntime, on a few short texts. Skipped where the `dense` extra is not installed (`make
dense`), except the checks of what a missing or altered install says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wikiqa.sources import SnapshotSource
from wikiqa.sources import dense as dense_module
from wikiqa.sources.dense import DIMENSIONS, DenseError, DenseIndex, MiniLM, dense_available

needs_dense = pytest.mark.skipif(not dense_available(), reason="the dense extra: make dense")

DUNE = "Dune (novel). Dune is a 1965 epic science fiction novel by American author Frank Herbert."
EVEREST = "Mount Everest. Mount Everest is Earth's highest mountain above sea level."
HOPPER = "Grace Hopper. Grace Hopper was an American computer scientist and US Navy rear admiral."


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM()


@needs_dense
def test_vectors_are_unit_length_of_the_model_size(model: MiniLM) -> None:
    vectors = model([DUNE, EVEREST, HOPPER])
    assert vectors.shape == (3, DIMENSIONS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert model([]).shape == (0, DIMENSIONS)


@needs_dense
def test_a_text_embeds_the_same_alone_or_padded_in_a_batch(model: MiniLM) -> None:
    alone = model(["Mount Everest"])[0]
    assert np.array_equal(alone, model(["Mount Everest"])[0])  # deterministic
    padded = model(["Mount Everest", DUNE + " " + HOPPER])[0]  # padded to the longer text
    assert float(alone @ padded) > 0.9999


@needs_dense
def test_a_question_is_closest_to_the_lead_that_answers_it(model: MiniLM) -> None:
    leads = model([DUNE, EVEREST, HOPPER])
    for question, best in (
        ("Who wrote the science fiction book Dune?", 0),
        ("What is the tallest peak in the world?", 1),
        ("Which computer pioneer served in the navy?", 2),
    ):
        scores = leads @ model([question])[0]
        assert int(np.argmax(scores)) == best
        assert scores[best] - np.delete(scores, best).max() > 0.2


@needs_dense
def test_the_real_index_ranks_a_small_snapshot(tiny: SnapshotSource, tmp_path: Path) -> None:
    titles = list(tiny.titles())
    texts = [a.text if (a := tiny.get_article(t)) else "" for t in titles]
    index = DenseIndex(tiny.sha256, titles, texts, home=tmp_path, progress=False)
    assert index.matrix.shape == (len(titles), DIMENSIONS)
    assert "all-minilm-l6-v2-int8" in index.path.name and tiny.sha256[:16] in index.path.name
    assert index.rank("the highest mountain on Earth", 1)[0][0] == "Mount Everest"


@needs_dense
def test_a_model_file_other_than_the_pinned_one_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dense_module, "MODEL_SHA256", "0" * 64)
    with pytest.raises(DenseError, match="not the pinned file"):
        MiniLM()


def test_a_missing_package_is_named_with_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dense_module, "DENSE_PACKAGES", {"onnxruntime": "0.0.0-not-this"})
    assert not dense_available()
    with pytest.raises(DenseError, match=r"onnxruntime==0\.0\.0-not-this \(make dense"):
        MiniLM()
