"""Memory-mapping, validating reader for trace format v1.

Tables are memory-mapped (zero-copy when uncompressed), so opening a multi-GB trace
costs little more than its validation. Every problem is reported as one sentence
naming the file and what is wrong with it (`TraceFormatError`).
"""

from __future__ import annotations

import errno
import json
import mmap
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from simcore.errors import LONG_INTEGER, TraceFormatError, out_of_memory
from simcore.trace import schema as S
from simcore.trace import semantics
from simcore.trace import validate as V
from simcore.trace.checksum import BLOCK, algorithm_of, file_checksum
from simcore.trace.checksum import parse as parse_checksum

if TYPE_CHECKING:  # (pandas loads only where a table becomes a DataFrame: ~0.3 s a capture need not wait for)
    import pandas as pd


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


def read_meta(path: Path) -> dict[str, Any]:
    """Load and check meta.json: the format name, the version and the table list."""
    if not path.exists():
        raise TraceFormatError(f"{path} does not exist.")
    if not path.is_dir():
        raise TraceFormatError(f"{path} is a file, not a trace directory (a trace is a NAME.trnx directory).")
    meta_path = path / S.META_FILE
    if not meta_path.is_file():
        raise TraceFormatError(f"{path} is not a trace: it has no {S.META_FILE}.")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceFormatError(f"{meta_path} is not valid JSON ({_first_line(exc)}).") from None
    except RecursionError:
        raise TraceFormatError(f"{meta_path} nests JSON too deeply to be a trace's meta.json.") from None
    except ValueError:  # an integer literal longer than Python converts (4,300 digits)
        raise TraceFormatError(f"{meta_path} {LONG_INTEGER}") from None
    if not isinstance(meta, dict):
        raise TraceFormatError(f"{meta_path} must hold a JSON object.")
    if meta.get("format") != S.FORMAT_NAME:
        raise TraceFormatError(
            f"{path} is not a trnx trace ({S.META_FILE} says format {meta.get('format')!r}, expected {S.FORMAT_NAME!r})."
        )
    version = S.parse_version(meta.get("version"))
    if version is None:
        raise TraceFormatError(f"{meta_path} has no valid version (found {meta.get('version')!r}, expected like '1.0').")
    if version[0] > S.FORMAT_MAJOR:
        raise TraceFormatError(
            f"{path} uses trace format {meta['version']}, newer than this reader ({S.FORMAT_MAJOR}.x); "
            "upgrade trn3-explorer to open it."
        )
    if version[0] < S.FORMAT_MAJOR:
        raise TraceFormatError(f"{path} uses trace format {meta['version']}, which this reader no longer supports.")
    tables = meta.get("tables")
    if not isinstance(tables, dict):
        raise TraceFormatError(f"{meta_path} has no 'tables' object.")
    for name, spec in S.TABLES.items():
        entry = tables.get(name)
        if entry is None and not spec.required:
            continue  # a table a later minor version added: absent from an older trace
        if not isinstance(entry, dict) or not ("file" in entry or "partitions" in entry):
            raise TraceFormatError(f"{path} is missing the required table '{name}'.")
    for name in S.TABLES:
        _table_parts(path, meta, name)  # file names inside the trace, row counts well formed
    span = meta.get("span_ns")
    if not (isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span)):
        raise TraceFormatError(f"{meta_path} has no valid span_ns (expected [start, end] in ns).")
    semantics.check_span(path, span)
    return meta


def _table_parts(path: Path, meta: dict[str, Any], name: str) -> list[tuple[int | None, Path, int | None]]:
    """(chip, file, rows from meta) for each file of a table (none for an absent optional table)."""
    entry = meta["tables"].get(name)
    if entry is None:
        return []
    if "partitions" in entry:
        parts = entry["partitions"]
        if not isinstance(parts, list):
            raise TraceFormatError(f"{path}/{S.META_FILE}: table '{name}' has a malformed partition list.")
        out = []
        for p in parts:
            if not (isinstance(p, dict) and isinstance(p.get("file"), str) and isinstance(p.get("chip"), int)):
                raise TraceFormatError(f"{path}/{S.META_FILE}: table '{name}' has a malformed partition entry.")
            out.append((p["chip"], path / _file_name(path, name, p["file"]), _rows(path, name, p.get("rows"))))
        return out
    if not isinstance(entry["file"], str):
        raise TraceFormatError(f"{path}/{S.META_FILE}: table '{name}' has a malformed file name.")
    return [(None, path / _file_name(path, name, entry["file"]), _rows(path, name, entry.get("rows")))]


