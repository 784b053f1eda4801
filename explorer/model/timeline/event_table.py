"""One interval table in (track, start) order and its lanes (one per track), without whole-column copies.

Writers group rows by track with starts sorted, so a track is one contiguous run of rows:
its starts and durations are a numpy view of the memory-mapped Arrow chunk when the run
lies inside one record batch, and a copy of that run only when it spans batches (a
table-wide concatenation would copy the whole column: 1.6 GB of starts and durations for
a 100M-event trace before the first frame). Tables in another order (hand-written ones)
and the small `collectives` table (whose interval is arrive..end) keep whole sorted arrays.
The layout found here (runs, disjointness) is what the persisted index stores
(`index_cache`), so reopening a trace reads none of it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from explorer.model import columns
from explorer.model.table_chunks import ChunkedColumn, TrackRuns, batches, column_rows, take
from explorer.model.timeline.lod import Coverage
from simcore.errors import UserError


@dataclass(frozen=True)
class TrackInfo:
    track_id: int
    chip: int
    core: int
    kind: str
    name: str
    unit: str
    lcore: int = -1   # the logical NeuronCore the row belongs to (tracks.lcore), -1 when none

    @property
    def where(self) -> str:
        """'chip 0, core 3 (logical core 1)' -- or the chip alone for a chip-level row."""
        if self.core < 0:
            return f"chip {self.chip}" + (f", logical core {self.lcore}" if self.lcore >= 0 else "")
        return f"chip {self.chip}, core {self.core}" + (f" (logical core {self.lcore})" if self.lcore >= 0 else "")


@dataclass(frozen=True)
class TableLayout:
    """Where each track's rows are, in (track, start) order: what building a table's lanes needs."""

    run_track: np.ndarray  # int64 track id per run, runs in sorted order
    run_lo: np.ndarray  # int64 first sorted position of each run
    order: np.ndarray | None  # sorted position -> table row; None when the table is in that order

    @classmethod
    def of(cls, name: str, table: pa.Table) -> TableLayout:
        """Read `track_id` (and the starts, to check their order) batch by batch."""
        if name != "collectives" and table.num_rows:
            runs = TrackRuns.of(table)
            if runs.grouped and runs.starts_sorted(table):
                return cls(runs.track, runs.lo, None)
        track = columns.num(table, "track_id")
        start = columns.num(table, "arrive_ns" if name == "collectives" else "start_ns")
        order = None
        if len(track) > 1:
            same = track[1:] == track[:-1]
            if not bool((track[1:] >= track[:-1]).all()) or not bool((start[1:] >= start[:-1])[same].all()):
                order = np.lexsort((start, track))
                track = track[order]
        first = np.r_[0, np.flatnonzero(track[1:] != track[:-1]) + 1] if len(track) else np.zeros(0, np.int64)
        return cls(track[first].astype(np.int64), first.astype(np.int64), order)


class EventTable:
    """One interval table ordered by (track, start), with per-track bounds."""

    def __init__(self, name: str, table: pa.Table, layout: TableLayout | None = None, *, checked: bool = False) -> None:
        self.name = name
        self.table = table
        self.n = n = table.num_rows
        layout = layout or TableLayout.of(name, table)
        self.order = layout.order
        self._run_track, self._run_lo = layout.run_track, layout.run_lo
        run_hi = np.r_[self._run_lo[1:], n].astype(np.int64) if len(self._run_lo) else self._run_lo
        self.bounds: dict[int, tuple[int, int]] = {
            int(t): (int(a), int(b)) for t, a, b in zip(self._run_track, self._run_lo, run_hi)}
        # whole sorted arrays for the small collectives table and tables in another order
        self._whole: tuple[np.ndarray, np.ndarray] | None = None
        if name == "collectives" or self.order is not None:
            start = columns.num(table, "arrive_ns" if name == "collectives" else "start_ns")
            dur = (columns.num(table, "end_ns") - start) if name == "collectives" else columns.num(table, "dur_ns")
            if self.order is not None:
                start, dur = start[self.order], dur[self.order]
            self._whole = (np.ascontiguousarray(start, np.int64), np.ascontiguousarray(dur, np.int64))
            checked = checked or not bool((self._whole[1] < 0).any())
        if not checked and not self._durations_ok():
            raise UserError(f"table '{name}' has a negative duration; run `trnx validate` on the trace.")
        self._row_to_pos: np.ndarray | None = None
        self._vocab: dict[str, list[str] | None] = {}
        self._numeric: dict[str, np.ndarray] = {}
        self._chunked: dict[str, ChunkedColumn] = {}

    @property
    def layout(self) -> TableLayout:
        return TableLayout(self._run_track, self._run_lo, self.order)

    def _durations_ok(self) -> bool:
        if self._whole is not None:
            return not bool((self._whole[1] < 0).any())
        return all(not bool((c["dur_ns"] < 0).any()) for _, c, _ in batches(self.table, ("dur_ns",)))

    def lane_arrays(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(start, dur) of sorted positions [lo, hi): views of the trace when they lie in one chunk."""
        if self._whole is not None:
            return self._whole[0][lo:hi], self._whole[1][lo:hi]
        return column_rows(self.table, "start_ns", lo, hi), column_rows(self.table, "dur_ns", lo, hi)

    # -- positions <-> rows ------------------------------------------------------
    def row(self, pos: int) -> int:
        return int(pos if self.order is None else self.order[pos])

    def rows(self, pos: np.ndarray) -> np.ndarray:
        """Table rows of sorted positions."""
        return pos if self.order is None else self.order[pos]

    def pos(self, row: int) -> int:
        if self.order is None:
            return int(row)
        if self._row_to_pos is None:
            inv = np.empty(self.n, dtype=np.int64)
            inv[self.order] = np.arange(self.n)
            self._row_to_pos = inv
        return int(self._row_to_pos[row])

    def column(self, name: str) -> np.ndarray:
        """A numeric column in table-row order (cached: a copy when chunked; for small tables)."""
        got = self._numeric.get(name)
        if got is None:
            got = self._numeric[name] = columns.num(self.table, name)
        return got

    def chunked(self, name: str) -> ChunkedColumn:
        """A column read in place at any rows (dictionary columns give codes)."""
        got = self._chunked.get(name)
        if got is None:
            got = self._chunked[name] = ChunkedColumn(self.table, name)
        return got

    def sorted_column(self, name: str) -> np.ndarray:
        """A numeric column in (track, start) order (a whole copy: small tables only)."""
        values = self.column(name)
        return values if self.order is None else values[self.order]

    def sorted_rows(self, name: str, lo: int, hi: int) -> np.ndarray:
        """A numeric column at sorted positions [lo, hi): read from the chunks, no whole-column copy."""
        if self.order is None:
            return column_rows(self.table, name, lo, hi)
        return take(self.table, name, self.order[lo:hi])

    def sorted_mapped(self, name: str, fn: Callable[[np.ndarray], np.ndarray], dtype: Any = np.int32) -> np.ndarray:
        """`fn` of a numeric column, in (track, start) order, computed batch by batch: no whole-column
        copy when the table is in that order already (what writers produce)."""
        if self.order is not None:
            return np.asarray(fn(self.sorted_column(name)), dtype=dtype)
        out = np.empty(self.n, dtype)
        for offset, c, _ in batches(self.table, (name,)):
            out[offset:offset + len(c[name])] = fn(c[name])
        return out

    def sorted_codes(self, name: str) -> tuple[np.ndarray, list[str]]:
        """A dictionary column's codes in (track, start) order, and its vocabulary (a whole copy)."""
        codes, vocab = columns.codes(self.table, name)
        if self.order is not None:
            codes = codes[self.order]
        return codes, vocab

    def vocabulary(self, name: str) -> list[str] | None:
        """The one vocabulary every chunk's codes of a dictionary column index (the writer's growing
        one; the reader gives every chunk the longest), or None when chunks disagree."""
        vocab = self._vocab.get(name, False)
        if vocab is False:
            col = self.table.column(name)
            chunks = [c for c in col.chunks]
            longest = max((c.dictionary for c in chunks), key=len) if chunks else pa.array([], pa.string())
            ok = all(longest[: len(c.dictionary)].equals(c.dictionary) for c in chunks)
            vocab = self._vocab[name] = [str(v) for v in longest.to_pylist()] if ok else None
        return vocab

    def sorted_code_rows(self, name: str, lo: int, hi: int) -> tuple[np.ndarray, list[str]]:
        """`sorted_codes(name)` at sorted positions [lo, hi), reading only those rows when every
        chunk's dictionary is a prefix of the longest (as the trace reader leaves them)."""
        vocab = self.vocabulary(name)
        if vocab is None:
            codes, full = self.sorted_codes(name)
            return codes[lo:hi], full
        return self.sorted_rows(name, lo, hi).astype(np.int32, copy=False), vocab

    def value(self, column: str, row: int) -> Any:
        return self.table.column(column)[row].as_py()

    def start_at(self, pos: int) -> int:
        if self._whole is not None:
            return int(self._whole[0][pos])
        return int(self.chunked("start_ns")[self.row(pos)])

    def end(self, pos: int) -> int:
        if self._whole is not None:
            return int(self._whole[0][pos] + self._whole[1][pos])
        return self.start_at(pos) + int(self.chunked("dur_ns")[self.row(pos)])

    def track_at(self, pos: int) -> int:
        """The track of the event at a sorted position."""
        return int(self._run_track[int(np.searchsorted(self._run_lo, pos, side="right")) - 1])


