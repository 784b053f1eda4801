"""Streaming, atomic writer for trace format v1.

Rows arrive as record batches (or dicts of numpy arrays) and go straight to Arrow
IPC files, so a 10-million-row table never exists as Python objects. Everything is
written into a hidden temporary sibling directory that is renamed onto the target
only when `close()` succeeds: an interrupted capture leaves nothing at the target.
What may be at the target, and how it is replaced, is simcore/trace/target.py's.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from simcore.errors import UserError
from simcore.tempfiles import sibling
from simcore.trace import diskwrite
from simcore.trace import schema as S
from simcore.trace.checksum import ALGORITHM, ALGORITHMS, WrittenFileHasher
from simcore.trace.commit import CommitOrAbort
from simcore.trace.diskwrite import DirectFile, DirectIO
from simcore.trace.target import check_target, clean_directory, install

COMPRESSIONS = (None, "lz4", "zstd")

TableData = pa.RecordBatch | pa.Table | Mapping[str, Any]


class _Vocabulary:
    """One dictionary column's strings, shared by every batch and partition of a table.

    Codes never change once given, so each file's dictionary is a prefix of the
    table's vocabulary and codes agree across partitions (readers rely on that).
    """

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.values: list[str] = []
        self._array: pa.Array = pa.array([], pa.string())

    def encode(self, arr: pa.DictionaryArray) -> pa.DictionaryArray:
        local = arr.dictionary.to_pylist()
        remap = np.empty(len(local), dtype=np.int32)
        grew = False
        for i, s in enumerate(local):
            code = self.codes.get(s)
            if code is None:
                code = self.codes[s] = len(self.values)
                self.values.append(s)
                grew = True
            remap[i] = code
        if grew:
            self._array = pa.array(self.values, pa.string())
        indices = arr.indices.to_numpy(zero_copy_only=False)
        if len(remap) and not np.array_equal(remap, np.arange(len(remap), dtype=np.int32)):
            indices = remap[indices]
        return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), self._array)


def _text(values: Any) -> pa.Array:
    """Strings as Arrow UTF-8; a lone UTF-16 surrogate (which JSON's \\ud800 escapes can carry and
    UTF-8 cannot hold) becomes U+FFFD, the way undecodable bytes do elsewhere."""
    try:
        return pa.array(values, pa.string())
    except UnicodeEncodeError:
        return pa.array([None if s is None else str(s).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
                         for s in values], pa.string())


def _dictionary_array(value: Any, n: int | None) -> pa.DictionaryArray:
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if isinstance(value, pa.DictionaryArray):
        return value
    if isinstance(value, tuple) and len(value) == 2:  # (codes, vocabulary)
        codes, vocab = value
        return pa.DictionaryArray.from_arrays(
            pa.array(np.asarray(codes, dtype=np.int32)), _text(list(vocab))
        )
    if isinstance(value, str):
        if n is None:
            raise TypeError("a scalar string needs at least one array column to size it")
        return pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, dtype=np.int32)), _text([value])
        )
    if isinstance(value, pa.Array):
        return value.cast(pa.string()).dictionary_encode()
    return _text(list(value) if not isinstance(value, (list, np.ndarray)) else value).dictionary_encode()


def _numeric_array(name: str, value: Any, type_: pa.DataType, n: int | None) -> pa.Array:
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if isinstance(value, pa.Array):
        return value if value.type == type_ else value.cast(type_)
    if np.isscalar(value):
        if n is None:
            raise TypeError(f"column {name}: a scalar needs at least one array column to size it")
        value = np.full(n, value)
    arr = np.asarray(value)
    want = type_.to_pandas_dtype()
    if np.issubdtype(want, np.integer) and not (
        np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_ or arr.size == 0
    ):
        raise TypeError(f"column {name}: integer column given {arr.dtype} values; round them first")
    return pa.array(np.ascontiguousarray(arr, dtype=want), type_)


def to_record_batch(spec: S.TableSpec, data: TableData) -> pa.RecordBatch:
    """Build a batch with exactly the spec's columns and types from flexible input."""
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        data = {name: data.column(name) for name in data.schema.names}
    names = set(data)
    optional = [c.name for c in spec.columns if not c.required and c.name not in names]
    if optional:  # optional columns a writer leaves out hold their "none" value (-1)
        n0 = next((len(v) for v in data.values() if not isinstance(v, str) and not np.isscalar(v)), 0)
        data = dict(data, **{name: np.full(n0, -1, np.int32) for name in optional})
        names = set(data)
    missing = [c for c in spec.column_names if c not in names]
    extra = sorted(names - set(spec.column_names))
    if missing or extra:
        raise TypeError(f"table {spec.name}: missing columns {missing}, unknown columns {extra}")
    n = next((len(v) for v in data.values() if not isinstance(v, str) and not np.isscalar(v)), None)
    arrays = []
    for col in spec.columns:
        value = data[col.name]
        if pa.types.is_dictionary(col.type):
            arrays.append(_dictionary_array(value, n))
        else:
            arrays.append(_numeric_array(col.name, value, col.type, n))
    lengths = {len(a) for a in arrays}
    if len(lengths) > 1:
        raise TypeError(f"table {spec.name}: columns have different lengths {sorted(lengths)}")
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema)