def _file_name(path: Path, name: str, file: str) -> str:
    """A table file name from meta.json: only a plain relative name inside the trace (a trace
    must not make a command read another trace's table, or any file on the machine)."""
    if not S.plain_relative(file):
        raise TraceFormatError(f"{path}/{S.META_FILE}: table '{name}' names the file {file[:80]!r}, which is not a "
                               "plain relative name inside the trace directory.")
    return file


def _check_inside(trace_dir: Path, file: Path) -> None:
    """No part of a table's path inside the trace is a symbolic link (it could lead anywhere)."""
    here = trace_dir
    for part in file.relative_to(trace_dir).parts:
        here = here / part
        if here.is_symlink():
            raise TraceFormatError(f"{here} is a symbolic link; a trace's table files must be plain files inside "
                                   "its directory.")


def _checksums(path: Path, meta: dict[str, Any]) -> dict[Path, str]:
    """The checksum meta.json records for each table file (none before format 1.3)."""
    out: dict[Path, str] = {}
    for name in S.TABLES:
        entry = meta["tables"].get(name)
        if entry is None:  # an optional table this (older) trace lacks
            continue
        entries = entry["partitions"] if "partitions" in entry else [entry]
        for e in entries:
            value = e.get(S.CHECKSUM)
            if value is None:
                continue
            try:
                known = parse_checksum(value)
            except ValueError:
                raise TraceFormatError(f"{path}/{S.META_FILE}: table '{name}' has a malformed checksum "
                                       f"({value!r:.40}).") from None
            if known is not None:  # (another algorithm, of a later minor version: not checked here)
                out[path / e["file"]] = known
    return out


def _threads() -> int:
    """Threads hashing a trace: the machine's cores, up to 8 (memory bandwidth ends it there)."""
    return max(1, min(8, os.cpu_count() or 1))


def _size(file: Path) -> int:
    try:
        return file.stat().st_size
    except OSError:
        return 0


