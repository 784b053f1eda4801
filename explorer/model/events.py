"""Find an event (an instruction or a DMA transfer) by its id, in O(log n).

`instructions.id` and `dma.id` share one id space and `flows` refers to it; the
dependency view, the operator tree and recommendations all need "which row is
event 123", so the sorted id index is built once per trace and shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.model.scope import num
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


class EventIndex:
    """Sorted ids of every instruction and DMA transfer, with their table and row."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        # per table: ids in sorted order and, when the table is not sorted by id, the sorting rows
        self._sorted: list[tuple[np.ndarray, np.ndarray | None]] = []
        for name in TABLE_NAMES:
            ids = num(trace.table(name), "id")
            if len(ids) > 1 and not (ids[1:] >= ids[:-1]).all():
                order = np.argsort(ids, kind="stable")
                self._sorted.append((ids[order], order))
            else:
                self._sorted.append((ids, None))

    def __len__(self) -> int:
        return sum(len(ids) for ids, _ in self._sorted)

    def locate(self, event_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(table code, row) per id; table -1 where the id is not an event of this trace."""
        q = np.asarray(event_ids, dtype=np.int64)
        table = np.full(len(q), -1, np.int64)
        row = np.full(len(q), -1, np.int64)
        for code, (ids, order) in enumerate(self._sorted):
            if not len(ids):
                continue
            pos = np.searchsorted(ids, q)
            pos_c = np.minimum(pos, len(ids) - 1)
            found = (table < 0) & (ids[pos_c] == q)
            table[found] = code
            row[found] = pos_c[found] if order is None else order[pos_c[found]]
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