_SUM_CHUNK = 1 << 16


def _max_sum(a: np.ndarray, b: np.ndarray) -> int:
    """(a + b).max() a chunk at a time through one small buffer: a whole-column sum would be fresh
    memory for every big batch (a 5M-row track: 40 MB, mapped anew and zeroed by the kernel)."""
    buf = np.empty(min(len(a), _SUM_CHUNK), np.int64)
    top = None
    for i in range(0, len(a), _SUM_CHUNK):
        k = min(_SUM_CHUNK, len(a) - i)
        np.add(a[i:i + k], b[i:i + k], out=buf[:k])
        m = int(buf[:k].max())
        top = m if top is None else max(top, m)
    return int(top)


class _TableFile:
    """One open Arrow IPC file (a table, or one chip's partition of it), written around the page
    cache where the filesystem allows (simcore/trace/diskwrite.py), through it where not."""

    def __init__(self, path: Path, schema: pa.Schema, options: ipc.IpcWriteOptions, pool: ThreadPoolExecutor,
                 algorithm: str = ALGORITHM, io: DirectIO | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.direct: DirectFile | None = None
        hasher = None
        if diskwrite.DIRECT and io is not None:
            try:  # Arrow's buffers gathered, hashed from memory and written around the page cache
                self.direct = hasher = DirectFile(path, io, algorithm)
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                    raise
        if self.direct is not None:
            self.sink = pa.PythonFile(self.direct, mode="w")
        else:
            # (a filesystem refusing O_DIRECT) pyarrow writes natively; the blocks are hashed on
            # `pool`'s threads as they complete, read back from the page cache
            self.sink = pa.OSFile(str(path), mode="wb")
        try:
            if self.direct is None:
                hasher = WrittenFileHasher(path, pool, algorithm)
            self.hasher = hasher
            self.writer = ipc.new_file(self.sink, schema, options=options)
        except BaseException:  # (a full disk): the trace writer's abort does not know this file yet
            self.sink.close()
            if hasher is not None:
                hasher.close() if self.direct is None else self.direct.abort()
            raise
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)
        self.rows += batch.num_rows
        if self.direct is None:
            self.hasher.written(self.sink.tell())

    def close(self) -> None:
        """Finish the file (its checksum is then being computed: `checksum` waits for it)."""
        try:
            self.writer.close()
            size = self.sink.tell()
        finally:
            self.sink.close()
        if self.direct is None:
            self.hasher.finish(size)

    def abort(self) -> None:
        """Close the file and stop hashing it, whatever state it is in."""
        try:
            self.writer.close()
        except Exception:  # already failing (a full disk, a closed file); the file goes anyway
            pass
        finally:
            if self.direct is not None:
                self.direct.abort()
            self.sink.close()
            if self.direct is None:
                self.hasher.close()

    @property
    def checksum(self) -> str:
        return self.hasher.checksum


def _naming(e: OSError, path: Path) -> OSError:
    """`e` naming the trace it failed to write: Arrow's file errors name no file ("Error writing bytes
    to file. Detail: [errno 28] No space left on device"), which made the one sentence a user sees
    "cannot access: ..."."""
    if e.filename is not None or not e.errno:
        return e
    return type(e)(e.errno, os.strerror(e.errno), str(path))


