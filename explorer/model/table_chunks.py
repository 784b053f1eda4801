"""Reading a trace table batch by batch, track by track or row by row, without whole-column copies.

Trace tables are memory-mapped Arrow tables made of record batches (a writer streaming a
10M-row table leaves ~100). A numpy view of one chunk is free; `to_numpy()` of a
many-chunk column concatenates it, i.e. allocates the whole column (80 MB per int64
column at 10M rows), and an analysis that does that for a few columns at once peaks at
hundreds of MB of temporaries. So analyses stream instead:

- `batches(table, columns)`: per record batch, numpy views of some columns;
- `TrackRuns.of(table, tracks, name)`: where each track's rows are (one run per track in
  a table grouped by track, as writers produce), found batch by batch;
- `TrackReader`: one track's rows of a column at a time (a view when the track lies in one
  chunk, a copy of just its rows otherwise);
- `take(table, column, rows)`, `ChunkedColumn`, `take_rows(table, rows)`: the values at
  some rows, gathered chunk by chunk;
- `pick(table, columns, track_mask)`: the rows of some tracks, picked batch by batch.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from explorer.model.tracks import Tracks


def array_numpy(arr: pa.Array) -> np.ndarray:
    """One chunk as numpy: a zero-copy view of a numeric array without nulls; a dictionary
    array gives its codes."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.indices
    return arr.to_numpy(zero_copy_only=False)


def _empty(col: pa.ChunkedArray) -> np.ndarray:
    t = col.type.index_type if pa.types.is_dictionary(col.type) else col.type
    return np.zeros(0, dtype=t.to_pandas_dtype())


def batches(table: pa.Table, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, np.ndarray], pa.RecordBatch]]:
    """(first row, {column: numpy view}, the batch) for each record batch of `columns`, in row order.

    Dictionary columns give their codes; `batch.column(name).dictionary` is the vocabulary.
    """
    offset = 0
    for batch in table.select(list(columns)).to_batches():
        if batch.num_rows:
            yield offset, {name: array_numpy(batch.column(i)) for i, name in enumerate(columns)}, batch
        offset += batch.num_rows


def column_rows(table: pa.Table, name: str, lo: int, hi: int) -> np.ndarray:
    """Rows [lo, hi) of a column: a view when they lie in one chunk, else a copy of those rows only."""
    col = table.column(name)
    chunks = [c for c in col.slice(lo, hi - lo).chunks if len(c)]
    if len(chunks) == 1:
        return array_numpy(chunks[0])
    if not chunks:
        return _empty(col)
    return np.concatenate([array_numpy(c) for c in chunks])


def whole_column(table: pa.Table, name: str) -> np.ndarray:
    """The whole column as one array (a copy when it has several chunks): for small tables
    and the fallbacks of ungrouped input only."""
    col = table.column(name)
    if col.num_chunks == 1:
        return array_numpy(col.chunk(0))
    if col.num_chunks == 0:
        return _empty(col)
    return np.concatenate([array_numpy(c) for c in col.chunks])


def chunk_offsets(col: pa.ChunkedArray) -> np.ndarray:
    """First row of each chunk, and the row count at the end (len = chunks + 1)."""
    return np.r_[0, np.cumsum([len(c) for c in col.chunks], dtype=np.int64)].astype(np.int64)


