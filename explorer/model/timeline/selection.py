"""What an area selection (some rows x a time range: a `Scope` with track ids and a
closed window) contains, as Perfetto shows it.

Busy time per selected engine row (union of its intervals, clipped to the range),
instruction counts by opcode (instructions that start inside the range), bytes
moved by DMA (each transfer prorated by its overlap with the range), average HBM
read/write bandwidth of the chips involved (time-weighted counter means) and
collective wait time (each rank's [arrive, start) clipped to the range).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from explorer.model.scope import Scope
from explorer.model.timeline.trace_index import EventTable, TraceIndex
from simcore.trace.schema import COUNTER_HBM_READ, COUNTER_HBM_WRITE


def area_scope(track_ids: tuple[int, ...] | list[int], t0: int, t1: int) -> Scope:
    """The GUI's area selection: rows (in screen order) x [t0, t1), as a Scope."""
    return Scope(int(t0), int(t1), track_ids=tuple(track_ids))


def is_area(scope: Scope | None) -> bool:
    """A selection worth summarising: some rows and a window that is not empty."""
    return scope is not None and bool(scope.track_ids) and scope.duration_ns > 0


def selection_scope(span: tuple[int, int], area: Scope | None, visible: tuple[float, float] | None) -> Scope:
    """What "the selection" is when nothing else is said: the area selection, else the visible
    range cut to the trace (whole nanoseconds, the end rounded out), else the whole trace."""
    lo, hi = int(span[0]), int(span[1])
    if is_area(area):
        return area
    if visible is None:
        return Scope(lo, hi)
    t0, t1 = visible
    return Scope(max(int(t0), lo), min(int(t1) + 1, hi))


def covers_trace(scope: Scope, span: tuple[int, int]) -> bool:
    """Whether a scope is the whole trace (every track, the whole span): its summary is the trace's."""
    return scope.track_ids is None and scope.chips is None and scope.cores is None \
        and scope.t0 <= span[0] and scope.t1 >= span[1]


@dataclass
class SelectionSummary:
    selection: Scope
    busy_ns: dict[int, int] = field(default_factory=dict)  # track id -> busy ns in range
    busy_percent: dict[int, float] = field(default_factory=dict)
    opcode_counts: dict[str, int] = field(default_factory=dict)  # by count, descending
    instructions: int = 0
    flops: int = 0
    dma_bytes: float = 0.0
    dma_transfers: int = 0
    hbm_read_gbps: float | None = None
    hbm_write_gbps: float | None = None
    collective_wait_ns: int = 0
    collectives: int = 0

    @property
    def dma_gbps(self) -> float:
        d = max(self.selection.duration_ns, 0)
        return self.dma_bytes / d if d else 0.0  # bytes/ns == GB/s


def summarize_area(index: TraceIndex, sel: Scope) -> SelectionSummary:
    """The summary of an area selection (vectorised over the selected events)."""
    out = SelectionSummary(sel)
    t0, t1 = sel.t0, sel.t1
    if t1 <= t0:
        return out
    counts: dict[str, int] = {}
    chips: set[int] = set()
    for tid in sel.track_ids:
        info = index.tracks.get(tid)
        if info is not None:
            chips.add(info.chip)
        lane = index.lanes.get(tid)
        if lane is None:
            continue
        busy = lane.coverage.busy_in(t0, t1)
        out.busy_ns[tid] = busy
        out.busy_percent[tid] = 100.0 * busy / (t1 - t0)
        a, b = lane.visible(t0, t1)
        if b <= a:
            continue
        ev = lane.events
        lo, hi = lane.lo + a, lane.lo + b
        if ev.name == "instructions":
            starts = lane.start[a:b]
            inside = (starts >= t0) & (starts < t1)
            codes, vocab = ev.sorted_code_rows("opcode", lo, hi)
            n = np.bincount(codes[inside], minlength=len(vocab))
            for i in np.flatnonzero(n):
                counts[vocab[i]] = counts.get(vocab[i], 0) + int(n[i])
            out.instructions += int(inside.sum())
            out.flops += int(_col(ev, "flops", lo, hi)[inside].sum())
        elif ev.name == "dma":
            s, d = lane.start[a:b], lane.dur[a:b]
            nbytes = _col(ev, "bytes", lo, hi).astype(np.float64)
            ov = np.clip(np.minimum(s + d, t1) - np.maximum(s, t0), 0, None).astype(np.float64)
            frac = np.where(d > 0, ov / np.maximum(d, 1), ((s >= t0) & (s < t1)).astype(np.float64))
            out.dma_bytes += float((nbytes * frac).sum())
            out.dma_transfers += int((frac > 0).sum())
        elif ev.name == "collectives":
            arrive = lane.start[a:b]
            begin = _col(ev, "start_ns", lo, hi)
            w = np.clip(np.minimum(begin, t1) - np.maximum(arrive, t0), 0, None)
            out.collective_wait_ns += int(w.sum())
            out.collectives += b - a
    out.opcode_counts = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    read = write = 0.0
    found = False
    for tid, series in index.counters.items():
        info = index.tracks[tid]
        if info.chip not in chips:
            continue
        if series.name == COUNTER_HBM_READ:
            read += series.mean_in(t0, t1)
            found = True
        elif series.name == COUNTER_HBM_WRITE:
            write += series.mean_in(t0, t1)
            found = True
    if found:
        out.hbm_read_gbps, out.hbm_write_gbps = read, write
    return out


def _col(ev: EventTable, name: str, lo: int, hi: int) -> np.ndarray:
    """Column values of sorted positions [lo, hi) without copying or sorting the whole column."""
    return ev.sorted_rows(name, lo, hi)
