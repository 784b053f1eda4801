"""Trace rows of a capture: tracks, kernels, the op hierarchy, instructions, DMA transfers,
flows and counters, collected while ops are simulated and written at the end.

Instruction and DMA rows are kept as the detailed cores' timed programs (core_rows.py) and
written grouped by track (the trace-format contract), one track's rows built at a time; flows
stream to the writer as kernels run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.capture.allocations import AllocationRows
from simcore.capture.column_pool import ColumnPool
from simcore.capture.core_rows import DMA_VOCABS, INSTR_VOCABS, DetailRows, SharedColumns, track_rows
from simcore.hardware import Hardware
from simcore.lowering.kernels import KernelSpec
from simcore.lowering.engines import ENGINE_TRACKS, dma_track_name
from simcore.lowering.program import DTYPES, OPCODES, Program, Vocab
from simcore.timing.window import Timed
from simcore.trace import TraceWriter
from simcore.trace.background import BackgroundWriter
from simcore.trace import schema as S
from simcore.workloads.ops import Op, Workload

MAX_HBM_BINS = 20000
RUNTIME_TRACK = "Runtime"  # a core's runtime row (track kind "runtime"), as Neuron Explorer's system view shows


def bin_edges(t_end: float, width: float) -> np.ndarray:
    """Bin edges 0, width, 2 width, ... and the trace end (the last bin may be shorter)."""
    inner = np.arange(1, int(np.ceil(max(t_end, 1) / width))) * width
    return np.concatenate([[0.0], inner, [float(max(t_end, 1))]])


def spread_bytes(a: np.ndarray, width: np.ndarray, nbytes: list[np.ndarray], edges: np.ndarray) -> list[np.ndarray]:
    """Bytes per bin [edges[i], edges[i+1]) of disjoint intervals [a, a + width) ending by edges[-1], each
    interval's bytes spread evenly over it, so a bin holds exactly the bytes of the time it covers.
    `edges` are bin_edges(): equal bins but the last. Intervals no wider than a bin touch at most two
    bins (one bincount each); wider ones go through the piecewise-linear cumulative bytes."""
    nb = len(edges) - 1
    step = float(edges[1] - edges[0]) if nb > 1 else float(edges[-1] - edges[0])
    a = np.asarray(a, np.float64)
    width = np.maximum(np.asarray(width, np.float64), 1e-9)
    if not len(a):
        return [np.zeros(nb) for _ in nbytes]
    if float(width.max()) <= step:
        i0 = np.minimum((a // step).astype(np.int64), nb - 1)
        f0 = np.clip((edges[i0 + 1] - a) / width, 0.0, 1.0)
        i1 = np.minimum(i0 + 1, nb - 1)
        return [np.bincount(i0, v * f0, minlength=nb)[:nb] + np.bincount(i1, v * (1.0 - f0), minlength=nb)[:nb]
                for v in (np.asarray(x, np.float64) for x in nbytes)]
    o = np.argsort(a, kind="stable")
    a, width = a[o], width[o]
    k = np.searchsorted(a, edges, side="right") - 1
    kk = np.maximum(k, 0)
    frac = np.where(k >= 0, np.clip((edges - a[kk]) / width[kk], 0.0, 1.0), 0.0)
    out = []
    for v in nbytes:
        v = np.asarray(v, np.float64)[o]
        before = np.concatenate([[0.0], np.cumsum(v)])  # bytes of the intervals before interval k
        out.append(np.diff(np.where(k >= 0, before[kk] + v[kk] * frac, 0.0)))
    return out


def binned_bandwidth(served: list, t_end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Average read and write GB/s per time bin from the bytes each window's slices served."""
    width = max(1000, int(np.ceil(max(t_end, 1) / MAX_HBM_BINS)))
    edges = bin_edges(t_end, width)
    rd = np.zeros(len(edges) - 1)
    wr = np.zeros(len(edges) - 1)
    for s in served:  # window by window: the busy slices only (idle ones add nothing)
        busy = np.flatnonzero((s.read > 0) | (s.write > 0))
        if not len(busy):
            continue
        a, w = s.intervals(busy)
        r, x = spread_bytes(a, w, [s.read[busy], s.write[busy]], edges)
        rd += r
        wr += x
    dt = np.diff(edges)
    return edges[:-1].astype(np.int64), rd / dt, wr / dt