class ChunkedColumn:
    """A column's chunks as numpy views, indexed by row (an int or an array of rows) without
    concatenating them: what walks that read a row at a time (dependency chains) need."""

    def __init__(self, table: pa.Table, name: str) -> None:
        col = table.column(name)
        self.arrow = col
        self.chunks = [array_numpy(c) for c in col.chunks if len(c)]
        self.offsets = np.r_[0, np.cumsum([len(c) for c in self.chunks], dtype=np.int64)].astype(np.int64)
        self._starts = self.offsets[:-1].tolist()
        self.dtype = self.chunks[0].dtype if self.chunks else _empty(col).dtype

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, rows):
        if type(rows) is int or isinstance(rows, np.integer):  # one row (a walk): no array work
            i = bisect_right(self._starts, rows) - 1
            return self.chunks[i][rows - self._starts[i]]
        rows = np.asarray(rows, dtype=np.int64)
        if len(self.chunks) == 1:
            return self.chunks[0][rows]
        if not self.chunks or len(rows) == 0:
            return np.zeros(0, self.dtype)[rows]
        if bool((rows[1:] >= rows[:-1]).all()):  # ascending rows: each chunk's are one stretch, no sort
            c = bisect_right(self._starts, int(rows[0])) - 1
            if 0 <= c and int(rows[-1]) < self.offsets[c + 1]:  # all in one chunk (a track's rows, say)
                return self.chunks[c][rows - self._starts[c]]
            out = np.empty(len(rows), dtype=self.dtype)
            bounds = np.searchsorted(rows, self.offsets)
            for c in np.flatnonzero(np.diff(bounds)).tolist():
                a, b = int(bounds[c]), int(bounds[c + 1])
                out[a:b] = self.chunks[c][rows[a:b] - self.offsets[c]]
            return out
        out = np.empty(len(rows), dtype=self.dtype)
        which = np.searchsorted(self.offsets, rows, side="right") - 1
        # a stable sort of small integers is a radix sort (linear): chunk numbers fit 16 bits
        order = np.argsort(which.astype(np.int16) if len(self.chunks) < 2**15 else which, kind="stable")
        bounds = np.searchsorted(which[order], np.arange(len(self.chunks) + 1))
        for c in np.flatnonzero(np.diff(bounds)).tolist():
            sel = order[bounds[c]:bounds[c + 1]]
            out[sel] = self.chunks[c][rows[sel] - self.offsets[c]]
        return out

    def value(self, row: int):
        """The Python value at a row (a dictionary column's string)."""
        return self.arrow[int(row)].as_py()


def take(table: pa.Table, name: str, rows: np.ndarray) -> np.ndarray:
    """A column's values at `rows` (0 <= row < num_rows, any order), gathered chunk by chunk.

    Dictionary columns give codes. What `columns.num(table, name)[rows]` gives, without
    building the whole column first.
    """
    return ChunkedColumn(table, name)[np.asarray(rows, dtype=np.int64)]


