"""Find an event (an instruction or a DMA transfer) by its id, in O(1) or O(log n).

`instructions.id` and `dma.id` share one id space and `flows` refers to it; the
dependency view, the operator tree and recommendations all need "which row is
event 123", so the id index is built once per trace and shared.

Writers number events 0, 1, 2, ... across both tables, but store rows grouped by
track, so ids are dense yet unsorted. A dense id space gets a direct table
(`_DenseIds`: 5 bytes per id, built by one scatter, each look-up one gather): a
rule that looks up the 43M ids of 21.5M flows does it in linear time, where sorting
the ids and binary-searching each one cost seconds. Sparse or repeated ids fall back
to the sorted index (`_SortedIds`).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from simcore.errors import UserError
from simcore.trace import Trace

INSTRUCTION, DMA = 0, 1
TABLE_NAMES = ("instructions", "dma")


@dataclass(frozen=True)
class Event:
    """One event, with the ids that link it back into the trace."""

    id: int
    table: str  # "instructions" or "dma"
    row: int
    track_id: int
    start_ns: int
    dur_ns: int
    name: str  # opcode, or "DMA hbm->sbuf"
    kernel_id: int
    flops: int
    bytes: int
    dtype: str

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns

    @property
    def node(self) -> str:
        return f"{'instruction' if self.table == 'instructions' else 'dma'}:{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "end_ns": self.end_ns, "node": self.node}


class _SortedIds:
    """One table's ids, searchable: the memory-mapped chunks themselves when the table is in id
    order (what writers produce; no copy at all), else a sorted copy and the sorting rows."""

    def __init__(self, table: pa.Table) -> None:
        col = table.column("id")
        chunks = [c.to_numpy(zero_copy_only=False) for c in col.chunks if len(c)]
        self.n = sum(len(c) for c in chunks)
        in_order = all(bool((c[1:] >= c[:-1]).all()) for c in chunks) and all(
            int(b[0]) >= int(a[-1]) for a, b in zip(chunks, chunks[1:]))
        self.order: np.ndarray | None = None
        if not in_order:
            ids = np.concatenate(chunks)
            self.order = np.argsort(ids, kind="stable")
            chunks = [ids[self.order]]
        self.chunks = chunks
        self.offsets = np.r_[0, np.cumsum([len(c) for c in chunks], dtype=np.int64)].astype(np.int64)
        self.lasts = np.array([int(c[-1]) for c in chunks], dtype=np.int64)
        self._lasts, self._offsets = self.lasts.tolist(), self.offsets.tolist()

    def find_one(self, x: int) -> int:
        """The first row holding id `x`, -1 if none (`find` for one id, without array work)."""
        c = bisect_left(self._lasts, x)
        if c == len(self.chunks):
            return -1
        ids = self.chunks[c]
        p = int(ids.searchsorted(x))
        if p == len(ids) or ids[p] != x:
            return -1
        return p + self._offsets[c] if self.order is None else int(self.order[p])

    def find(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, row) per id: the first row holding it (the smallest such row)."""
        if len(self.chunks) == 1:  # one chunk (or a sorted copy): a plain binary search
            ids = self.chunks[0]
            p = np.minimum(np.searchsorted(ids, q), len(ids) - 1)
            return ids[p] == q, (p if self.order is None else self.order[p])
        found = np.zeros(len(q), bool)
        pos = np.zeros(len(q), np.int64)
        if not self.n or not len(q):
            return found, pos
        # the first occurrence of an id lies in the first chunk whose last id is >= it
        which = np.searchsorted(self.lasts, q, side="left")
        if len(q) == 1:  # a walk's one id at a time: no grouping by chunk
            c = int(which[0])
            if c < len(self.chunks):
                ids = self.chunks[c]
                p = min(int(np.searchsorted(ids, q[0])), len(ids) - 1)
                found[0] = ids[p] == q[0]
                pos[0] = p + self.offsets[c]
            return found, pos
        by_chunk = np.argsort(which, kind="stable")
        bounds = np.searchsorted(which[by_chunk], np.arange(len(self.chunks) + 1))
        for c in np.flatnonzero(np.diff(bounds)).tolist():
            sel = by_chunk[bounds[c]:bounds[c + 1]]
            ids = self.chunks[c]
            p = np.minimum(np.searchsorted(ids, q[sel]), len(ids) - 1)
            found[sel] = ids[p] == q[sel]
            pos[sel] = p + self.offsets[c]
        row = pos if self.order is None else self.order[pos]
        return found, row


DENSE_SLOTS_PER_EVENT = 4  # a direct table when the id range is at most this many times the event count


