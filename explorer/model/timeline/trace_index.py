"""The timeline's index over a trace: per-track intervals, their coverage and colours.

Every interval table (`instructions`, `dma`, `kernels`, `collectives`) becomes an
`EventTable` ordered by (track, start): a `Lane` per track holds that track's starts
and durations (zero-copy views of the memory-mapped Arrow chunks when the writer kept a
track in one record batch) and its busy-time `Coverage`, so the visible intervals of any
time range are two `searchsorted` calls away and the per-pixel coverage costs
O(pixels x log n): nothing the GUI does per frame grows with the trace. Colours come
from the trace's own columns at the positions a frame asks for (`colour_codes`).

Building reads every row once (seconds for 100M events, off the GUI thread); `save()`
persists what it found (`index_cache`) and `TraceIndex.open` reuses it, so reopening a
trace maps that file and reads no table until a frame needs its pixels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.model import columns
from explorer.model.events import TABLE_NAMES as EVENT_TABLES
from explorer.model.events import EventIndex
from explorer.model.table_chunks import batches
from explorer.model.timeline import colour_codes, index_cache
from explorer.model.timeline.colour_codes import COLOUR_MODES, NO_NAME, ColourCodes
from explorer.model.timeline.counter_bins import CounterSeries
from explorer.model.timeline.event_table import EventTable, Lane, TableLayout, TrackInfo
from explorer.model.timeline.lod import Coverage, is_disjoint
from simcore.errors import UserError
from simcore.trace import Trace
from simcore.trace import schema as S

__all__ = ["COLOUR_MODES", "NO_NAME", "ColourCodes", "EventRef", "EventTable", "Lane", "TrackInfo", "TraceIndex"]

Progress = Callable[[float, str], None]
"""progress(fraction 0..1, what is happening); may raise to cancel."""

INTERVAL_TABLES = ("instructions", "dma", "kernels", "collectives")
SAVE_MIN_EVENTS = 1_000_000  # smaller traces index in well under a second: no file beside them

# Display order of engine rows inside a core, as in the Neuron profiler.
KIND_ORDER = {
    "runtime": -1, "kernel": 0, "tensor": 1, "tensor_matrix": 2, "vector": 3, "scalar": 4,
    "gpsimd": 5, "sync": 6, "dma_queue": 7, "cc": 8, "counter": 9,
}


@dataclass(frozen=True)
class EventRef:
    """One event: a row of an interval table (the row number in the trace's table)."""

    table: str
    row: int


@dataclass
class KernelOps:
    """kernel -> op -> layer lookups, resolved once for colouring, search and details
    (the operator tree itself is `explorer.model.analysis.hierarchy.Hierarchy`)."""

    kernel_ids: np.ndarray  # sorted
    kernel_rows: np.ndarray  # kernels-table row of each sorted id
    names: dict[str, np.ndarray] = field(default_factory=dict)  # mode -> name per kernels row
    op_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # sorted
    op_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    op_names: np.ndarray = field(default_factory=lambda: np.zeros(0, object))
    op_layer: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # layer name per ops row

    def kernel_row(self, kernel_id: np.ndarray) -> np.ndarray:
        """kernels-table row per kernel id, -1 when unknown."""
        return _lookup(self.kernel_ids, self.kernel_rows, kernel_id)

    def op_row(self, op_id: np.ndarray) -> np.ndarray:
        return _lookup(self.op_ids, self.op_rows, op_id)


def _lookup(sorted_keys: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.int64)
    if len(sorted_keys) == 0:
        return np.full(keys.shape, -1, dtype=np.int64)
    i = np.clip(np.searchsorted(sorted_keys, keys), 0, len(sorted_keys) - 1)
    return np.where(sorted_keys[i] == keys, rows[i], -1)


def build_kernel_ops(trace: Trace) -> KernelOps:
    ops = trace.ops
    op_id = columns.num(ops, "op_id").astype(np.int64)
    parent = columns.num(ops, "parent_id").astype(np.int64)
    lcodes, lvocab = columns.codes(ops, "level")
    ncodes, nvocab = columns.codes(ops, "name")
    level = np.array(lvocab, dtype=object)[lcodes] if len(op_id) else np.zeros(0, object)
    op_names = np.array(nvocab, dtype=object)[ncodes] if len(op_id) else np.zeros(0, object)
    oorder = np.argsort(op_id, kind="stable")
    h_ops = (op_id[oorder], oorder)
    # walk every op up to its layer (a loop over depth, not over ops)
    layer = np.full(len(op_id), NO_NAME, dtype=object)
    cur = np.arange(len(op_id))
    for _ in range(64):
        ok = cur >= 0
        if not ok.any():
            break
        is_layer = np.zeros(len(op_id), dtype=bool)
        is_layer[ok] = level[cur[ok]] == "layer"
        layer[is_layer] = op_names[cur[is_layer]]
        nxt = np.full(len(op_id), -1, dtype=np.int64)
        go = ok & ~is_layer
        nxt[go] = _lookup(*h_ops, parent[cur[go]])
        cur = nxt
    kernels = trace.kernels
    kid = columns.num(kernels, "kernel_id").astype(np.int64)
    korder = np.argsort(kid, kind="stable")
    h = KernelOps(kid[korder], korder, op_ids=h_ops[0], op_rows=h_ops[1], op_names=op_names, op_layer=layer)
    kc, kv = columns.codes(kernels, "name")
    kname = np.array(kv, dtype=object)[kc] if len(kid) else np.zeros(0, object)
    orow = h.op_row(columns.num(kernels, "op_id"))
    h.names["kernel"] = kname
    h.names["op"] = np.where(orow >= 0, op_names[np.maximum(orow, 0)] if len(op_id) else NO_NAME, NO_NAME)
    h.names["layer"] = np.where(orow >= 0, layer[np.maximum(orow, 0)] if len(op_id) else NO_NAME, NO_NAME)
    return h


class TraceIndex:
    """Everything the timeline needs to draw and query a trace without scanning it."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.span: tuple[int, int] = trace.span_ns
        self.tracks: dict[int, TrackInfo] = {}
        self.tables: dict[str, EventTable] = {}
        self.lanes: dict[int, Lane] = {}
        self.counters: dict[int, CounterSeries] = {}
        self.kernel_ops: KernelOps | None = None
        self.saved: index_cache.SavedIndex | None = None  # the persisted index it was opened from
        self._cum: dict[str, np.ndarray] = {}  # per table: busy time before each sorted position
        self._disjoint: dict[str, np.ndarray] = {}  # per table: bool per lane, in run order
        self._usage: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}  # mode -> table -> per category
        self._colours: dict[str, ColourCodes] = {}
        self._events: EventIndex | None = None

    # -- building ----------------------------------------------------------------
    @classmethod
    def open(cls, trace: Trace, progress: Progress | None = None) -> TraceIndex:
        """The index from the persisted one when it matches the trace (no table is read), else built."""
        return cls.build(trace, progress, saved=index_cache.load(trace))

    @classmethod
    def build(cls, trace: Trace, progress: Progress | None = None,
              saved: index_cache.SavedIndex | None = None) -> TraceIndex:
        """Index a trace (seconds for 100M events; call it off the GUI thread), reusing `saved`."""
        say = progress or (lambda f, m: None)
        self = cls(trace)
        self.saved = saved
        say(0.02, "reading tracks")
        tr = trace.tracks
        ids = columns.num(tr, "track_id")
        chips, cores = columns.num(tr, "chip"), columns.num(tr, "core")
        lcores = columns.num(tr, "lcore") if "lcore" in tr.schema.names else np.full(len(ids), -1)
        cols = {c: columns.codes(tr, c) for c in ("kind", "name", "unit")}
        for i, tid in enumerate(ids):
            self.tracks[int(tid)] = TrackInfo(
                int(tid), int(chips[i]), int(cores[i]),
                *(cols[c][1][cols[c][0][i]] for c in ("kind", "name", "unit")), int(lcores[i]),
            )
        weights = {"instructions": 0.55, "dma": 0.15, "kernels": 0.05, "collectives": 0.05}
        done = 0.05
        for name in INTERVAL_TABLES:
            say(done, f"indexing {name}")
            self._index_table(name)
            done += weights[name]
        say(done, "indexing counters")
        ctab = trace.counters
        ctrack = columns.num(ctab, "track_id")
        ctime, cval = columns.num(ctab, "time_ns"), columns.num(ctab, "value")
        if len(ctrack) > 1 and not bool((ctrack[1:] >= ctrack[:-1]).all()):
            order = np.lexsort((ctime, ctrack))
            ctrack, ctime, cval = ctrack[order], ctime[order], cval[order]
        if len(ctrack):
            cids, first = np.unique(ctrack, return_index=True)
            last = np.r_[first[1:], len(ctrack)]
            for tid, a, b in zip(cids, first, last):
                info = self.tracks.get(int(tid)) or self._unknown_track(int(tid))
                self.counters[int(tid)] = CounterSeries(info.name, info.unit, ctime[a:b], cval[a:b])
        say(0.95, "resolving kernels and ops")
        self.kernel_ops = build_kernel_ops(trace)
        if saved is not None:
            self._usage = {mode: {t: (np.asarray(c, np.int64), np.asarray(w, np.float64)) for t, (c, w) in per.items()}
                           for mode, per in saved.info.get("usage", {}).items()}
        say(1.0, "ready")
        return self

    def _index_table(self, name: str) -> None:
        """The table's lanes: layout, disjointness and prefix sums from the saved index, or found now."""
        table = self.trace.table(name)
        saved = self.saved
        if saved is not None:
            order = saved[f"{name}.order"] if f"{name}.order" in saved else None
            layout = TableLayout(saved[f"{name}.run_track"], saved[f"{name}.run_lo"], order)
            disjoint = saved[f"{name}.disjoint"]
            cum = saved[f"{name}.cum"]
        else:
            layout, disjoint, cum = None, None, None
        events = self.tables[name] = EventTable(name, table, layout, checked=saved is not None)
        if cum is None:
            cum = self._cum[name] = _prefix_sum(events)  # one table-wide array: lanes take slices
        else:
            self._cum[name] = cum
        flags = []
        for i, (tid, (lo, hi)) in enumerate(events.bounds.items()):
            info = self.tracks.get(tid) or self._unknown_track(tid)
            start, dur = events.lane_arrays(lo, hi)
            dis = bool(disjoint[i]) if disjoint is not None else is_disjoint(start, dur)
            flags.append(dis)
            if dis:
                cov, reach = Coverage(start, dur, cum[lo:hi + 1], 0, hi - lo), None
            else:
                cov, reach = Coverage.build(start, dur, disjoint=False), np.maximum.accumulate(start + dur)
            self.lanes[tid] = Lane(info, events, lo, hi, dis, cov, start, dur, reach)
        self._disjoint[name] = np.array(flags, dtype=bool)

    def save(self, *, validated: bool) -> bool:
        """Persist what building found (layouts, disjointness, prefix sums, the colourings computed
        so far) inside the trace directory, for `open` to reuse. `validated`: the trace passed full
        validation, so a later open of the unchanged files may skip it. False when not written:
        already saved, too small to be worth a file (it builds in well under a second), or the
        directory refused it. An index opened from one that was never validated (recorded while a
        capture wrote the trace) is marked validated instead."""
        if self.saved is not None and self.saved.persisted:
            return validated and not self.validated and index_cache.mark_validated(self.trace)
        if self.event_count < SAVE_MIN_EVENTS:
            return False
        arrays: dict[str, np.ndarray] = {}
        for name, events in self.tables.items():
            layout = events.layout
            arrays[f"{name}.run_track"] = layout.run_track
            arrays[f"{name}.run_lo"] = layout.run_lo
            if layout.order is not None:
                arrays[f"{name}.order"] = layout.order
            arrays[f"{name}.disjoint"] = self._disjoint[name]
            arrays[f"{name}.cum"] = self._cum[name]
        usage = {mode: {t: [c.tolist(), w.tolist()] for t, (c, w) in per.items()} for mode, per in self._usage.items()}
        return index_cache.save(self.trace, arrays, {"validated": validated, "usage": usage})

    @property
    def validated(self) -> bool:
        """The persisted index it came from was built from these very files after full validation."""
        return self.saved is not None and self.saved.persisted and bool(self.saved.info.get("validated"))

    def _unknown_track(self, tid: int) -> TrackInfo:
        info = self.tracks[tid] = TrackInfo(tid, 0, -1, "unknown", f"track {tid}", "")
        return info

    # -- events ------------------------------------------------------------------
    @property
    def event_count(self) -> int:
        return sum(t.n for t in self.tables.values())

    def ref(self, lane: Lane, index: int) -> EventRef:
        """The event at lane-relative `index`."""
        return EventRef(lane.events.name, lane.events.row(lane.lo + index))

    def locate(self, ref: EventRef) -> tuple[Lane, int]:
        """(lane, lane-relative index) of an event."""
        events = self.tables[ref.table]
        pos = events.pos(ref.row)
        tid = events.track_at(pos)
        lane = self.lanes[tid]
        return lane, pos - lane.lo

    def interval(self, ref: EventRef) -> tuple[int, int]:
        """(start, end) of an event in ns."""
        events = self.tables[ref.table]
        pos = events.pos(ref.row)
        return events.start_at(pos), events.end(pos)

    def find_id(self, event_id: int) -> EventRef | None:
        """The instruction or DMA transfer with this event id."""
        table, row = self.events.locate(np.array([event_id], dtype=np.int64))
        if table[0] < 0:
            return None
        return EventRef(EVENT_TABLES[int(table[0])], int(row[0]))

    @property
    def events(self) -> EventIndex:
        """id -> (table, row) of every instruction and DMA transfer, built on first use (it reads
        the memory-mapped id chunks in place); the analyses share it (`Hierarchy(events=...)`)."""
        if self._events is None:
            self._events = EventIndex(self.trace)
        return self._events

    def event_name(self, ref: EventRef) -> str:
        t = self.tables[ref.table]
        if ref.table == "instructions":
            return str(t.value("opcode", ref.row))
        if ref.table == "dma":
            return f"DMA {t.value('src', ref.row)}\u2192{t.value('dst', ref.row)}"
        if ref.table == "kernels":
            return str(t.value("name", ref.row))
        return str(t.value("kind", ref.row))

    def kernel_path(self, kernel_id: int) -> dict[str, str]:
        """Kernel, op and layer names of a kernel id ('' when unknown)."""
        h = self.kernel_ops
        if h is None or kernel_id < 0:
            return {"kernel": "", "op": "", "layer": ""}
        row = int(h.kernel_row(np.array([kernel_id]))[0])
        if row < 0:
            return {"kernel": "", "op": "", "layer": ""}
        return {m: str(h.names[m][row]) for m in ("kernel", "op", "layer")}

    def op_path(self, op_id: int) -> dict[str, str]:
        h = self.kernel_ops
        if h is None or op_id < 0:
            return {"op": "", "layer": ""}
        row = int(h.op_row(np.array([op_id]))[0])
        if row < 0:
            return {"op": "", "layer": ""}
        return {"op": str(h.op_names[row]), "layer": str(h.op_layer[row])}

    def counter_reference(self, track_id: int) -> float | None:
        """The hardware limit a counter is shown against ("% of peak"), when the trace says it."""
        info = self.tracks[track_id]
        hw = self.trace.hardware

        def num(*path: str) -> float | None:
            v: Any = hw
            for p in path:
                v = v.get(p) if isinstance(v, dict) else None
            return float(v) if isinstance(v, (int, float)) and v > 0 else None

        if info.name in (S.COUNTER_HBM_READ, S.COUNTER_HBM_WRITE):
            return num("hbm", "bandwidth_gbps")
        if info.name == S.COUNTER_LINK:
            return num("link", "bandwidth_gbps")
        if info.name == S.COUNTER_SBUF:
            return num("sbuf", "bytes_per_core") or num("sbuf", "capacity_bytes")
        if info.name == S.COUNTER_PSUM:
            return num("psum", "bytes_per_core") or num("psum", "capacity_bytes")
        if info.unit == "%":
            return 100.0
        return None

    def share_of_peak(self, track_id: int, value: float) -> tuple[float, float] | None:
        """`value` of a counter as a fraction of its hardware limit, and that limit; None when the
        trace does not say the limit (the counter tooltip's "% of the hardware peak")."""
        ref = self.counter_reference(track_id)
        return (value / ref, ref) if ref else None

    # -- colouring ---------------------------------------------------------------
    def category_time(self, mode: str) -> np.ndarray:
        """Total event time (ns) per colour category of `mode` (what the legend ranks by)."""
        return self.colours(mode).time

    def category_share(self, mode: str) -> np.ndarray:
        """Each colour category's fraction of all event time in `mode` (the legend's percentages);
        zeros when no event has any duration."""
        total = self.category_time(mode)
        grand = float(total.sum())
        return total / grand if grand > 0 else np.zeros(len(total))

    def colours(self, mode: str) -> ColourCodes:
        """Category names, their time, and per-event codes (on demand) for colouring by opcode, kernel,
        op or layer."""
        if mode not in COLOUR_MODES:
            raise UserError(f"unknown colour mode '{mode}'; choose one of {', '.join(COLOUR_MODES)}.")
        got = self._colours.get(mode)
        if got is None:
            used = self._usage.get(mode)
            if used is None or set(used) != set(self.tables):
                used = self._usage[mode] = {
                    t: colour_codes.usage(self.tables[t], src)
                    for t, src in colour_codes.sources(self.tables, mode, self.kernel_ops).items()}
            got = self._colours[mode] = colour_codes.build(self.tables, mode, self.kernel_ops, used)
        return got


def _prefix_sum(events: EventTable) -> np.ndarray:
    """Busy time before each sorted position, table-wide (len n + 1), read batch by batch."""
    cum = np.zeros(events.n + 1, np.int64)
    if events.order is not None or events.name == "collectives":
        _, dur = events.lane_arrays(0, events.n)
        np.cumsum(dur, out=cum[1:])
        return cum
    carry = 0
    for offset, c, _ in batches(events.table, ("dur_ns",)):
        part = cum[offset + 1:offset + 1 + len(c["dur_ns"])]
        np.cumsum(c["dur_ns"], out=part)
        part += carry
        carry = int(part[-1])
    return cum
