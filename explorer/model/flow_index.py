"""The flows into or out of one event, found without copying the flows table when it can be.

Writers store `flows` in destination order, so "what did event X wait for" is a binary
search of the memory-mapped `dst_id` chunks in place: nothing is built, however many
flows there are (21.5M in a 70B prefill capture, where sorting them both ways took 6 s
and 1 GB before the dependency view could show anything). The other direction, or a
table in another order, gets a sorted copy of its key column, built on first use.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import cached_property

import numpy as np
import pyarrow as pa

from explorer.model.table_chunks import ChunkedColumn, array_numpy, batches


class FlowIndex:
    """Flows keyed by one end (`key` = "dst_id" or "src_id"): the other end and the kind of each."""

    def __init__(self, flows: pa.Table, key: str) -> None:
        self.flows = flows
        self.key = key
        self._other = ChunkedColumn(flows, "src_id" if key == "dst_id" else "dst_id")
        self._kind = ChunkedColumn(flows, "kind")
        self._vocab = self._kind_vocabulary(flows)

    @staticmethod
    def _kind_vocabulary(flows: pa.Table) -> list[str] | None:
        """One vocabulary for every chunk's codes (the writer's growing one), None if they disagree."""
        col = flows.column("kind")
        if not col.num_chunks:
            return []
        longest = max((c.dictionary for c in col.chunks), key=len)
        if not all(longest[: len(c.dictionary)].equals(c.dictionary) for c in col.chunks):
            return None
        return [str(v) for v in longest.to_pylist()]

    @cached_property
    def _in_place(self) -> list[np.ndarray] | None:
        """The key column's chunks when it never decreases down the table (no copy), else None."""
        chunks, last = [], None
        for _, c, _ in batches(self.flows, (self.key,)):
            k = c[self.key]
            if (last is not None and int(k[0]) < last) or not bool((k[1:] >= k[:-1]).all()):
                return None
            chunks.append(k)
            last = int(k[-1])
        return chunks

    @cached_property
    def _bounds(self) -> tuple[list[int], list[int], list[int]]:
        chunks = self._in_place or []
        offsets = np.cumsum([0] + [len(c) for c in chunks]).tolist()
        return [int(c[0]) for c in chunks], [int(c[-1]) for c in chunks], offsets

    @cached_property
    def _sorted(self) -> tuple[np.ndarray, np.ndarray]:
        """(key values sorted, the rows holding them): the fallback for a key out of order."""
        keys = np.concatenate([array_numpy(c) for c in self.flows.column(self.key).chunks] or [np.zeros(0, np.int64)])
        order = np.argsort(keys, kind="stable")
        return keys[order], order

    def rows(self, event_id: int) -> np.ndarray:
        """Rows of the flows whose key is `event_id`, in table order."""
        if self._in_place is not None:
            firsts, lasts, offsets = self._bounds
            parts = []
            for c in range(bisect_left(lasts, event_id), bisect_right(firsts, event_id)):
                k = self._in_place[c]
                lo, hi = np.searchsorted(k, event_id, "left"), np.searchsorted(k, event_id, "right")
                parts.append(np.arange(lo, hi, dtype=np.int64) + offsets[c])
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)
        keys, order = self._sorted
        lo, hi = np.searchsorted(keys, event_id, "left"), np.searchsorted(keys, event_id, "right")
        return np.asarray(order[lo:hi], np.int64)

    def edges(self, event_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids at the other end, kinds as strings) of the flows whose key is `event_id`."""
        rows = self.rows(event_id)
        if self._vocab is None:
            names = [str(self._kind.value(r)) for r in rows.tolist()]
        else:
            names = [self._vocab[int(k)] for k in self._kind[rows]] if len(rows) else []
        kinds = np.array(names, dtype=object)
        return self._other[rows].astype(np.int64, copy=False), kinds
