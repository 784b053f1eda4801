"""Arrow columns as numpy, read in place: the one way every model module reads a trace table.

`num` gives a numeric column (zero-copy when it is one chunk), `codes` a dictionary
column as (int32 codes, vocabulary) whatever its chunking, `strings` decoded values
for small tables. The writer gives each table one growing vocabulary, so every chunk's
dictionary is a prefix of the longest and codes agree across chunks without a copy;
dictionaries that disagree (another tool wrote the file) are unified first.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def num(table: pa.Table, name: str) -> np.ndarray:
    """A numeric column as numpy: zero-copy when it is one chunk without nulls."""
    col = table.column(name)
    if col.num_chunks == 1:
        return col.chunk(0).to_numpy(zero_copy_only=False)
    if col.num_chunks == 0:
        return np.zeros(0, dtype=col.type.to_pandas_dtype())
    return np.concatenate([c.to_numpy(zero_copy_only=False) for c in col.chunks])


def codes(data: pa.Table | pa.ChunkedArray, name: str | None = None) -> tuple[np.ndarray, list[str]]:
    """A string column (`data.column(name)`, or `data` itself) as (int32 codes, vocabulary);
    plain strings are dictionary-encoded, a missing value reads as ""."""
    col = data.column(name) if name is not None else data
    if col.num_chunks == 0:
        return np.zeros(0, dtype=np.int32), []
    if not pa.types.is_dictionary(col.type):
        col = pa.chunked_array([c.dictionary_encode() for c in col.chunks])
    longest = max((c.dictionary for c in col.chunks), key=len)
    if not all(longest[: len(c.dictionary)].equals(c.dictionary) for c in col.chunks):
        col = pa.chunked_array(pa.Table.from_arrays([col], ["x"]).unify_dictionaries().column(0).chunks)
        longest = col.chunk(0).dictionary
    parts = [c.indices.to_numpy(zero_copy_only=False) for c in col.chunks]
    out = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return out.astype(np.int32, copy=False), ["" if s is None else str(s) for s in longest.to_pylist()]


def strings(table: pa.Table, name: str) -> np.ndarray:
    """A dictionary column decoded to a numpy object array (small tables only)."""
    c, vocab = codes(table, name)
    return np.asarray(vocab, dtype=object)[c] if len(vocab) else np.array([""] * len(c), dtype=object)


def code_of(vocab: list[str], value: str) -> int:
    """The code of `value` in a vocabulary, -1 if absent."""
    try:
        return vocab.index(value)
    except ValueError:
        return -1
