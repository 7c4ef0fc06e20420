"""Retrieval levers (`wikiqa.sources.ranked`, `wikiqa.sources.dense`): dense, hybrid (RRF) and
linked titles, over a small snapshot. The embedding model is replaced by a bag-of-words stand-in
(the real one is tested in test_dense_engine.py, and by the bench on the real index): what is
tested here is the ranking, fusion, the index file and the agent wiring, not the model."""

from __future__ import annotations

import io
import os
import resource
import zlib
from pathlib import Path

import numpy as np
import pytest

from wikiqa.agent import Agent, AgentConfig
from wikiqa.models import ExtractiveModel
from wikiqa.sources import InjectionSource, SnapshotSource, ranked
from wikiqa.sources import dense as dense_module
from wikiqa.sources.dense import DenseError, DenseIndex
from wikiqa.sources.ranked import RankedSource, fuse
from wikiqa.text import content_words


def _bag(text: str) -> np.ndarray:
    vector = np.zeros(64, dtype=np.float32)
    for word in content_words(text):
        vector[zlib.crc32(word.encode()) % 64] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


@pytest.fixture
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Swap the model for the stand-in; the list counts the passages embedded."""
    calls: list[int] = []

    def passages(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.stack([_bag(t) for t in texts])

    monkeypatch.setattr(dense_module, "encode_passages", passages)
    monkeypatch.setattr(dense_module, "encode_query", _bag)
    monkeypatch.setattr(dense_module, "dense_available", lambda: True)
    monkeypatch.setattr(ranked._Cache, "dense", {})
    return calls


def test_fusion_adds_reciprocal_ranks() -> None:
    fused = fuse([["a", "b", "c"], ["c", "a"]], k=1)
    assert [t for t, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == pytest.approx(1 / 2 + 1 / 3)
    assert fused[1][1] == pytest.approx(1 / 4 + 1 / 2)


def test_the_dense_index_is_built_once_and_checked(
    tiny: SnapshotSource, encoded: list[int], tmp_path: Path
) -> None:
    titles = list(tiny.titles())
    texts = [a.text if (a := tiny.get_article(t)) else "" for t in titles]
    home = tmp_path / "dense"
    index = DenseIndex(tiny.sha256, titles, texts, home=home, progress=False)
    assert index.built and sum(encoded) == len(titles) and index.matrix.shape == (len(titles), 64)
    again = DenseIndex(tiny.sha256, titles, texts, home=home, progress=False)
    assert not again.built and sum(encoded) == len(titles)  # reopened, not re-embedded
    assert again.rank("FLOW-MATIC programming language", 1)[0][0] == "Grace Hopper"
    index.path.write_bytes(b"not numpy")
    with pytest.raises(DenseError, match="not a dense index"):
        DenseIndex(tiny.sha256, titles, texts, home=home, progress=False)
    assert DenseIndex(tiny.sha256[::-1], titles, texts, home=home, progress=False).built


def test_an_interrupted_build_resumes(
    tiny: SnapshotSource, encoded: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    titles = list(tiny.titles())
    texts = [a.text if (a := tiny.get_article(t)) else "" for t in titles]
    monkeypatch.setattr(dense_module, "BATCH", 2)
    monkeypatch.setattr(dense_module, "CHECKPOINT", 2)
    real = dense_module.encode_passages

    def failing(batch: list[str]) -> np.ndarray:
        if sum(encoded) >= 4:
            raise KeyboardInterrupt
        return real(batch)

    monkeypatch.setattr(dense_module, "encode_passages", failing)
    with pytest.raises(KeyboardInterrupt):
        DenseIndex(tiny.sha256, titles, texts, home=tmp_path, progress=False)
    monkeypatch.setattr(dense_module, "encode_passages", real)
    index = DenseIndex(tiny.sha256, titles, texts, home=tmp_path, progress=False)
    assert sum(encoded) == len(titles)  # the first 4 were not embedded again
    assert index.matrix.shape[0] == len(titles)
    assert not list(tmp_path.glob("*.partial.npy"))


def test_rankers_and_linked_titles(tiny: SnapshotSource, encoded: list[int]) -> None:
    question = "In which sub-range of the Himalayas does Mount Everest lie?"
    bm25 = RankedSource(tiny, "bm25").search(question, 3)
    assert bm25 == tiny.search(question, 3)  # bm25 alone is the source's own search
    dense = RankedSource(tiny, "dense").search(question, 3)
    assert dense[0].title == "Mount Everest" and "Himalayas" in dense[0].snippet
    hybrid = RankedSource(tiny, "hybrid").search(question, 3)
    assert hybrid[0].title == "Mount Everest"
    assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)
    # a title named in the query: fused in even where no ranker finds it
    asked = "grace hopper's navy rank"
    assert "Grace Hopper" not in [h.title for h in RankedSource(tiny, "bm25").search("navy rank")]
    linked = RankedSource(tiny, "bm25", link_titles=True).search(asked, 2)
    assert linked[0].title == "Grace Hopper"


def test_the_agent_searches_through_its_ranker(tiny: SnapshotSource, encoded: list[int]) -> None:
    planted = InjectionSource(tiny, [])
    agent = Agent(ExtractiveModel(), planted, AgentConfig(ranker="hybrid", link_titles=True))
    assert isinstance(agent.source, RankedSource) and agent.source.inner is planted
    result = agent.ask("Who wrote the novel Dune?")
    first = next(e for e in result.trace if e.kind == "search")
    assert first.detail["hits"][0] == "Dune (novel)"
    assert Agent(ExtractiveModel(), tiny).source is tiny  # the default wraps nothing


def test_dense_needs_a_snapshot() -> None:
    class Live:
        name = "live"

    with pytest.raises(ValueError, match="needs the snapshot source"):
        RankedSource(Live(), "dense")  # type: ignore[arg-type]


def _npy_header(rows: int, columns: int) -> bytes:
    buffer = io.BytesIO()
    header = {"descr": "<f2", "fortran_order": False, "shape": (rows, columns)}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


@pytest.mark.parametrize("spoiling", ["fifo", "zero", "claims_2e9_rows", "sparse_3gb", "cut"])
def test_a_replaced_index_file_is_refused_before_its_data_is_read(
    tiny: SnapshotSource, encoded: list[int], tmp_path: Path, spoiling: str
) -> None:
    """The index file is read like any user's file: a FIFO is not waited on, /dev/zero is not
    read, a header's shape is checked against the snapshot and the file's size before a byte of
    data is allocated (each of these hung or took gigabytes through `np.load`)."""
    titles = list(tiny.titles())
    texts = [a.text if (a := tiny.get_article(t)) else "" for t in titles]
    home = tmp_path / "dense"
    path = DenseIndex(tiny.sha256, titles, texts, home=home, progress=False).path
    good = path.read_bytes()
    path.unlink()
    if spoiling == "fifo":
        os.mkfifo(path)
    elif spoiling == "zero":
        path.symlink_to("/dev/zero")
    elif spoiling == "claims_2e9_rows":
        path.write_bytes(_npy_header(2_000_000_000, 64) + b"\0" * 128)
    elif spoiling == "sparse_3gb":
        path.write_bytes(_npy_header(len(titles), 64))
        with path.open("r+b") as handle:
            handle.truncate(3 * 2**30)
    else:
        path.write_bytes(good[:-2])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DenseError, match="delete it to rebuild") as raised:
        DenseIndex(tiny.sha256, titles, texts, home=home, progress=False)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 64  # nothing the size of the claimed matrix was allocated


def test_dense_retrieval_without_its_extra_is_one_line(
    tiny: SnapshotSource,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from wikiqa.cli import main

    # the extra as a fresh checkout has it: not installed (a pin no installed package matches)
    monkeypatch.setattr(dense_module, "DENSE_PACKAGES", {"onnxruntime": "0.0.0-not-this"})
    monkeypatch.setattr(ranked._Cache, "dense", {})
    assert not dense_module.dense_available() and "onnxruntime==0.0.0-not-this" in (
        dense_module.missing()
    )
    code = main(["ask", "How high is Everest?", "--ranker", "dense",
                 "--source", str(tiny.path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert err.strip().splitlines() == [f"wikiqa: error: {dense_module.missing()}"]
    out = tmp_path / "out"
    code = main(["eval", "--ranker", "dense", "--limit", "1", "--trials", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and err.strip().splitlines() == [f"wikiqa: error: {dense_module.missing()}"]
    assert not out.exists() or not any(out.rglob("*.jsonl*"))  # no run was started