class TraceWriter(CommitOrAbort):
    """Write a trace directory `NAME.trnx/` atomically.

    >>> with TraceWriter("run.trnx", meta={"hardware": hw, "workload": wl}) as w:
    ...     w.write("tracks", {...})
    ...     for batch in batches:
    ...         w.write("instructions", batch)

    Tables never written are written empty. With `chip=` a table is partitioned per
    chip (`instructions/chip=3/part-0.arrow`); a table is either partitioned or not.
    `observer(table, chip, batch)`, when set, sees every non-empty batch as written (what
    a reader will find), e.g. to index the trace while it is written.
    `checksum_algorithm` names the hash meta.json records for each file (checksum.ALGORITHMS):
    BLAKE3 by default; `sha256-64MiB` writes what readers of 1.3 and 1.4 verify too.
    """

    observer: Callable[[str, int | None, pa.RecordBatch], None] | None = None
    finishing: Callable[[Path], None] | None = None
    """Called by `close` with the trace's temporary directory once every table file and meta.json
    are written, just before it is moved into place: the last bytes of the companions (`companion`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        meta: Mapping[str, Any] | None = None,
        *,
        compression: str | None = None,
        overwrite: bool = False,
        checksum_algorithm: str = ALGORITHM,
    ) -> None:
        if compression not in COMPRESSIONS:
            raise UserError(f"unknown compression '{compression}'; choose lz4, zstd or none.")
        if checksum_algorithm not in ALGORITHMS:
            raise UserError(f"unknown checksum algorithm '{checksum_algorithm}'; choose {' or '.join(ALGORITHMS)}.")
        self.checksum_algorithm = checksum_algorithm
        self.path = check_target(path, overwrite)
        self.overwrite = overwrite
        self.meta: dict[str, Any] = dict(meta or {})
        self.compression = compression
        self._options = ipc.IpcWriteOptions(
            compression={"lz4": "lz4", "zstd": "zstd", None: None}[compression],
            emit_dictionary_deltas=True,
        )
        clean_directory(self.path.parent)
        self._tmp = sibling(self.path)  # made by the first file written: a signal arriving before the
        # caller's try block (a SIGTERM right after this constructor) then leaves nothing behind
        self._files: dict[tuple[str, int | None], _TableFile] = {}
        self._partitioned: dict[str, bool] = {}
        self._vocab: dict[tuple[str, str], _Vocabulary] = {}
        self._span = [None, None]  # min start, max end over interval tables
        self._closed = False
        # hashes the table files' blocks as they are written (threads start with the first block)
        self._hashing = ThreadPoolExecutor(max_workers=2, thread_name_prefix="trace-hash")
        self._io = DirectIO()  # (threads and memory of the files written around the page cache)

    # -- writing -----------------------------------------------------------------
    def write(self, table: str, data: TableData, *, chip: int | None = None) -> None:
        """Append rows to `table` (to chip `chip`'s partition when given)."""
        self.append(table, chip, self.prepare(table, data, chip=chip))

    def prepare(self, table: str, data: TableData, *, chip: int | None = None) -> pa.RecordBatch:
        """The batch `write` would write: rows checked against the schema, dictionary codes made the
        table's, the trace's span updated. Every batch prepared must then be appended, in the order
        prepared (BackgroundWriter prepares in the caller's thread and appends on its own)."""
        if self._closed:
            raise RuntimeError("trace writer is closed")
        spec = S.spec(table)
        partitioned = chip is not None
        if self._partitioned.setdefault(table, partitioned) != partitioned:
            raise TypeError(f"table {table}: mix of partitioned and unpartitioned writes")
        batch = to_record_batch(spec, data)
        batch = self._unify(spec, batch)
        self._note_span(spec, batch)
        return batch

    def append(self, table: str, chip: int | None, batch: pa.RecordBatch, *, observe: bool = True) -> None:
        """Write a batch `prepare` made; then the observer sees it (unless `observe` is false: the
        caller showed it already)."""
        if self._closed:
            raise RuntimeError("trace writer is closed")
        key = (table, chip)
        f = self._files.get(key)
        if f is None:
            f = self._files[key] = _TableFile(self._tmp / self._relpath(table, chip), S.spec(table).schema,
                                              self._options, self._hashing, self.checksum_algorithm, self._io)
        if batch.num_rows:
            try:
                f.write(batch)
            except OSError as e:
                raise _naming(e, self.path) from e
            if observe and self.observer is not None:
                self.observer(table, chip, batch)

    def _unify(self, spec: S.TableSpec, batch: pa.RecordBatch) -> pa.RecordBatch:
        cols = list(batch.columns)
        for i, col in enumerate(spec.columns):
            if pa.types.is_dictionary(col.type):
                vocab = self._vocab.setdefault((spec.name, col.name), _Vocabulary())
                cols[i] = vocab.encode(cols[i])
        return pa.RecordBatch.from_arrays(cols, schema=spec.schema)

    def _note_span(self, spec: S.TableSpec, batch: pa.RecordBatch) -> None:
        if not batch.num_rows or spec.start_column is None:
            return
        start = batch.column(spec.start_column).to_numpy()
        if spec.duration_column is not None:
            hi = _max_sum(start, batch.column(spec.duration_column).to_numpy())
        elif spec.name == "collectives":
            hi = int(batch.column("end_ns").to_numpy().max())
        else:
            hi = int(start.max())
        lo = int(start.min())
        self._span[0] = lo if self._span[0] is None else min(self._span[0], lo)
        self._span[1] = hi if self._span[1] is None else max(self._span[1], hi)

    @staticmethod
    def _relpath(table: str, chip: int | None) -> str:
        if chip is None:
            return table + S.TABLE_SUFFIX
        return f"{table}/{S.PARTITION_KEY}={int(chip)}/part-0{S.TABLE_SUFFIX}"

    def companion(self, name: str) -> Path:
        """Where to write one of the trace format's disposable files (schema.DISPOSABLE_FILES: the
        timeline's index) while the trace is written: inside its temporary directory, so `close`
        moves it into place with the trace and `abort` removes it with the trace."""
        if name not in S.DISPOSABLE_FILES:
            raise ValueError(f"{name} is not one of the trace format's disposable files")
        if self._closed:
            raise RuntimeError("trace writer is closed")
        self._tmp.mkdir(exist_ok=True)
        return self._tmp / name

    # -- finishing ---------------------------------------------------------------
    def close(self) -> Path:
        """Finish every file, write meta.json and move the trace into place."""
        if self._closed:
            return self.path
        try:
            for name, spec in S.TABLES.items():
                if name not in self._partitioned:
                    self._files[(name, None)] = _TableFile(
                        self._tmp / self._relpath(name, None), spec.schema, self._options, self._hashing,
                        self.checksum_algorithm, self._io)
            for f in self._files.values():
                f.close()
            meta = self._final_meta()  # waits for the files' checksums
            (self._tmp / S.META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
            if self.finishing is not None:
                self.finishing(self._tmp)
            self._move_into_place()
        except BaseException:
            self.abort()
            raise
        self._hashing.shutdown()
        self._io.shutdown()
        self._closed = True
        return self.path

    def _final_meta(self) -> dict[str, Any]:
        tables: dict[str, Any] = {}
        for name in S.TABLES:
            parts = sorted(
                ((chip, f) for (t, chip), f in self._files.items() if t == name),
                key=lambda cf: -1 if cf[0] is None else cf[0],
            )
            entry: dict[str, Any] = {"rows": sum(f.rows for _, f in parts)}
            if self._partitioned.get(name):
                entry["partitions"] = [
                    {"chip": chip, "file": self._relpath(name, chip), "rows": f.rows, S.CHECKSUM: f.checksum}
                    for chip, f in parts
                ]
            else:
                entry["file"] = self._relpath(name, None)
                entry[S.CHECKSUM] = parts[0][1].checksum
            tables[name] = entry
        meta = dict(self.meta)
        meta["format"] = S.FORMAT_NAME
        meta["version"] = S.FORMAT_VERSION
        meta["time_unit"] = S.TIME_UNIT
        meta["compression"] = self.compression or "none"
        if "span_ns" not in meta:
            lo, hi = self._span
            meta["span_ns"] = [0 if lo is None else lo, 0 if hi is None else hi]
        meta["tables"] = tables
        return meta

    def _move_into_place(self) -> None:
        install(self._tmp, self.path, self.overwrite)

    def abort(self) -> None:
        """Throw away everything written; the target path is left untouched."""
        for f in self._files.values():
            try:
                f.abort()
            except Exception:  # already failing; the directory goes anyway
                pass
        self._files.clear()
        self._hashing.shutdown(cancel_futures=True)
        self._io.shutdown()
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._closed = True


def write_trace(
    path: str | os.PathLike[str],
    tables: Mapping[str, TableData],
    meta: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Path:
    """Write a whole trace in one call (small traces, tests)."""
    with TraceWriter(path, meta, **kwargs) as w:
        for name, data in tables.items():
            w.write(name, data)
    return w.path
