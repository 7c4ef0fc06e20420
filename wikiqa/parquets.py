"""Parquet files a user names (a run's results table), read bounded: on disk, in rows and as
decoded. A parquet is read only when it is one (pyarrow's own errors name neither the file nor
the problem in plain words), of bounded size and row count, and whose columns decode to a bounded
size, measured before they are decoded: a dictionary-encoded column stores each distinct string
once, so a few hundred kB can decode to gigabytes. Every refusal is an `InputError` naming the
file."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikiqa.inputs import InputError, MiB, read_bounded

if TYPE_CHECKING:
    import pandas as pd

MAX_PARQUET_BYTES = 256 * MiB  # a run's parquet is kilobytes to a few megabytes
MAX_PARQUET_ROWS = 2_000_000  # one row per trial and dimension: a 100,000-trial run fits
# What a parquet may take once decoded into a frame. A whole-suite run is tens of MiB; the sizes
# in a parquet's metadata are of its encoded pages, and a dictionary-encoded column stores each
# distinct string once, so a 400 kB file can decode to gigabytes (2 million rows of one
# kilobyte answer: 4 GB of frame).
MAX_PARQUET_DECODED = 1024 * MiB


def arrow_source(data: bytes) -> Any:
    """`data` as a pyarrow file whose bytes pyarrow owns (a copy in its own memory pool), so no
    Python object is handed to it. A Python file object (`io.BytesIO`) or a buffer over Python
    bytes is read, and released, by pyarrow's own threads, which then take the GIL; one still
    doing so while the interpreter exits is ended by CPython mid-C++ frame, and the process
    aborts ("terminate called without an active exception", exit 134) after its work is done."""
    import pyarrow as pa

    owned = pa.allocate_buffer(len(data))
    memoryview(owned).cast("B")[:] = data
    return pa.BufferReader(owned)


def read_parquet(path: Path | str, what: str = "run", columns: Iterable[str] = ()) -> pd.DataFrame:
    """A parquet file as a frame, bounded on disk, inflated and in rows; anything that is not a
    readable parquet (a text file, a symlink to /etc/passwd, a truncated copy) or lacks one of
    `columns` is an InputError saying so, naming the file."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        data = read_bounded(path, MAX_PARQUET_BYTES, what)  # over it, or no regular file: TooLarge
    except FileNotFoundError:
        raise InputError(f"{path}: cannot read {what}: no such file") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read {what}: {err.strerror or err}") from None
    try:
        parquet = pq.ParquetFile(arrow_source(data))
        meta = parquet.metadata
        inflated = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if meta.num_rows > MAX_PARQUET_ROWS or inflated > 4 * MAX_PARQUET_BYTES:
            raise InputError(
                f"{path}: {what} holds {meta.num_rows} rows ({inflated // MiB} MiB uncompressed), "
                f"over the {MAX_PARQUET_ROWS} rows or {4 * MAX_PARQUET_BYTES // MiB} MiB "
                "this reads; refusing it"
            )
        missing = [c for c in columns if c not in parquet.schema_arrow.names]
        if missing:
            raise InputError(f"{path}: not a {what}: no {', '.join(missing)} column")
        decoded = _decoded_size(data)
        if decoded > MAX_PARQUET_DECODED:
            raise InputError(
                f"{path}: {what} decodes to {decoded // MiB} MiB, over the "
                f"{MAX_PARQUET_DECODED // MiB} MiB this reads; refusing it"
            )
        return pd.read_parquet(arrow_source(data), use_threads=False, pre_buffer=False)
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError) as err:
        if isinstance(err, InputError):
            raise
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"{path}: not a parquet {what} file ({first})") from None


def _decoded_size(data: bytes) -> int:
    """The bytes a parquet's columns take once decoded (strings expanded, as a frame holds them),
    measured without expanding them and one column of one row group at a time: a fixed-width
    column costs at most 8 bytes a row; a string column is read as a dictionary (each distinct
    value once, an index a row) and costs the sum of its rows' value lengths, and an offset a row."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = pq.read_schema(arrow_source(data))
    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:  # a list of strings would be expanded by the read below; no table here nests
        raise ValueError(f"column {nested[0]} is nested")
    strings = [
        f.name
        for f in schema
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
        or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
    ]  # fmt: skip
    dictionaries = [f.name for f in schema if pa.types.is_dictionary(f.type)]
    parquet = pq.ParquetFile(arrow_source(data), read_dictionary=strings, pre_buffer=False)
    total = 0
    for group in range(parquet.metadata.num_row_groups):
        rows = parquet.metadata.row_group(group).num_rows
        total += 8 * rows * (len(schema) - len(strings) - len(dictionaries))
        for name in [*strings, *dictionaries]:
            read = parquet.read_row_group(group, columns=[name], use_threads=False)
            for chunk in read.column(0).chunks:
                if name in dictionaries:  # a frame keeps it a categorical: as read
                    total += chunk.nbytes
                    continue
                lengths = pc.binary_length(chunk.dictionary)
                total += (pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0) + 8 * len(chunk)
    return total
