"""Trace tables of a multi-chip capture, written chip by chip (every per-chip table partitioned).

A chip holds ranks (logical cores of --lnc physical cores). Per physical core of a rank: a
`Kernels` and a `Runtime` row, engine, DMA-queue and `CC` rows per instruction-detail core
of an instruction-detail chip, `State Buffer Usage`, `PSUM Usage` and `Throttling`; per
rank a `CC` row (its part in every collective; `tracks.lcore` says which logical core);
per chip `HBM Read/Write Bandwidth` (its ranks together) and `Link Bandwidth` (bytes the
chip sent over its chip-to-chip links). A rank's rows are its class's simulated rows mapped
onto the composed timeline, one numpy pass per table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.capture.allocations import AllocationRows
from simcore.capture.multichip.chipsim import ChipSim
from simcore.capture.multichip.compose import Timeline
from simcore.capture.program_rows import cross_engine_flows, rows_by_track
from simcore.capture.tables import RUNTIME_TRACK, bin_edges, spread_bytes
from simcore.collectives import bus_factor
from simcore.hardware import Hardware
from simcore.lowering.engines import ENGINE_TRACKS, dma_track_name
from simcore.lowering.program import DTYPES, MEMORIES, OPCODES, Vocab
from simcore.parallel.plan import CommRef, Compute, StepPlan
from simcore.trace import TraceWriter
from simcore.trace import schema as S

MAX_BINS = 4000
MIN_BIN_NS = 1000.0


@dataclass
class RankLayout:
    """Track ids of one rank, indexed by its physical cores 0..lnc-1."""

    kernel: np.ndarray
    runtime: np.ndarray
    engine_base: dict[int, int]  # detail core (rank-local) -> first engine track
    cc_core: dict[int, int]      # detail core (rank-local) -> its CC track
    sbuf: np.ndarray
    psum: np.ndarray
    throttle: np.ndarray
    cc: int


@dataclass
class ChipLayout:
    """Chip-level track ids."""

    hbm_read: int
    hbm_write: int
    link: int


def _collapse_sorted(track: np.ndarray, t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows sorted by (track, time): keep the last of samples at the same time, drop repeats of a value."""
    if len(t) > 1:
        keep = np.r_[(t[1:] != t[:-1]) | (track[1:] != track[:-1]), True]
        track, t, v = track[keep], t[keep], v[keep]
    if len(t) > 1:
        keep = np.r_[True, (v[1:] != v[:-1]) | (track[1:] != track[:-1])]
        track, t, v = track[keep], t[keep], v[keep]
    return track, t, v