def take_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """The table's rows at `rows` (in that order), taken chunk by chunk: `table.take(rows)`
    without Arrow concatenating each many-chunk column first (which copies it whole)."""
    rows = np.asarray(rows, dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    columns = []
    for col in table.columns:
        offsets = chunk_offsets(col)
        bounds = np.searchsorted(ordered, offsets)
        parts = [chunk.take(pa.array(ordered[bounds[i]:bounds[i + 1]] - offsets[i]))
                 for i, chunk in enumerate(col.chunks) if bounds[i + 1] > bounds[i]]
        columns.append(pa.chunked_array(parts, type=col.type))
    out = pa.Table.from_arrays(columns, schema=table.schema)
    if len(rows) > 1 and not bool((order[1:] > order[:-1]).all()):
        inverse = np.empty(len(rows), np.int64)
        inverse[order] = np.arange(len(rows))
        out = out.combine_chunks().take(pa.array(inverse))
    return out


def pick(table: pa.Table, columns: tuple[str, ...], track_mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """`columns` at the rows whose `track_id` is in `track_mask` (bool per track id; ids outside
    it never match), in row order, batch by batch: only the picked rows are copied."""
    picked: list[tuple[np.ndarray, ...]] = []
    for _, c, _ in batches(table, ("track_id", *columns)):
        t = c["track_id"]
        inside = (t >= 0) & (t < len(track_mask))
        m = np.zeros(len(t), bool)
        m[inside] = track_mask[t[inside]]
        sel = np.flatnonzero(m)
        if len(sel):
            picked.append(tuple(c[name][sel] for name in columns))
    if not picked:
        return tuple(_empty(table.column(name)) for name in columns)
    return tuple(np.concatenate([p[i] for p in picked]) for i in range(len(columns)))


@dataclass(frozen=True)
class TrackRuns:
    """The runs of equal `track_id` of a table, in row order, and its rows per track.

    A table grouped by track (what writers produce) has one run per track. Building it
    reads only the `track_id` column, batch by batch, and checks every id against the
    tracks table (the one-sentence `UserError` of `Tracks.check`).
    """

    track: np.ndarray  # int64, track id of each run
    lo: np.ndarray  # int64, first row of each run
    hi: np.ndarray  # int64, one past its last row
    rows_per_track: np.ndarray  # int64 per track id (len(tracks); empty when built without tracks)

    @classmethod
    def of(cls, table: pa.Table, tracks: Tracks | None = None, name: str = "") -> TrackRuns:
        """The runs of `table`; with `tracks`, also its rows per track, every id checked."""
        n = len(tracks) if tracks is not None else 0
        counts = np.zeros(n, np.int64)
        lo_id, hi_id = None, None
        run_track: list[np.ndarray] = []
        run_lo: list[np.ndarray] = []
        prev = None
        for offset, cols, _ in batches(table, ("track_id",)):
            a = cols["track_id"]
            amin, amax = int(a.min()), int(a.max())
            lo_id = amin if lo_id is None else min(lo_id, amin)
            hi_id = amax if hi_id is None else max(hi_id, amax)
            one_track = amin == amax  # the simulator writes each track as one batch
            if tracks is not None and 0 <= lo_id and hi_id < n:  # counts matter while every id is valid
                if one_track:
                    counts[amin] += len(a)
                else:
                    counts += np.bincount(a, minlength=n)
            starts = np.zeros(0, np.int64) if one_track else np.flatnonzero(a[1:] != a[:-1]) + 1
            if prev is None or int(a[0]) != prev:
                starts = np.r_[0, starts]
            run_track.append(a[starts].astype(np.int64))
            run_lo.append(starts.astype(np.int64) + offset)
            prev = int(a[-1])
        if tracks is not None and lo_id is not None:
            tracks.check_bounds(name, lo_id, hi_id, counts)
        track = np.concatenate(run_track) if run_track else np.zeros(0, np.int64)
        lo = np.concatenate(run_lo) if run_lo else np.zeros(0, np.int64)
        hi = np.r_[lo[1:], table.num_rows].astype(np.int64) if len(lo) else lo.copy()
        return cls(track, lo, hi, counts)

    @property
    def grouped(self) -> bool:
        """Every track's rows are one contiguous run."""
        return len(np.unique(self.track)) == len(self.track)

    def starts_sorted(self, table: pa.Table) -> bool:
        """Within each run, `start_ns` never decreases (read batch by batch)."""
        prev_track, prev_start = None, None
        for _, cols, _ in batches(table, ("track_id", "start_ns")):
            t, s = cols["track_id"], cols["start_ns"]
            if prev_track is not None and int(t[0]) == prev_track and int(s[0]) < prev_start:
                return False
            if ((s[1:] < s[:-1]) & (t[1:] == t[:-1])).any():
                return False
            prev_track, prev_start = int(t[-1]), int(s[-1])
        return True


class TrackReader:
    """One track's rows of a table at a time, in table order.

    Grouped tables are read as slices of their chunks (views when a track lies in one
    chunk); an ungrouped table (a track in several runs, e.g. hand-written) goes through
    one stable sort by track over whole columns, which it then caches.
    """

    def __init__(self, table: pa.Table, runs: TrackRuns) -> None:
        self.table = table
        self.runs = runs
        self._order: np.ndarray | None = None
        self._columns: dict[str, np.ndarray] = {}
        if runs.grouped:
            self.tracks = runs.track
            self._lo, self._hi = runs.lo, runs.hi
        else:
            tid = whole_column(table, "track_id")
            self._order = np.argsort(tid, kind="stable")
            present = np.flatnonzero(runs.rows_per_track)
            first_row = np.full(len(runs.rows_per_track), table.num_rows, np.int64)
            np.minimum.at(first_row, runs.track, runs.lo)
            self.tracks = present[np.argsort(first_row[present], kind="stable")].astype(np.int64)
            sorted_tid = tid[self._order]
            self._lo = np.searchsorted(sorted_tid, self.tracks, side="left")
            self._hi = np.searchsorted(sorted_tid, self.tracks, side="right")
        self._where = {int(t): i for i, t in enumerate(self.tracks.tolist())}

    def read(self, track: int, column: str) -> np.ndarray:
        """`column` at the track's rows (codes for a dictionary column)."""
        i = self._where[track]
        lo, hi = int(self._lo[i]), int(self._hi[i])
        if self._order is None:
            return column_rows(self.table, column, lo, hi)
        values = self._columns.get(column)
        if values is None:
            values = self._columns[column] = whole_column(self.table, column)
        return values[self._order[lo:hi]]