class _DenseIds:
    """id -> (table, row) as two arrays indexed by `id - lo`: table code (int8) and row (int32, or
    int64 past 2**31 rows), both -1 for an id no event has. Built only when every id is unique."""

    def __init__(self, lo: int, table: np.ndarray, row: np.ndarray) -> None:
        self.lo, self.table, self.row = lo, table, row

    @classmethod
    def build(cls, tables: list[pa.Table]) -> _DenseIds | None:
        """The direct table of every table's `id` chunks, or None when ids are sparse, negative
        or repeated (then the first row holding an id is needed: the sorted index's job)."""
        chunks = [[c.to_numpy(zero_copy_only=False) for c in t.column("id").chunks if len(c)] for t in tables]
        n = sum(len(c) for cs in chunks for c in cs)
        if not n:
            return None
        lo = min(int(c.min()) for cs in chunks for c in cs)
        hi = max(int(c.max()) for cs in chunks for c in cs)
        size = hi - lo + 1
        if lo < 0 or size > DENSE_SLOTS_PER_EVENT * n:
            return None
        table = np.full(size, -1, np.int8)
        row = np.full(size, -1, np.int32 if max(t.num_rows for t in tables) < 2**31 else np.int64)
        for code, cs in enumerate(chunks):
            offset = 0
            for ids in cs:
                slot = ids - lo if lo else ids
                table[slot] = code
                row[slot] = np.arange(offset, offset + len(ids), dtype=row.dtype)
                offset += len(ids)
        if int(np.count_nonzero(table >= 0)) != n:  # a repeated id: some slot was written twice
            return None
        return cls(lo, table, row)

    def locate(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(table code, row) per id, as int8 and int32 (int64 for huge tables): two gathers."""
        slot = q - self.lo if self.lo else q
        if len(q) and int(slot.min()) >= 0 and int(slot.max()) < len(self.table):
            return self.table[slot], self.row[slot]
        inside = (slot >= 0) & (slot < len(self.table))
        s = np.where(inside, slot, 0)
        return np.where(inside, self.table[s], -1).astype(np.int8), np.where(inside, self.row[s], -1)


class EventIndex:
    """Every instruction's and DMA transfer's id, with its table and row."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        tables = [trace.table(name) for name in TABLE_NAMES]
        self._dense = _DenseIds.build(tables)
        self._ids = [] if self._dense is not None else [_SortedIds(t) for t in tables]
        self._n = sum(t.num_rows for t in tables)

    def __len__(self) -> int:
        return self._n

    def direct_table(self) -> tuple[int, np.ndarray, np.ndarray] | None:
        """(lowest id, table code per id - lowest, row per id - lowest) when ids are dense and unique
        (-1 for ids no event has), for compiled passes that look ids up themselves; else None."""
        d = self._dense
        return None if d is None else (d.lo, d.table, d.row)

    def locate(self, event_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(table code, row) per id; table -1 where the id is not an event of this trace."""
        q = np.asarray(event_ids, dtype=np.int64)
        if self._dense is not None:
            return self._dense.locate(q)
        table = np.full(len(q), -1, np.int64)
        row = np.full(len(q), -1, np.int64)
        if len(q) == 1:  # one id (a dependency walk's step)
            for code, ids in enumerate(self._ids):
                r = ids.find_one(int(q[0]))
                if r >= 0:
                    table[0], row[0] = code, r
                    break
            return table, row
        for code, ids in enumerate(self._ids):
            if not ids.n:
                continue
            open_ = None if code == 0 else np.flatnonzero(table < 0)  # ids not found in an earlier table
            found, r = ids.find(q if open_ is None else q[open_])
            at = np.flatnonzero(found) if open_ is None else open_[found]
            table[at] = code
            row[at] = r[found]
        return table, row

    def event(self, event_id: int) -> Event:
        """The event with this id; an unknown id raises a one-sentence UserError."""
        table, row = self.locate(np.array([event_id]))
        if table[0] < 0:
            raise UserError(f"event {event_id} is not an instruction or DMA transfer of this trace.")
        return self.event_at(int(table[0]), int(row[0]))

    def event_at(self, table: int, row: int) -> Event:
        # one row read straight from Arrow: no whole-column copies (a 10M-row table streamed in
        # batches has many chunks, and caching its columns as numpy would cost ~0.5 GB)
        t = self.trace.table(TABLE_NAMES[table])

        def v(column: str) -> Any:
            return t.column(column)[row].as_py()

        if table == INSTRUCTION:
            name, dtype = v("opcode"), v("dtype")
            flops = int(v("flops")) if "flops" in t.column_names else 0
        else:
            name, dtype, flops = f"DMA {v('src')}->{v('dst')}", "", 0
        return Event(
            id=int(v("id")),
            table=TABLE_NAMES[table],
            row=row,
            track_id=int(v("track_id")),
            start_ns=int(v("start_ns")),
            dur_ns=int(v("dur_ns")),
            name=str(name),
            kernel_id=int(v("kernel_id")),
            flops=flops,
            bytes=int(v("bytes")),
            dtype=str(dtype),
        )