@dataclass
class Lane:
    """One interval track: its slice [lo, hi) of an `EventTable`, its intervals and their coverage."""

    track: TrackInfo
    events: EventTable
    lo: int
    hi: int
    disjoint: bool
    coverage: Coverage
    start: np.ndarray  # the lane's starts (a view of the trace or of its index, or a copy)
    dur: np.ndarray
    reach: np.ndarray | None = None  # running max of ends, only for overlapping lanes

    @property
    def count(self) -> int:
        return self.hi - self.lo

    def visible(self, t0: float, t1: float) -> tuple[int, int]:
        """Lane-relative [a, b) of the intervals that overlap [t0, t1)."""
        start = self.start
        if len(start) == 0:
            return 0, 0
        b = int(np.searchsorted(start, int(np.ceil(t1)), side="left"))
        if self.reach is not None:
            a = int(np.searchsorted(self.reach, int(np.floor(t0)), side="right"))
        else:
            a = max(int(np.searchsorted(start, int(np.floor(t0)), side="right")) - 1, 0)
            if a < len(start) and start[a] + self.dur[a] <= t0 and a < b:
                a += 1
        return a, max(a, b)

    def at(self, t: float, slack_ns: float = 0.0) -> int | None:
        """Lane-relative index of the interval under time t (or within slack_ns of it)."""
        start, dur = self.start, self.dur
        if len(start) == 0:
            return None
        j = int(np.searchsorted(start, int(np.floor(t)), side="right")) - 1
        best, best_d = None, slack_ns
        for k in range(max(j - (8 if self.reach is not None else 0), 0), min(j + 2, len(start))):
            s, e = float(start[k]), float(start[k] + dur[k])
            d = 0.0 if s <= t < e or (s == e == t) else min(abs(t - s), abs(t - e))
            if d < best_d or (d == 0.0 and best_d == 0.0 and best is None):
                best, best_d = k, d
            elif d == 0.0 and best is not None and best_d == 0.0 and dur[k] < dur[best]:
                best = k  # the innermost of overlapping intervals
        return best