class TraceTables:
    def __init__(self, hw: Hardware, detail_cores: list[int], wl: Workload, chip: int = 0,
                 writer: TraceWriter | BackgroundWriter | None = None) -> None:
        """With `writer`, flows are written as kernels run (the other tables by `write`)."""
        self.hw, self.wl, self.chip = hw, wl, chip
        self.detail = set(detail_cores)
        n = hw.cores_per_chip
        Q = hw.dma_queues
        rows: list[tuple[int, int, str, str, str]] = []
        self.kernel_track: dict[int, int] = {}
        self.engine_base: dict[int, int] = {}
        self.sbuf_track: dict[int, int] = {}
        self.psum_track: dict[int, int] = {}
        self.throttle_track: dict[int, int] = {}

        def add(core: int, kind: str, name: str, unit: str = "") -> int:
            rows.append((chip, core, kind, name, unit))
            return len(rows) - 1

        self.runtime_track: dict[int, int] = {}
        for core in range(n):
            self.runtime_track[core] = add(core, "runtime", RUNTIME_TRACK)
            self.kernel_track[core] = add(core, "kernel", "Kernels")
            if core in self.detail:
                self.engine_base[core] = len(rows)
                for kind, name in ENGINE_TRACKS:
                    add(core, kind, name)
                for q in range(Q):
                    add(core, "dma_queue", dma_track_name(q))
        for core in range(n):
            self.sbuf_track[core] = add(core, "counter", S.COUNTER_SBUF, "bytes")
            self.psum_track[core] = add(core, "counter", S.COUNTER_PSUM, "bytes")
            self.throttle_track[core] = add(core, "counter", S.COUNTER_THROTTLE, "%")
        self.hbm_read_track = add(-1, "counter", S.COUNTER_HBM_READ, "GB/s")
        self.hbm_write_track = add(-1, "counter", S.COUNTER_HBM_WRITE, "GB/s")
        self.link_track = add(-1, "counter", S.COUNTER_LINK, "GB/s")
        self.tracks = rows
        self.next_id = 0
        self.kernel_names = Vocab()
        self.kernel_rows: list[tuple] = []
        self.detail_rows = DetailRows(writer)
        self.allocations = AllocationRows()
        self.runtime_rows: list[tuple[int, int, int, int]] = []  # track, start, end, opcode code
        self.hbm: list = []
        self.samples: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        # op hierarchy: model root 0, layers and ops created as they first run
        self.op_rows: dict[int, list] = {0: [0, -1, "model", wl.display, "model", None, None]}
        self.layer_op: dict[int, int] = {}
        self.op_of_index: dict[int, int] = {}
        self.end_ns = 0

    # -- collecting --------------------------------------------------------------------------
    def _op_id(self, op: Op, index: int) -> int:
        oid = self.op_of_index.get(index)
        if oid is not None:
            return oid
        parent = 0
        if op.layer >= 0:
            parent = self.layer_op.get(op.layer, -1)
            if parent < 0:
                parent = len(self.op_rows)
                self.layer_op[op.layer] = parent
                name = self.wl.layer_names.get(op.layer, f"layer {op.layer}")
                self.op_rows[parent] = [parent, 0, "layer", name, "layer", None, None]
        oid = len(self.op_rows)
        self.op_rows[oid] = [oid, parent, "op", op.name, op.kind, None, None]
        self.op_of_index[index] = oid
        return oid

    def _extend(self, oid: int, start: int, end: int) -> None:
        while oid >= 0:
            row = self.op_rows[oid]
            row[5] = start if row[5] is None else min(row[5], start)
            row[6] = end if row[6] is None else max(row[6], end)
            oid = row[1]

    def add_hbm(self, served) -> None:
        self.hbm.append(served)

    def add_runtime(self, cores, opcode: str, start: float, end: float) -> None:
        """One runtime interval (simcore.timing.runtime) on the `Runtime` row of each of `cores`."""
        a, b, code = int(round(start)), int(round(end)), OPCODES.code(opcode)
        self.runtime_rows += [(self.runtime_track[c], a, b, code) for c in cores]
        self.end_ns = max(self.end_ns, b)

    def _sample(self, track: int, t: np.ndarray, v: np.ndarray) -> None:
        self.samples.setdefault(track, []).append((np.asarray(t, np.int64), np.asarray(v, np.float64)))

    def add_kernels(self, op: Op, index: int, spec: KernelSpec, p: Program, timed: Timed, cores: list[int]) -> None:
        s = np.rint(timed.start).astype(np.int64)
        e = np.rint(timed.end).astype(np.int64)
        k0, k1 = int(s.min()), int(e.max())
        self.end_ns = max(self.end_ns, k1)
        oid = self._op_id(op, index)
        self._extend(oid, k0, k1)
        flops = int(p.flops.sum())
        hr, hw_ = int(p.hbm_read.sum()), int(p.hbm_write.sum())
        name = self.kernel_names.code(spec.name)
        dtype = DTYPES.code(spec.dtype)
        pe = np.flatnonzero(p.pe)
        if len(pe):
            val = timed.rate[pe].astype(np.float64) * 100.0
            keep = np.r_[True, np.abs(np.diff(val)) > 0.5]
            th_t, th_v = s[pe][keep], np.round(val[keep], 1)
        run = None  # the group's schedule as detail rows, shared by its detailed cores
        for core in cores:
            kid = len(self.kernel_rows)
            self.kernel_rows.append((kid, self.kernel_track[core], core, oid, name, k0, k1 - k0, flops,
                                     int(spec.model_flops), hr, hw_, dtype))
            self._sample(self.sbuf_track[core], [k0, k1], [float(p.sbuf_bytes), 0.0])
            self._sample(self.psum_track[core], [k0, k1], [float(p.psum_bytes), 0.0])
            if len(pe):
                self._sample(self.throttle_track[core], th_t, th_v)
            if core in self.detail:
                if run is None:
                    run = self.detail_rows.run(p, s, e)
                self.detail_rows.add(core, run, kid, self.next_id)
                self.allocations.add(self.chip, core, kid, p, s, e)
                self.next_id += len(p)

    # -- writing -----------------------------------------------------------------------------
    def write(self, w: TraceWriter | BackgroundWriter) -> None:
        tr = self.tracks
        w.write("tracks", {
            "track_id": np.arange(len(tr), dtype=np.int32), "chip": np.array([r[0] for r in tr], np.int32),
            "core": np.array([r[1] for r in tr], np.int32), "kind": [r[2] for r in tr], "name": [r[3] for r in tr],
            "unit": [r[4] for r in tr],
        })
        runtime = self._runtime_events()
        d = self.detail_rows
        reuse = len(d.per_core) > 1  # each detailed core's tracks have the sizes of the one before
        self._write_events(w, "instructions", d.tracks(self.engine_base, dma=False), runtime, INSTR_VOCABS, False, reuse)
        self._write_events(w, "dma", d.tracks(self.engine_base, dma=True), {}, DMA_VOCABS, True, reuse)
        self._write_kernels(w)
        self._write_ops(w)
        self._write_counters(w)
        allocations = self.allocations.columns()
        if allocations is not None:
            w.write("sbuf_allocations", allocations)
        d.flows.finish(w)

    def _runtime_events(self) -> dict[int, dict[str, np.ndarray]]:
        """The Runtime rows as instructions of their tracks (ids after every engine event)."""
        out: dict[int, dict[str, np.ndarray]] = {}
        if not self.runtime_rows:
            return out
        a = np.array(self.runtime_rows, np.int64)
        a = a[np.lexsort((a[:, 1], a[:, 0]))]
        ids = self.next_id + np.arange(len(a), dtype=np.int64)
        self.next_id += len(a)
        for track in np.unique(a[:, 0]):
            sel = np.flatnonzero(a[:, 0] == track)
            n = len(sel)
            out[int(track)] = {
                "id": ids[sel], "start_ns": a[sel, 1], "dur_ns": a[sel, 2] - a[sel, 1], "opcode": a[sel, 3],
                "kernel_id": np.full(n, -1, np.int64), "flops": np.zeros(n, np.int64), "bytes": np.zeros(n, np.int64),
                "dtype": np.full(n, DTYPES.code("bf16"), np.int64)}
        self.runtime_rows = []
        return out

    @staticmethod
    def _write_events(w: TraceWriter, table: str, chunks: dict[int, list], whole: dict[int, dict[str, np.ndarray]],
                      vocabs: dict[str, list[str]], dma: bool, reuse: bool = True) -> None:
        """One record batch per track, tracks in id order: grouped by track, and each track's rows one
        chunk, which a reader maps as a numpy view (a track split over batches must be copied whole
        to be searched as one array, as the timeline does). `chunks` are detailed cores' engine tracks
        (built here, one at a time), `whole` tracks whose rows are already columns."""
        # a track written lends its memory to a later one of its size (another detailed core's); with one
        # detailed core no size comes back, and blocks kept would only take memory the page cache could reuse
        pool = ColumnPool() if reuse else None
        shared = SharedColumns(chunks.values())  # the cores of a group: the same columns but their ids
        for track in sorted(set(chunks) | set(whole)):
            if track in chunks and track in whole:
                raise AssertionError(f"track {track} holds both runtime and engine rows")
            if track in whole:
                cols = {"track_id": np.full(len(whole[track]["id"]), track, np.int32), **whole[track]}
            else:
                cols = track_rows(chunks.pop(track), dma, pool, track, shared)
            w.write(table, {k: (v, vocabs[k]) if k in vocabs else v for k, v in cols.items()})
            del cols  # (the block goes back to the pool once the writer is done with it)

    def _write_kernels(self, w: TraceWriter) -> None:
        if not self.kernel_rows:
            return
        a = np.array(self.kernel_rows, dtype=np.int64)
        order = np.lexsort((a[:, 5], a[:, 1]))
        a = a[order]
        w.write("kernels", {
            "kernel_id": a[:, 0], "track_id": a[:, 1], "chip": np.full(len(a), self.chip, np.int32), "core": a[:, 2],
            "op_id": a[:, 3], "name": (a[:, 4], self.kernel_names.values), "start_ns": a[:, 5], "dur_ns": a[:, 6],
            "flops": a[:, 7], "model_flops": a[:, 8], "hbm_read_bytes": a[:, 9], "hbm_write_bytes": a[:, 10],
            "dtype": (a[:, 11], DTYPES.values),
        })

    def _write_ops(self, w: TraceWriter) -> None:
        rows = [r for r in self.op_rows.values() if r[5] is not None]
        w.write("ops", {
            "op_id": np.array([r[0] for r in rows], np.int64), "parent_id": np.array([r[1] for r in rows], np.int64),
            "level": [r[2] for r in rows], "name": [r[3] for r in rows], "kind": [r[4] for r in rows],
            "start_ns": np.array([r[5] for r in rows], np.int64),
            "dur_ns": np.array([r[6] - r[5] for r in rows], np.int64),
        })

    def _write_counters(self, w: TraceWriter) -> None:
        end = self.end_ns
        t, rd, wr = binned_bandwidth(self.hbm, end)
        self._sample(self.hbm_read_track, np.r_[t, end], np.r_[rd, 0.0])
        self._sample(self.hbm_write_track, np.r_[t, end], np.r_[wr, 0.0])
        self._sample(self.link_track, [0, end], [0.0, 0.0])
        for track in sorted(self.samples):
            parts = self.samples[track]
            t = np.concatenate([p[0] for p in parts])
            v = np.concatenate([p[1] for p in parts])
            order = np.argsort(t, kind="stable")
            t, v = t[order], v[order]
            if len(t) > 1:  # of samples at the same time, keep the last (a kernel ending where the next starts)
                keep = np.r_[t[1:] != t[:-1], True]
                t, v = t[keep], v[keep]
            w.write("counters", {"track_id": np.full(len(t), track, np.int32), "time_ns": t, "value": v})
