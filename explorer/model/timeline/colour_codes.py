"""Colouring the timeline by opcode, kernel, op or layer, without a colour code per event.

Every event's category comes from a column the trace already has: an instruction's
opcode code (its dictionary index), a transfer's source and destination, a kernel's or
collective's name, or its kernel id (kernel, op and layer modes). A `CodeColumn` maps
those to category codes for just the positions asked: a frame asks for one per pixel
of each visible row, so colouring costs O(pixels), never a 400 MB array of codes for a
100M-event trace. Building a colouring is one pass per table to find which names are
used and how much time each covers (the legend's order); the persisted index stores
that (`index_cache`), so reopening skips it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from explorer.model.table_chunks import batches
from explorer.model.timeline.event_table import EventTable
from simcore.errors import UserError

COLOUR_MODES = ("opcode", "kernel", "op", "layer")
NO_NAME = "(none)"

LocalCodes = Callable[[dict[str, np.ndarray]], np.ndarray]
"""Source columns of some rows -> their local category (an index into the table's `values`)."""


@dataclass
class Source:
    """Where a table's categories come from in one colour mode."""

    columns: tuple[str, ...]  # the columns `local` reads (dictionary columns as codes)
    values: np.ndarray  # name of each local category
    local: LocalCodes


class CodeColumn:
    """Category codes of one table's events, computed for the sorted positions asked."""

    def __init__(self, events: EventTable, source: Source, remap: np.ndarray) -> None:
        self.events, self.source, self.remap = events, source, remap

    def __len__(self) -> int:
        return self.events.n

    def __getitem__(self, key: slice | np.ndarray) -> np.ndarray:
        if isinstance(key, slice):
            lo, hi, _ = key.indices(self.events.n)
            pos = np.arange(lo, max(lo, hi), dtype=np.int64)
        else:
            pos = np.asarray(key, dtype=np.int64)
        rows = self.events.rows(pos)
        cols = {name: self.events.chunked(name)[rows] for name in self.source.columns}
        return self.remap[self.source.local(cols)] if len(pos) else np.zeros(0, np.int32)

    def matches(self, hit: np.ndarray) -> np.ndarray:
        """Bool per sorted position: is its category one of `hit` (bool per category)? Batch by batch."""
        local_hit = hit[self.remap]
        out = np.empty(self.events.n, bool)
        for offset, c, _ in batches(self.events.table, self.source.columns):
            out[offset:offset + len(next(iter(c.values())))] = local_hit[self.source.local(c)]
        return out if self.events.order is None else out[self.events.order]


@dataclass
class ColourCodes:
    """One colouring: a name per category, the time each covers, and per interval table its codes."""

    mode: str
    names: list[str]
    codes: dict[str, CodeColumn]  # table name -> category code per sorted position, on demand
    time: np.ndarray  # float64 ns per category (event time, what the legend ranks by)


def sources(tables: dict[str, EventTable], mode: str, kernel_ops) -> dict[str, Source]:
    """Each table's category source in `mode` (`kernel_ops`: the trace's `KernelOps`)."""
    out: dict[str, Source] = {}
    none = np.array([NO_NAME], dtype=object)
    for tname, events in tables.items():
        if mode == "opcode":
            col = {"instructions": "opcode", "kernels": "name", "collectives": "kind"}.get(tname)
            if col is not None:
                out[tname] = Source((col,), _vocabulary(events, col), lambda c, col=col: c[col])
            else:  # dma: by direction
                sv, dv = _vocabulary(events, "src"), _vocabulary(events, "dst")
                pairs = np.array([f"DMA {a}\u2192{b}" for a in sv for b in dv], dtype=object)
                width = max(len(dv), 1)
                out[tname] = Source(("src", "dst"), pairs,
                                    lambda c, w=width: c["src"].astype(np.int64) * w + c["dst"])
            continue
        if tname == "collectives":
            source = kernel_ops.op_names if mode in ("op", "kernel") else kernel_ops.op_layer
            vals = np.concatenate([source, none])
            out[tname] = Source(("op_id",), vals, lambda c, n=len(vals) - 1: _or_missing(kernel_ops.op_row(c["op_id"]), n))
            continue
        vals = np.concatenate([kernel_ops.names[mode], none])
        out[tname] = Source(("kernel_id",), vals,
                            lambda c, n=len(vals) - 1: _or_missing(_kernel_rows(kernel_ops, c["kernel_id"]), n))
    return out


def _or_missing(rows: np.ndarray, missing: int) -> np.ndarray:
    return np.where(rows >= 0, rows, missing)


def _kernel_rows(kernel_ops, kernel_id: np.ndarray) -> np.ndarray:
    """kernels-table row per event, looked up once per run of one kernel (events come in long runs)."""
    if len(kernel_id) < 2:
        return kernel_ops.kernel_row(kernel_id)
    first = np.r_[0, np.flatnonzero(kernel_id[1:] != kernel_id[:-1]) + 1]
    return np.repeat(kernel_ops.kernel_row(kernel_id[first]), np.diff(np.r_[first, len(kernel_id)]))


def _vocabulary(events: EventTable, name: str) -> np.ndarray:
    """The vocabulary a dictionary column's codes index in every chunk. An Arrow IPC file only
    grows its dictionaries (deltas) and the reader gives a multi-file table the longest one,
    so chunks always agree; a table that broke that could not be coloured by its codes."""
    vocab = events.vocabulary(name)
    if vocab is None:
        raise UserError(f"table '{events.name}': column '{name}' has dictionaries that disagree between batches.")
    return np.array(vocab, dtype=object)


def usage(events: EventTable, source: Source) -> tuple[np.ndarray, np.ndarray]:
    """(events, event time) per local category: one pass over the table, batch by batch."""
    n = len(source.values)
    count = np.zeros(n, np.int64)
    time = np.zeros(n, np.float64)
    coll = events.name == "collectives"
    for _, c, _ in batches(events.table, tuple(dict.fromkeys((*source.columns, *_DURATION[coll])))):
        local = source.local(c)
        dur = c["end_ns"] - c["arrive_ns"] if coll else c["dur_ns"]
        count += np.bincount(local, minlength=n)
        time += np.bincount(local, weights=dur, minlength=n)
    return count, time


_DURATION = {False: ("dur_ns",), True: ("arrive_ns", "end_ns")}


def build(tables: dict[str, EventTable], mode: str, kernel_ops,
          used: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> ColourCodes:
    """A colouring; `used` gives each table's (count, time) per local category when known (the
    persisted index), else they are counted here. Only names some event uses get a code, in
    table order then vocabulary order (so colours stay where they were)."""
    names: dict[str, int] = {}
    codes: dict[str, CodeColumn] = {}
    times: dict[int, float] = {}
    for tname, source in sources(tables, mode, kernel_ops).items():
        count, time = used[tname] if used is not None else usage(tables[tname], source)
        remap = np.zeros(len(source.values), dtype=np.int32)
        for i in np.flatnonzero(count > 0):
            code = remap[i] = names.setdefault(str(source.values[i]), len(names))
            times[code] = times.get(code, 0.0) + float(time[i])
        codes[tname] = CodeColumn(tables[tname], source, remap)
    return ColourCodes(mode, list(names), codes, np.array([times.get(i, 0.0) for i in range(len(names))]))