def _rows(path: Path, name: str, value: Any) -> int | None:
    """A row count from meta.json: absent, or a non-negative integer."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise TraceFormatError(f"{path}/{S.META_FILE}: table '{name}' has a malformed row count ({value!r:.40}).")


def _check_magic(file: Path) -> None:
    try:
        size = file.stat().st_size
    except FileNotFoundError:
        raise TraceFormatError(f"{file} is missing.") from None
    if not file.is_file():
        raise TraceFormatError(f"{file} is not a table file (meta.json names a directory or device).")
    if size == 0:
        raise TraceFormatError(f"{file} is empty (0 bytes).")
    with open(file, "rb") as fh:
        head = fh.read(6)
        fh.seek(max(0, size - 6))
        tail = fh.read(6)
    if head != S.ARROW_MAGIC:
        raise TraceFormatError(f"{file} is not an Arrow IPC file (wrong magic bytes).")
    if tail != S.ARROW_MAGIC or size < 12:
        raise TraceFormatError(f"{file} is truncated (its Arrow footer is missing).")


def _check_buffers(table: pa.Table, codes: bool = True) -> None:
    """Catch damaged bytes that would crash a consumer later: buffer sizes (cheap), and per
    dictionary column codes within the dictionary and valid UTF-8 (~1 ms per 10M codes,
    where a full `validate(full=True)` costs ~17 ms; but reading the codes of a file not in the
    page cache costs the disk: ~1 s for a 28M-event trace). `codes=False`: the file passed
    these checks, unchanged since (`Trace.codes_checked`)."""
    table.validate()
    for col in table.columns:
        if not pa.types.is_dictionary(col.type):
            continue
        for chunk in col.chunks:
            chunk.dictionary.validate(full=True)
            if len(chunk) and codes:  # as unsigned, a negative code is huge: one max() checks both ends
                top = pc.max(chunk.indices.view(pa.uint32())).as_py()
                if top is not None and top >= len(chunk.dictionary):
                    raise ValueError("dictionary code out of range")


def _read_mapped(file: Path) -> pa.Table:
    """The IPC file's table over a read-only mapping of it, zero-copy.

    Reading the table reads the footer and each record batch's header: one page each, but a
    fault in a mapped file makes the kernel read the pages around it too (read_ahead_kb: 8 MiB
    on the disk the benches ran on), so mapping the tables of a 100M-event trace not in the page
    cache read 1.8 GB (8 MiB per record batch) in 1.6 s, before anything asked for a column. The
    mapping is marked random while the headers are read (1 MB and 0.02 s in all), then normal
    again for the scans that follow."""
    with open(file, "rb") as fh:
        try:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:  # no address space left for it: memory's sentence, not a damaged file's
            if exc.errno == errno.ENOMEM:
                raise MemoryError(f"cannot map {file}") from None
            raise
    advise = getattr(mapped, "madvise", None)
    if advise is not None and hasattr(mmap, "MADV_RANDOM"):
        advise(mmap.MADV_RANDOM)
    table = ipc.open_file(pa.BufferReader(pa.py_buffer(mapped))).read_all()
    if advise is not None and hasattr(mmap, "MADV_NORMAL"):
        advise(mmap.MADV_NORMAL)
    return table


def _read_file(file: Path, spec: S.TableSpec, expected_rows: int | None, trace_dir: Path | None = None,
               codes: bool = True) -> pa.Table:
    if trace_dir is not None:
        _check_inside(trace_dir, file)
    _check_magic(file)
    try:
        table = _read_mapped(file)
        table.schema.names  # noqa: B018 - corrupt field names raise here, not in a caller
        _check_buffers(table, codes)
    except (pa.ArrowException, OSError, UnicodeDecodeError, ValueError) as exc:
        if out_of_memory(exc):  # not the file's fault: say so (CLI and GUI give the memory sentence)
            raise
        raise TraceFormatError(f"{file} cannot be read: {_first_line(exc)}.") from None
    V.check_schema(file, spec, table.schema)
    if expected_rows is not None and expected_rows != table.num_rows:
        raise TraceFormatError(
            f"{file} has {table.num_rows} rows but meta.json says {expected_rows} (the trace is incomplete)."
        )
    return table


def _share_dictionaries(table: pa.Table) -> pa.Table:
    """Give every chunk of a dictionary column the longest dictionary.

    The writer keeps one vocabulary per table, so each partition's dictionary is a
    prefix of the longest: codes already agree, and swapping the dictionary is
    zero-copy. Consumers can then use `chunk.indices` as stable codes.
    """
    cols = []
    for i, field in enumerate(table.schema):
        col = table.column(i)
        if pa.types.is_dictionary(field.type) and col.num_chunks > 1:
            longest = max((c.dictionary for c in col.chunks), key=len)
            if all(longest[: len(c.dictionary)].equals(c.dictionary) for c in col.chunks):
                col = pa.chunked_array(
                    [pa.DictionaryArray.from_arrays(c.indices, longest) for c in col.chunks], field.type
                )
            else:  # written by some other tool: fall back to a real unification
                col = pa.chunked_array(pa.Table.from_arrays([col], ["x"]).unify_dictionaries().column(0).chunks)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=table.schema)


class Trace:
    """An open trace: its meta and its tables as memory-mapped `pyarrow.Table`s."""

    def __init__(self, path: Path, meta: dict[str, Any], *, checksums: bool = True) -> None:
        self.path = path
        self.meta = meta
        self.verify_on_read = checksums
        self._cache: dict[tuple[str, tuple[int, ...] | None], pa.Table] = {}
        self._files: dict[Path, pa.Table] = {}
        self._checksums = _checksums(path, meta)
        self._verified: set[Path] = set()
        self.codes_checked = False
        """Set by whoever knows every dictionary code in these very files is within its dictionary:
        they passed `validate` (a timeline index saved after it, whose stamp of the files still
        matches), or the codes were checked batch by batch as they were written. Reads then skip
        the codes' scan."""

    def __repr__(self) -> str:
        return f"Trace({str(self.path)!r}, span={self.duration_ns} ns)"

    # -- meta --------------------------------------------------------------------
    @property
    def version(self) -> str:
        return str(self.meta["version"])

    @property
    def hardware(self) -> dict[str, Any]:
        value = self.meta.get("hardware")
        return value if isinstance(value, dict) else {}  # a malformed entry reads as unknown

    @property
    def workload(self) -> dict[str, Any]:
        value = self.meta.get("workload")
        return value if isinstance(value, dict) else {}  # a malformed entry reads as unknown

    @property
    def span_ns(self) -> tuple[int, int]:
        lo, hi = self.meta["span_ns"]
        return int(lo), int(hi)

    @property
    def duration_ns(self) -> int:
        lo, hi = self.span_ns
        return hi - lo

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(self.meta["tables"])

    def has_table(self, name: str) -> bool:
        """Whether the trace has `name` (a table a later minor version added may be absent)."""
        return name in self.meta["tables"]

    def row_count(self, name: str) -> int:
        """Rows of a table, from meta.json (no read)."""
        return sum(int(rows or 0) for _, _, rows in _table_parts(self.path, self.meta, name))

    def partition_chips(self, name: str) -> list[int] | None:
        """The chips a partitioned table is split into; None if it is one file."""
        chips = [chip for chip, _, _ in _table_parts(self.path, self.meta, name)]
        return None if chips in ([None], []) else [int(c) for c in chips if c is not None]

    # -- tables ------------------------------------------------------------------
    def table(self, name: str, chips: list[int] | None = None) -> pa.Table:
        """The table `name`, memory-mapped; `chips` loads only those partitions.

        `chips` only narrows partitioned tables; an unpartitioned table is returned whole. A table the
        trace lacks (one a later minor version added, `has_table`) reads as empty.
        """
        spec = S.spec(name)
        key = (name, tuple(sorted(chips)) if chips is not None else None)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        parts = _table_parts(self.path, self.meta, name)
        if chips is not None and parts and parts[0][0] is not None:
            wanted = set(chips)
            parts = [p for p in parts if p[0] in wanted]
        tables = [self._file(f, spec, rows) for _, f, rows in parts]
        table = tables[0] if len(tables) == 1 else (
            _share_dictionaries(pa.concat_tables(tables)) if tables else spec.schema.empty_table()
        )
        self._cache[key] = table
        return table

    def _file(self, file: Path, spec: S.TableSpec, rows: int | None) -> pa.Table:
        table = self._files.get(file)
        if table is None:
            if self.verify_on_read:
                self._verify(file)
            try:
                table = self._files[file] = _read_file(file, spec, rows, self.path, codes=not self.codes_checked)
            except TraceFormatError:
                if file not in self._verified:  # (checksums off): a damaged file says so, not what broke
                    self._verify(file)
                raise
        return table

    # -- checksums (format 1.3) ----------------------------------------------------
    @property
    def has_checksums(self) -> bool:
        """Did the writer record a checksum of every table file (1.3 and later)?"""
        return bool(self._checksums) and len(self._checksums) == len(self.table_files())

    def _verify(self, file: Path, blocks: ThreadPoolExecutor | None = None) -> None:
        """Hash `file` once, before it is first read (its blocks on every core); a mismatch is a
        TraceFormatError."""
        want = self._checksums.get(file)
        if want is None or file in self._verified:
            return
        _check_inside(self.path, file)
        _check_magic(file)
        try:
            if blocks is None and _size(file) > BLOCK:
                with ThreadPoolExecutor(_threads()) as pool:
                    got = file_checksum(file, pool, algorithm_of(want))
            else:
                got = file_checksum(file, blocks, algorithm_of(want))
        except OSError as exc:
            raise TraceFormatError(f"{file} cannot be read: {exc.strerror or exc}.") from None
        if got != want:
            raise TraceFormatError(f"{file} is damaged: its bytes do not match the checksum meta.json recorded "
                                   "when it was written (restore it from a copy, or capture again).")
        self._verified.add(file)

    def verify_checksums(self, workers: int | None = None, stop: Callable[[], bool] | None = None) -> int:
        """Verify every table file's recorded checksum, files and their 64 MiB blocks in threads
        (hashing runs without the GIL); raises the first mismatch as a TraceFormatError. Returns
        the number of files verified. A trace without checksums (before 1.3) verifies nothing.
        `stop()` true ends early, before the next file (a window closing)."""
        files = [f for f in self.table_files() if f in self._checksums and f not in self._verified]
        files.sort(key=_size, reverse=True)  # biggest first, so the last to finish is a small one
        done = [0]
        n = workers or _threads()
        with ThreadPoolExecutor(n) as blocks, ThreadPoolExecutor(n) as pool:
            def one(f: Path) -> None:
                if stop is None or not stop():
                    self._verify(f, blocks)
                    done[0] += 1

            for _ in pool.map(one, files):
                pass
        return done[0]

    def to_pandas(self, name: str, chips: list[int] | None = None) -> pd.DataFrame:
        """The table as a DataFrame (dictionary columns become categoricals)."""
        return self.table(name, chips).to_pandas()

    def table_files(self) -> list[Path]:
        """Every table file of the trace (a partitioned table has one per chip), as meta.json names them."""
        return [f for name in S.TABLES for _, f, _ in _table_parts(self.path, self.meta, name)]

    def validate(self, *, rows_checked: tuple[str, ...] = (), stop: Callable[[], None] | None = None) -> None:
        """Check every table's checksum (when recorded), schema and data invariants, then the ids,
        times and counts across tables and meta.json (simcore.trace.semantics); raises
        TraceFormatError. `rows_checked`: tables whose every row already passed `check_rows_of`
        as they were written (a capture checks its big tables batch by batch while they are in
        memory), so only their schema is checked here, and their files are not kept mapped.
        `stop()` is called before each table file (it may raise to abandon the validation)."""
        if self.verify_on_read:
            self.verify_checksums()
        for name, spec in S.TABLES.items():
            for _, f, rows in _table_parts(self.path, self.meta, name):
                if stop is not None:
                    stop()
                mapped = f in self._files
                table = self._file(f, spec, rows)
                if name not in rows_checked:
                    V.check_data(f, spec, table)
                elif not mapped:  # nothing below reads it: let its mapping go, so the trace's big files are
                    del self._files[f]  # not all mapped at once (a capture's address space under a limit)
                del table  # (before the next file is mapped)
        semantics.check_trace(self.path, self.meta, self.table, rows_checked=rows_checked)

    @cached_property
    def tracks(self) -> pa.Table:
        return self.table("tracks")

    @property
    def instructions(self) -> pa.Table:
        return self.table("instructions")

    @property
    def dma(self) -> pa.Table:
        return self.table("dma")

    @property
    def kernels(self) -> pa.Table:
        return self.table("kernels")

    @property
    def ops(self) -> pa.Table:
        return self.table("ops")

    @property
    def collectives(self) -> pa.Table:
        return self.table("collectives")

    @property
    def counters(self) -> pa.Table:
        return self.table("counters")

    @property
    def flows(self) -> pa.Table:
        return self.table("flows")


def open_trace(path: str | os.PathLike[str], *, validate: bool = True, checksums: bool = True) -> Trace:
    """Open a `NAME.trnx` trace directory.

    With `validate=True` (the default) every table is checked now: checksums, magic,
    version, tables, columns and types, non-negative durations and sorted starts per track.
    With `validate=False` only meta.json is checked and tables are checked as they
    are first read (checksum and schema). `checksums=False` skips the checksums (the GUI
    verifies them off its thread: `Trace.verify_checksums`).
    """
    p = Path(path)
    trace = Trace(p, read_meta(p), checksums=checksums)
    if validate:
        trace.validate()
    return trace