class MultiChipTables:
    def __init__(self, hw: Hardware, plan: StepPlan, sims: list[ChipSim], class_of: np.ndarray,
                 class_programs: list[list], tl: Timeline, detail_chips: list[int], detail_cores: list[int],
                 display: str) -> None:
        self.hw, self.plan, self.sims, self.class_of, self.tl = hw, plan, sims, class_of, tl
        self.topo = plan.topo
        self.lnc, self.per_chip = self.topo.lnc, self.topo.per_chip
        self.detail_chips = set(detail_chips)
        self.detail_cores = list(detail_cores)
        self.display = display
        self.end_ns = int(np.ceil(tl.end_ns))
        self._tracks()
        self._ops(class_programs)
        self._orders: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.kernel_names = Vocab()
        self.allocations = AllocationRows()
        self.class_name_map = [np.array([self.kernel_names.code(n) for n in s.names] or [0], np.int64) for s in sims]

    def ranks_of(self, chip: int) -> range:
        return range(chip * self.per_chip, min(self.plan.ranks, (chip + 1) * self.per_chip))

    def base_core(self, rank: int) -> int:
        """The rank's first physical core on its chip."""
        return (rank % self.per_chip) * self.lnc

    # -- tracks -----------------------------------------------------------------------------
    def _tracks(self) -> None:
        rows: list[tuple[int, int, int, str, str, str]] = []
        self.layout: list[RankLayout] = []
        self.chip_layout: list[ChipLayout] = []
        n = self.lnc
        Q = self.hw.dma_queues

        def add(chip: int, core: int, lcore: int, kind: str, name: str, unit: str = "") -> int:
            rows.append((chip, core, lcore, kind, name, unit))
            return len(rows) - 1

        for chip in range(self.topo.chips):
            detail = chip in self.detail_chips
            ranks = self.ranks_of(chip)
            ccs = {r: add(chip, -1, r % self.per_chip, "cc", "CC" if self.per_chip == 1 else f"CC rank {r}")
                   for r in ranks}
            for r in ranks:
                lc, base = r % self.per_chip, self.base_core(r)
                kernel = np.zeros(n, np.int64)
                runtime = np.zeros(n, np.int64)
                engine_base: dict[int, int] = {}
                cc_core: dict[int, int] = {}
                for i in range(n):
                    core = base + i
                    runtime[i] = add(chip, core, lc, "runtime", RUNTIME_TRACK)
                    kernel[i] = add(chip, core, lc, "kernel", "Kernels")
                    if detail and core in self.detail_cores:
                        engine_base[i] = len(rows)
                        for kind, name in ENGINE_TRACKS:
                            add(chip, core, lc, kind, name)
                        for q in range(Q):
                            add(chip, core, lc, "dma_queue", dma_track_name(q))
                        cc_core[i] = add(chip, core, lc, "cc", "CC")
                sbuf, psum, thr = (np.zeros(n, np.int64) for _ in range(3))
                for i in range(n):
                    sbuf[i] = add(chip, base + i, lc, "counter", S.COUNTER_SBUF, "bytes")
                    psum[i] = add(chip, base + i, lc, "counter", S.COUNTER_PSUM, "bytes")
                    thr[i] = add(chip, base + i, lc, "counter", S.COUNTER_THROTTLE, "%")
                self.layout.append(RankLayout(kernel, runtime, engine_base, cc_core, sbuf, psum, thr, ccs[r]))
            hr = add(chip, -1, -1, "counter", S.COUNTER_HBM_READ, "GB/s")
            hwr = add(chip, -1, -1, "counter", S.COUNTER_HBM_WRITE, "GB/s")
            link = add(chip, -1, -1, "counter", S.COUNTER_LINK, "GB/s")
            self.chip_layout.append(ChipLayout(hr, hwr, link))
        self.track_rows = rows

    # -- op hierarchy -------------------------------------------------------------------------
    def _ops(self, class_programs: list[list]) -> None:
        rows: list[list] = [[0, -1, "model", self.display, "model"]]
        layer_row: dict[int, int] = {}
        self.op_id: dict[tuple, int] = {}
        for key, kind in self.plan.op_kinds.items():
            layer, name = key
            parent = 0
            if layer >= 0:
                parent = layer_row.get(layer, -1)
                if parent < 0:
                    parent = layer_row[layer] = len(rows)
                    rows.append([parent, 0, "layer", self.plan.layer_names.get(layer, f"layer {layer}"), "layer"])
            self.op_id[key] = len(rows)
            rows.append([len(rows), parent, "op", name, kind])
        self.op_rows = rows
        self.op_start = np.full(len(rows), np.iinfo(np.int64).max, np.int64)
        self.op_end = np.full(len(rows), np.iinfo(np.int64).min, np.int64)
        self.class_op_ids = [np.array([self.op_id[it.key] for it in prog if isinstance(it, Compute)] or [0], np.int64)
                             for prog in class_programs]
        self.coll_op = np.array([self.op_id[c.key] for c in self.plan.collectives] or [0], np.int64)

    # -- writing ------------------------------------------------------------------------------
    def write(self, w: TraceWriter, progress=None) -> None:
        tr = self.track_rows
        w.write("tracks", {
            "track_id": np.arange(len(tr), dtype=np.int32), "chip": np.array([r[0] for r in tr], np.int32),
            "core": np.array([r[1] for r in tr], np.int32), "lcore": np.array([r[2] for r in tr], np.int32),
            "kind": [r[3] for r in tr], "name": [r[4] for r in tr], "unit": [r[5] for r in tr],
        })
        self.next_kernel = 0
        self.next_event = 0
        # one counter bin width for every chip: at least a microsecond, at most MAX_BINS over the step, and
        # no narrower than a mapped HBM slice or a ledger slice
        self.fmax = max(1.0, float(self.tl.factor.max()) if self.tl.factor.size else 1.0)
        slice_max = max((float(x.hbm["width"].max()) for x in self.sims if len(x.hbm["t"])), default=0.0)
        self.bin_ns = max(MIN_BIN_NS, max(self.end_ns, 1) / MAX_BINS, slice_max * self.fmax, self.tl.ledger.slice_ns)
        self._hbm_chunks: dict[int, tuple[np.ndarray, ...]] = {}
        comms = [[it for it in prog if isinstance(it, CommRef) and not it.wait] for prog in self.plan.programs]
        for chip in range(self.topo.chips):
            buf = _ChipBatches(w)   # a chip's ranks' rows of a table go out as one batch
            hbm = []
            for r in self.ranks_of(chip):
                hbm.append(self._rank(buf, chip, r, comms[r]))
            self._chip_counters(buf, chip, hbm)
            buf.flush(chip)
            if progress is not None:
                progress(chip + 1, self.topo.chips)
        self._write_ops(w)

    def _map(self, rank: int, sim: ChipSim, t: np.ndarray, seg: np.ndarray) -> np.ndarray:
        f = self.tl.factor[rank, seg]
        return self.tl.seg_real[rank][seg] + (t - sim.seg_start[seg]) * f

    def _rank(self, w: TraceWriter, chip: int, rank: int, comms: list[CommRef]) -> tuple:
        """Write one rank's rows; returns its HBM slices on the real timeline (start, width, read, write)."""
        k = int(self.class_of[rank])
        sim = self.sims[k]
        lay = self.layout[rank]
        kern = sim.kern
        n = len(kern["start"])
        seg = kern["seg"]
        start = np.rint(self._map(rank, sim, kern["start"], seg)).astype(np.int64)
        end = np.maximum(np.rint(self._map(rank, sim, kern["end"], seg)).astype(np.int64), start)
        op_ids = self.class_op_ids[k][kern["op"]]
        kid = self.next_kernel + np.arange(n, dtype=np.int64)
        self.next_kernel += n
        core = kern["core"]
        if n:
            w.write("kernels", {
                "kernel_id": kid, "track_id": lay.kernel[core].astype(np.int32), "chip": np.full(n, chip, np.int32),
                "core": (core + self.base_core(rank)).astype(np.int32), "op_id": op_ids,
                "name": (self.class_name_map[k][kern["name"]], self.kernel_names.values),
                "start_ns": start, "dur_ns": end - start, "flops": kern["flops"], "model_flops": kern["model_flops"],
                "hbm_read_bytes": kern["hbm_read"], "hbm_write_bytes": kern["hbm_write"],
                "dtype": (kern["dtype"], DTYPES.values),
            }, chip=chip)
            np.minimum.at(self.op_start, op_ids, start)
            np.maximum.at(self.op_end, op_ids, end)
        self._runtime(w, chip, rank, sim)
        self._collectives(w, chip, rank, comms)
        self._counters(w, chip, rank, sim, start, end)
        if chip in self.detail_chips:
            self._detail(w, chip, rank, sim, kid, comms)
        t, width, seg, rd, wr = self._class_hbm(k)
        if not len(t):
            return ()
        return self._map(rank, sim, t, seg), width * self.tl.factor[rank, seg], rd, wr

    def _class_hbm(self, k: int) -> tuple[np.ndarray, ...]:
        """A class's HBM slices, merged into chunks of at most a counter bin once mapped (bin / the
        largest time factor) within each segment: the counters bin them anyway, a chunk's bytes never
        exceed what its span allows, and a 2.6 s step's microsecond slices become a few thousand."""
        got = self._hbm_chunks.get(k)
        if got is not None:
            return got
        sim = self.sims[k]
        h = sim.hbm
        t, width, seg = h["t"], h["width"], h["seg"].astype(np.int64)
        w = self.bin_ns / self.fmax
        if not len(t) or float(width.max()) * 4 > w:
            got = (t, width, seg, h["read"], h["write"])
        else:
            idx = np.floor((t - sim.seg_start[seg]) / w).astype(np.int64)
            key = seg * (int(idx.max()) + 1) + idx
            _, first, inv = np.unique(key, return_index=True, return_inverse=True)
            s_seg = seg[first]
            start = sim.seg_start[s_seg] + idx[first] * w
            end = np.minimum(start + w, np.maximum(sim.seg_end[s_seg], start + 1e-9))
            got = (start, np.maximum(end - start, 1e-9), s_seg, np.bincount(inv, h["read"]), np.bincount(inv, h["write"]))
        self._hbm_chunks[k] = got
        return got

    def _position(self, coll: int, rank: int) -> int:
        """The rank's place in collective `coll`'s group."""
        return self.plan.collectives[coll].plan.position(rank)

    def _runtime(self, w: TraceWriter, chip: int, rank: int, sim: ChipSim) -> None:
        """The rank's Runtime rows (barriers, launches), mapped onto its timeline like its kernels."""
        r = sim.runtime
        n = len(r.get("core", ()))
        if not n:
            return
        s = np.rint(self._map(rank, sim, r["start"], r["seg"])).astype(np.int64)
        e = np.maximum(np.rint(self._map(rank, sim, r["end"], r["seg"])).astype(np.int64), s)
        ids = self.next_event + np.arange(n, dtype=np.int64)
        self.next_event += n
        rows = {"id": ids, "start_ns": s, "dur_ns": e - s, "opcode": r["opcode"], "kernel_id": np.full(n, -1, np.int64),
                "flops": np.zeros(n, np.int64), "bytes": np.zeros(n, np.int64),
                "dtype": np.full(n, DTYPES.code("bf16"), np.int64)}
        tracks = self.layout[rank].runtime[r["core"]]
        per_track = {int(t): [{k: v[tracks == t] for k, v in rows.items()}] for t in np.unique(tracks)}
        _write_grouped(w, "instructions", per_track, {"opcode": OPCODES.values, "dtype": DTYPES.values}, chip)

    def _collectives(self, w: TraceWriter, chip: int, rank: int, comms: list[CommRef]) -> None:
        if not comms:
            return
        tl, colls = self.tl, self.plan.collectives
        rows = []
        for ref in comms:
            c = colls[ref.coll]
            r = self._position(ref.coll, rank)
            hbm = float(c.plan.demand_out[r, self.topo.hbm])
            rows.append((ref.coll, r, c.plan.ranks, tl.arrive[ref.coll][r], tl.start[ref.coll], tl.end[ref.coll][r],
                         int(c.plan.nbytes[r]), bus_factor(c.kind, c.plan.ranks), hbm * c.plan.hbm_read,
                         hbm * (1.0 - c.plan.hbm_read)))
        a = np.array(rows, np.float64)
        arrive = np.rint(a[:, 3]).astype(np.int64)
        start = np.maximum(np.rint(a[:, 4]).astype(np.int64), arrive)
        end = np.maximum(np.rint(a[:, 5]).astype(np.int64), start)
        order = np.argsort(arrive, kind="stable")
        ids = a[:, 0].astype(np.int64)
        nbytes = a[:, 6].astype(np.int64)
        xfer = np.maximum(end - start, 1)
        algo = nbytes / xfer
        kinds = [colls[i].kind for i in ids]
        algs = [colls[i].plan.algorithm for i in ids]
        w.write("collectives", {
            "collective_id": ids[order], "track_id": np.full(len(ids), self.layout[rank].cc, np.int32),
            "chip": np.full(len(ids), chip, np.int32), "rank": a[order, 1].astype(np.int32),
            "group_size": a[order, 2].astype(np.int32), "kind": [kinds[i] for i in order],
            "algorithm": [algs[i] for i in order], "op_id": self.coll_op[ids[order]], "bytes": nbytes[order],
            "arrive_ns": arrive[order], "start_ns": start[order], "end_ns": end[order],
            "wait_ns": (start - arrive)[order], "algo_bw_gbps": algo[order], "bus_bw_gbps": (algo * a[:, 7])[order],
            "hbm_read_bytes": np.rint(a[order, 8]).astype(np.int64),
            "hbm_write_bytes": np.rint(a[order, 9]).astype(np.int64),
        }, chip=chip)
        op_ids = self.coll_op[ids]
        np.minimum.at(self.op_start, op_ids, start)
        np.maximum.at(self.op_end, op_ids, end)

    def _counter_order(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A class's per-core counter samples in (core, counter, time) order -- the order of their
        track ids -- as (which counter, core, index into [kernel starts, kernel ends, throttle
        samples]) plus values. Mapping onto a chip's timeline is monotonic, so the order holds for
        every chip of the class."""
        got = self._orders.get(k)
        if got is not None:
            return got
        sim = self.sims[k]
        kern = sim.kern
        n = len(kern["core"])
        nt = len(sim.thr["t"])
        zeros = np.zeros(n)
        counter, core, src, value, t = [], [], [], [], []
        for c, col in ((0, "sbuf"), (1, "psum")):  # value at the kernel's start, 0 at its end (interleaved)
            counter.append(np.full(2 * n, c))
            core.append(np.repeat(kern["core"], 2))
            src.append(np.stack([np.arange(n), n + np.arange(n)], axis=1).ravel())
            value.append(np.stack([kern[col].astype(np.float64), zeros], axis=1).ravel())
            t.append(np.stack([kern["start"], kern["end"]], axis=1).ravel())
        counter.append(np.full(nt, 2))
        core.append(sim.thr["core"].astype(np.int64))
        src.append(2 * n + np.arange(nt))
        value.append(sim.thr["v"])
        t.append(sim.thr["t"])
        counter, core, src, value, t = (np.concatenate(x) for x in (counter, core, src, value, t))
        order = np.lexsort((t, counter, core))
        got = self._orders[k] = (counter[order] * self.lnc + core[order], src[order], value[order])
        return got

    def _counters(self, w: TraceWriter, chip: int, rank: int, sim: ChipSim, start: np.ndarray, end: np.ndarray) -> None:
        """The rank's per-core counters: SBUF and PSUM usage, throttling."""
        lay = self.layout[rank]
        slot, src, value = self._counter_order(int(self.class_of[rank]))
        th = sim.thr
        thr_t = np.rint(self._map(rank, sim, th["t"], th["seg"])).astype(np.int64) if len(th["t"]) else np.zeros(0, np.int64)
        t_all = np.concatenate([start, end, thr_t])
        track_of_slot = np.concatenate([lay.sbuf, lay.psum, lay.throttle])
        tr, t, v = _collapse_sorted(track_of_slot[slot], t_all[src].astype(np.int64), value)
        w.write("counters", {"track_id": tr.astype(np.int32), "time_ns": t, "value": v}, chip=chip)

    def _chip_counters(self, w: TraceWriter, chip: int, hbm: list[tuple]) -> None:
        """The chip's HBM read/write bandwidth (its ranks together) and link bandwidth."""
        lay = self.chip_layout[chip]
        end_ns = max(self.end_ns, 1)
        hbm = [h for h in hbm if h]
        link_slice = self.tl.ledger.slice_ns
        edges = bin_edges(end_ns, self.bin_ns)
        dt = np.maximum(np.diff(edges), 1e-9)   # float edges may touch at the trace end
        c_rd, c_wr = self.tl.ledger.hbm_bytes(chip)   # the collectives' buffer traffic
        used = np.flatnonzero(c_rd + c_wr)
        if len(used):
            m = int(used[-1]) + 1
            ts = np.arange(m) * link_slice
            hbm.append((ts, np.minimum(ts + link_slice, end_ns) - ts, c_rd[:m], c_wr[:m]))
        if hbm:  # a window's slices are clipped to its end, so windows never share a bin's time
            cat = [np.concatenate([h[i] for h in hbm]) for i in range(4)]
            rd, wr = spread_bytes(cat[0], cat[1], [cat[2], cat[3]], edges)
            rd, wr = rd / dt, wr / dt
        else:
            rd = wr = np.zeros(len(dt))
        sent = self.tl.ledger.sent(chip)
        used = np.flatnonzero(sent)
        if len(used):
            m = int(used[-1]) + 1
            ts = np.arange(m) * link_slice
            (link,) = spread_bytes(ts, np.minimum(ts + link_slice, end_ns) - ts, [sent[:m]], edges)
            link = link / dt
        else:
            link = np.zeros(len(dt))
        grid = np.rint(edges[:-1]).astype(np.int64)
        tracks, times, values = [], [], []
        for tid, v in ((lay.hbm_read, rd), (lay.hbm_write, wr), (lay.link, link)):
            tracks.append(np.full(len(grid) + 1, tid, np.int64))
            times.append(np.r_[grid, end_ns])
            values.append(np.r_[v, 0.0])
        tr, t, v = _collapse_sorted(np.concatenate(tracks), np.concatenate(times).astype(np.int64),
                                    np.concatenate(values))
        w.write("counters", {"track_id": tr.astype(np.int32), "time_ns": t, "value": v}, chip=chip)

    def _detail(self, w: TraceWriter, chip: int, rank: int, sim: ChipSim, kid: np.ndarray, comms: list[CommRef]) -> None:
        lay = self.layout[rank]
        instr: dict[int, list[dict[str, np.ndarray]]] = {}
        dma: dict[int, list[dict[str, np.ndarray]]] = {}
        flows = []
        for d in sim.detail:
            if d.core not in lay.engine_base:
                continue
            p = d.program
            n = len(p)
            segs = np.full(n, d.seg, np.int64)
            s = np.rint(self._map(rank, sim, d.start, segs)).astype(np.int64)
            e = np.maximum(np.rint(self._map(rank, sim, d.end, segs)).astype(np.int64), s)
            ids = self.next_event + np.arange(n, dtype=np.int64)
            self.next_event += n
            for track, is_dma, rows in rows_by_track(p, ids, s, e, int(kid[d.kernel_row]), lay.engine_base[d.core]):
                (dma if is_dma else instr).setdefault(track, []).append(rows)
            self.allocations.add(chip, d.core + self.base_core(rank), int(kid[d.kernel_row]), p, s, e)
            f = cross_engine_flows(p, ids)
            if f is not None:
                flows.append(f)
        for core, track in lay.cc_core.items():
            rows = self._cc_stream(rank, comms)
            if rows is not None:
                instr.setdefault(track, []).append(rows)
        _write_grouped(w, "instructions", instr, {"opcode": OPCODES.values, "dtype": DTYPES.values}, chip)
        _write_grouped(w, "dma", dma, {"src": MEMORIES.values, "dst": MEMORIES.values}, chip)
        if flows:
            w.write("flows", {"src_id": np.concatenate([f[0] for f in flows]),
                              "dst_id": np.concatenate([f[1] for f in flows]), "kind": "semaphore"}, chip=chip)
        allocations = self.allocations.columns()
        if allocations is not None:
            w.write("sbuf_allocations", allocations, chip=chip)

    def _cc_stream(self, rank: int, comms: list[CommRef]) -> dict[str, np.ndarray] | None:
        """The collective engine's instructions on one core of a rank: each collective's steps laid
        over [start, end], each step as long as its share of the idle-system cost."""
        starts, durs, ops, nbytes = [], [], [], []
        for ref in comms:
            c = self.plan.collectives[ref.coll]
            r = self._position(ref.coll, rank)
            steps = c.plan.rank_steps(r)
            if not steps:
                continue
            s0 = float(self.tl.start[ref.coll])
            e0 = float(self.tl.end[ref.coll][r])
            wts = np.array([x[2] for x in steps], np.float64)
            total = wts.sum()
            frac = np.cumsum(np.r_[0.0, wts]) / total if total > 0 else np.linspace(0, 1, len(steps) + 1)
            edges = np.rint(s0 + frac * (e0 - s0)).astype(np.int64)
            starts.append(edges[:-1])
            durs.append(np.maximum(edges[1:] - edges[:-1], 0))
            ops.append(np.array([OPCODES.code(x[0]) for x in steps], np.int32))
            nbytes.append(np.array([int(x[1] // self.lnc) for x in steps], np.int64))
        if not starts:
            return None
        s = np.concatenate(starts)
        order = np.argsort(s, kind="stable")
        n = len(s)
        ids = self.next_event + np.arange(n, dtype=np.int64)
        self.next_event += n
        return {"id": ids, "start_ns": s[order], "dur_ns": np.concatenate(durs)[order],
                "opcode": np.concatenate(ops)[order], "kernel_id": np.full(n, -1, np.int64),
                "flops": np.zeros(n, np.int64), "bytes": np.concatenate(nbytes)[order],
                "dtype": np.full(n, DTYPES.code("bf16"), np.int32)}

    def _write_ops(self, w: TraceWriter) -> None:
        rows = self.op_rows
        start, end = self.op_start.copy(), self.op_end.copy()
        for i in range(len(rows) - 1, 0, -1):  # children come after their parents: fold spans upwards
            parent = rows[i][1]
            if parent >= 0 and start[i] <= end[i]:
                start[parent] = min(start[parent], start[i])
                end[parent] = max(end[parent], end[i])
        keep = [i for i in range(len(rows)) if start[i] <= end[i]]
        w.write("ops", {
            "op_id": np.array([rows[i][0] for i in keep], np.int64),
            "parent_id": np.array([rows[i][1] for i in keep], np.int64),
            "level": [rows[i][2] for i in keep], "name": [rows[i][3] for i in keep], "kind": [rows[i][4] for i in keep],
            "start_ns": start[keep], "dur_ns": (end - start)[keep],
        })


class _ChipBatches:
    """Stands in for the TraceWriter while one chip's rows are made: every table's batches are kept
    and written as one (concatenated in order, so each track's rows stay together and in time
    order); a thousand small writes cost more than the rows."""

    def __init__(self, w: TraceWriter) -> None:
        self.w = w
        self.batches: dict[str, list[dict]] = {}

    def write(self, table: str, data: dict, chip: int | None = None) -> None:
        self.batches.setdefault(table, []).append(data)

    def flush(self, chip: int) -> None:
        for table, parts in self.batches.items():
            self.w.write(table, parts[0] if len(parts) == 1 else _concat(parts), chip=chip)
        self.batches = {}


def _concat(parts: list[dict]) -> dict:
    out: dict = {}
    for key, first in parts[0].items():
        vals = [p[key] for p in parts]
        if isinstance(first, tuple):       # (codes, vocabulary): the vocabulary only grows
            out[key] = (np.concatenate([np.asarray(v[0]) for v in vals]), vals[-1][1])
        elif isinstance(first, list):
            out[key] = [x for v in vals for x in v]
        elif isinstance(first, np.ndarray):
            out[key] = np.concatenate(vals)
        else:                              # a scalar for the whole batch: repeat it per part's rows
            n = [len(next(x for x in p.values() if isinstance(x, (np.ndarray, list)))) for p in parts]
            out[key] = np.concatenate([np.full(k, v) for k, v in zip(n, vals)])
    return out


def _write_grouped(w: TraceWriter, table: str, per_track: dict[int, list[dict[str, np.ndarray]]],
                   vocabs: dict[str, list[str]], chip: int) -> None:
    for track in sorted(per_track):
        chunks = per_track[track]
        cols = {k: np.concatenate([c[k] for c in chunks]) if len(chunks) > 1 else chunks[0][k] for k in chunks[0]}
        if len(chunks) > 1:  # kernels of several ops (and collectives) on one row: keep starts in order
            o = np.argsort(cols["start_ns"], kind="stable")
            cols = {k: v[o] for k, v in cols.items()}
        n = len(cols["id"])
        batch = {"track_id": np.full(n, track, np.int32)}
        for k, v in cols.items():
            batch[k] = (v, vocabs[k]) if k in vocabs else v
        w.write(table, batch, chip=chip)
