"""The timeline's index over a trace: per-track sorted numpy arrays and coverage.

Every interval table (`instructions`, `dma`, `kernels`, `collectives`) becomes an
`EventTable` whose rows are ordered by (track, start) — zero-copy views of the
memory-mapped Arrow columns when the writer grouped rows by track, as the simulator
does. A `Lane` is one track's slice of that order plus its busy-time `Coverage`, so
the visible intervals of any time range are two `searchsorted` calls away and the
per-pixel coverage costs O(pixels x log n): nothing the GUI does per frame grows
with the trace. Building the index runs once, off the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from explorer.model import columns
from explorer.model.timeline.counter_bins import CounterSeries
from explorer.model.events import TABLE_NAMES as EVENT_TABLES
from explorer.model.events import EventIndex
from explorer.model.timeline.lod import Coverage, is_disjoint, prefix_sum
from explorer.model.table_chunks import batches, column_rows, take
from simcore.errors import UserError
from simcore.trace import Trace
from simcore.trace import schema as S

Progress = Callable[[float, str], None]
"""progress(fraction 0..1, what is happening); may raise to cancel."""

INTERVAL_TABLES = ("instructions", "dma", "kernels", "collectives")
COLOUR_MODES = ("opcode", "kernel", "op", "layer")
NO_NAME = "(none)"

# Display order of engine rows inside a core, as in the Neuron profiler.
KIND_ORDER = {
    "kernel": 0, "tensor": 1, "tensor_matrix": 2, "vector": 3, "scalar": 4,
    "gpsimd": 5, "sync": 6, "dma_queue": 7, "cc": 8, "counter": 9,
}


@dataclass(frozen=True)
class TrackInfo:
    track_id: int
    chip: int
    core: int
    kind: str
    name: str
    unit: str


@dataclass(frozen=True)
class EventRef:
    """One event: a row of an interval table (the row number in the trace's table)."""

    table: str
    row: int


class EventTable:
    """One interval table ordered by (track, start), with per-track bounds."""

    def __init__(self, name: str, table: pa.Table) -> None:
        self.name = name
        self.table = table
        n = table.num_rows
        self.n = n
        track = columns.num(table, "track_id")
        if name == "collectives":
            start = columns.num(table, "arrive_ns")
            dur = columns.num(table, "end_ns") - start
        else:
            start = columns.num(table, "start_ns")
            dur = columns.num(table, "dur_ns")
        self.order: np.ndarray | None = None
        if n > 1:
            same = track[1:] == track[:-1]
            grouped = bool((track[1:] >= track[:-1]).all())
            if not grouped or not bool((start[1:] >= start[:-1])[same].all()):
                self.order = np.lexsort((start, track))
                track, start, dur = track[self.order], start[self.order], dur[self.order]
        if (dur < 0).any():
            raise UserError(f"table '{name}' has a negative duration; run `trnx validate` on the trace.")
        self.start = np.ascontiguousarray(start, dtype=np.int64)
        self.dur = np.ascontiguousarray(dur, dtype=np.int64)
        # track ids are sorted now: each track is one run (no np.unique: it sorts a copy), and the
        # runs replace a per-event track column
        first = np.r_[0, np.flatnonzero(track[1:] != track[:-1]) + 1] if n else np.zeros(0, np.int64)
        self._run_lo = first.astype(np.int64)
        self._run_track = track[first].astype(np.int64)
        last = np.r_[first[1:], n] if n else first
        self.bounds: dict[int, tuple[int, int]] = {
            int(t): (int(a), int(b)) for t, a, b in zip(self._run_track, first, last)}
        self._row_to_pos: np.ndarray | None = None
        self._vocab: dict[str, list[str] | None] = {}
        self._numeric: dict[str, np.ndarray] = {}

    # -- positions <-> rows ------------------------------------------------------
    def row(self, pos: int) -> int:
        return int(pos if self.order is None else self.order[pos])

    def pos(self, row: int) -> int:
        if self.order is None:
            return int(row)
        if self._row_to_pos is None:
            inv = np.empty(self.n, dtype=np.int64)
            inv[self.order] = np.arange(self.n)
            self._row_to_pos = inv
        return int(self._row_to_pos[row])

    def column(self, name: str) -> np.ndarray:
        """A numeric column in table-row order (cached: a copy only when chunked)."""
        got = self._numeric.get(name)
        if got is None:
            got = self._numeric[name] = columns.num(self.table, name)
        return got

    def sorted_column(self, name: str) -> np.ndarray:
        """A numeric column in (track, start) order."""
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
        """A dictionary column's codes in (track, start) order, and its vocabulary.

        Not cached (the colours keep what they need); `sorted_code_rows` reads a slice."""
        codes, vocab = columns.codes(self.table, name)
        if self.order is not None:
            codes = codes[self.order]
        return codes, vocab

    def sorted_code_rows(self, name: str, lo: int, hi: int) -> tuple[np.ndarray, list[str]]:
        """`sorted_codes(name)` at sorted positions [lo, hi), reading only those rows when every
        chunk's dictionary is a prefix of the longest (as the trace reader leaves them)."""
        vocab = self._vocab.get(name, False)
        if vocab is False:
            col = self.table.column(name)
            chunks = [c for c in col.chunks]
            longest = max((c.dictionary for c in chunks), key=len) if chunks else None
            ok = longest is not None and all(longest[: len(c.dictionary)].equals(c.dictionary) for c in chunks)
            vocab = self._vocab[name] = [str(v) for v in longest.to_pylist()] if ok else None
        if vocab is None:
            codes, full = self.sorted_codes(name)
            return codes[lo:hi], full
        return self.sorted_rows(name, lo, hi).astype(np.int32, copy=False), vocab

    def value(self, column: str, row: int) -> Any:
        return self.table.column(column)[row].as_py()

    def end(self, pos: int) -> int:
        return int(self.start[pos] + self.dur[pos])

    def track_at(self, pos: int) -> int:
        """The track of the event at a sorted position."""
        return int(self._run_track[int(np.searchsorted(self._run_lo, pos, side="right")) - 1])


@dataclass
class Lane:
    """One interval track: its slice [lo, hi) of an `EventTable` and its coverage."""

    track: TrackInfo
    events: EventTable
    lo: int
    hi: int
    disjoint: bool
    coverage: Coverage
    reach: np.ndarray | None = None  # running max of ends, only for overlapping lanes

    @property
    def start(self) -> np.ndarray:
        return self.events.start[self.lo:self.hi]

    @property
    def dur(self) -> np.ndarray:
        return self.events.dur[self.lo:self.hi]

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


@dataclass
class ColourCodes:
    """One colouring: a name per category and, per interval table, a code per event."""

    mode: str
    names: list[str]
    codes: dict[str, np.ndarray]  # table name -> int32 code per sorted position


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
        self._colours: dict[str, ColourCodes] = {}
        self._events: EventIndex | None = None

    # -- building ----------------------------------------------------------------
    @classmethod
    def build(cls, trace: Trace, progress: Progress | None = None) -> TraceIndex:
        """Index a trace (seconds for 10M events; call it off the GUI thread)."""
        say = progress or (lambda f, m: None)
        self = cls(trace)
        say(0.02, "reading tracks")
        tr = trace.tracks
        ids = columns.num(tr, "track_id")
        chips, cores = columns.num(tr, "chip"), columns.num(tr, "core")
        cols = {c: columns.codes(tr, c) for c in ("kind", "name", "unit")}
        for i, tid in enumerate(ids):
            self.tracks[int(tid)] = TrackInfo(
                int(tid), int(chips[i]), int(cores[i]),
                *(cols[c][1][cols[c][0][i]] for c in ("kind", "name", "unit")),
            )
        weights = {"instructions": 0.55, "dma": 0.15, "kernels": 0.05, "collectives": 0.05}
        done = 0.05
        for name in INTERVAL_TABLES:
            say(done, f"indexing {name}")
            events = self.tables[name] = EventTable(name, trace.table(name))
            cum = prefix_sum(events.dur)  # shared by every disjoint track of the table
            for tid, (lo, hi) in events.bounds.items():
                info = self.tracks.get(tid) or self._unknown_track(tid)
                start, dur = events.start[lo:hi], events.dur[lo:hi]
                disjoint = is_disjoint(start, dur)
                if disjoint:
                    cov, reach = Coverage(events.start, events.dur, cum, lo, hi), None
                else:
                    cov, reach = Coverage.build(start, dur, disjoint=False), np.maximum.accumulate(start + dur)
                self.lanes[tid] = Lane(info, events, lo, hi, disjoint, cov, reach)
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
        say(1.0, "ready")
        return self

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
        return int(events.start[pos]), events.end(pos)

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

    # -- colouring ---------------------------------------------------------------
    def category_time(self, mode: str) -> np.ndarray:
        """Total event time (ns) per colour category of `mode` (what the legend ranks by)."""
        cc = self.colours(mode)
        total = np.zeros(len(cc.names), dtype=np.float64)
        for tname, codes in cc.codes.items():
            if len(codes):
                total += np.bincount(codes, weights=self.tables[tname].dur, minlength=len(cc.names))
        return total

    def colours(self, mode: str) -> ColourCodes:
        """Category names and per-event codes for colouring by opcode, kernel, op or layer."""
        if mode not in COLOUR_MODES:
            raise UserError(f"unknown colour mode '{mode}'; choose one of {', '.join(COLOUR_MODES)}.")
        got = self._colours.get(mode)
        if got is None:
            got = self._colours[mode] = self._build_colours(mode)
        return got

    def _build_colours(self, mode: str) -> ColourCodes:
        names: dict[str, int] = {}

        def assign(values: list[str] | np.ndarray, local: np.ndarray) -> np.ndarray:
            """Global codes for `values[local]`; only names actually used get a code."""
            if len(local) == 0:
                return np.zeros(0, np.int32)
            used = np.bincount(local, minlength=len(values)) > 0
            remap = np.zeros(len(values), dtype=np.int32)
            for i in np.flatnonzero(used):
                remap[i] = names.setdefault(str(values[i]), len(names))
            return remap[local]

        codes: dict[str, np.ndarray] = {}
        h = self.kernel_ops
        none = np.array([NO_NAME], dtype=object)
        for tname, events in self.tables.items():
            if mode == "opcode":
                col = {"instructions": "opcode", "kernels": "name", "collectives": "kind"}.get(tname)
                if col is not None:
                    local, vocab = events.sorted_codes(col)
                    codes[tname] = assign(vocab, local)
                else:  # dma: by direction
                    s, sv = events.sorted_codes("src")
                    d, dv = events.sorted_codes("dst")
                    pairs = [f"DMA {a}\u2192{b}" for a in sv for b in dv]
                    codes[tname] = assign(pairs, s.astype(np.int64) * max(len(dv), 1) + d)
                continue
            assert h is not None
            if tname == "collectives":
                orow = h.op_row(events.sorted_column("op_id"))
                source = h.op_names if mode in ("op", "kernel") else h.op_layer
                vals = np.concatenate([source, none])
                codes[tname] = assign(vals, np.where(orow >= 0, orow, len(vals) - 1))
                continue
            vals = np.concatenate([h.names[mode], none])

            def local_of(kernel_id: np.ndarray, missing: int = len(vals) - 1) -> np.ndarray:
                krow = h.kernel_row(kernel_id)
                return np.where(krow >= 0, krow, missing)

            codes[tname] = assign(vals, events.sorted_mapped("kernel_id", local_of))  # batch by batch
        return ColourCodes(mode, list(names), codes)
