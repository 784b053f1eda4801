"""Schedule one op's kernels on all cores of a chip at once, with DMA and HBM sharing.

Cores that run identical kernels (the usual case: an op split evenly over the cores) are
simulated once and weighted by how many cores they stand for, so a chip of 8 symmetric
cores costs one core's simulation while HBM still sees all 8 cores' traffic.

Sharing is fluid over time slices (`timing/fluid.py`): each core's 16 DMA engines give `slice` ns of engine-set
time per slice (a transfer on few partitions uses only the engines they map to, so it takes
at most that share of it) and the chip's HBM gives bandwidth x slice bytes; a transfer takes what
is left of both in each slice it spans (a representative core takes it `weight` times
over). Concurrent transfers on a core therefore split its engines, and when the chip's
cores together want more than the HBM bandwidth every transfer slows down -- and the
HBM bandwidth is never exceeded. The groups' programs are interleaved in proportion,
so no core gets first call on the capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.hardware import Hardware
from simcore.lowering.costs import dma_engines
from simcore.lowering.engines import N_COMPUTE_ENGINES
from simcore.lowering.program import Program
from simcore.timing.listsched import Sharing, Throttle, schedule

MIN_SLICE_NS = 32.0
MAX_SLICES = 1 << 16


@dataclass
class HbmServed:
    """HBM bytes read and written per time slice of a window (all cores), from the sharing ledger.

    The ledger caps each slice at bandwidth x slice_ns. The window's last transfer ends at `t1`,
    inside the last slice; counters spread a slice's bytes over the part of it in [t0, t1], so
    consecutive windows (the next starts at t1) never add up in one counter bin."""

    t0: float
    slice_ns: float
    read: np.ndarray
    write: np.ndarray
    t1: float = float("inf")

    def intervals(self, which: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(start, width) of each slice (or of the slices `which`), clipped to [t0, t1]."""
        i = np.arange(len(self.read)) if which is None else which
        a = self.t0 + i * self.slice_ns
        return a, np.maximum(np.minimum(a + self.slice_ns, self.t1) - a, 0.0)


@dataclass
class Timed:
    """A program's schedule: start/end ns (float) and the tensor-engine rate factor."""

    start: np.ndarray
    end: np.ndarray
    rate: np.ndarray

    @property
    def span(self) -> tuple[float, float]:
        return float(self.start.min()), float(self.end.max())


def throttle_of(hw: Hardware) -> Throttle:
    t = hw.tensor.get("throttle", {})
    return Throttle(float(t.get("start_fraction", 1.0)), float(t.get("ramp_ns", 0.0)), float(t.get("cooldown_ns", 0.0)))


@dataclass
class Prepared:
    """What scheduling a list of programs needs that depends on the programs alone (and the
    hardware): their instructions interleaved, per-instruction arrays in that order, dependencies
    renumbered. A step repeats its kernels layer after layer (a 70B prefill: 563 windows of 9
    distinct programs), so a capture prepares each list once (`PreparedCache`)."""

    programs: tuple[Program, ...]  # kept alive, so the ids a cache keys them by stay theirs
    offs: np.ndarray
    inv: np.ndarray
    queue: np.ndarray
    dur: np.ndarray
    lat: np.ndarray
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    thr_id: np.ndarray
    any_dma: bool
    dma_grp: np.ndarray
    hbm_bytes: np.ndarray
    read_frac: np.ndarray
    eng_frac: np.ndarray

    @property
    def nbytes(self) -> int:
        return sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray))


def prepare(hw: Hardware, programs: list[Program]) -> Prepared:
    """The program-only part of `schedule_window` (no times, no state)."""
    G = len(programs)
    engines = float(hw.data["dma"]["engines_per_core"])
    NQ = N_COMPUTE_ENGINES + hw.dma_queues
    sizes = np.array([len(p) for p in programs], np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offs[-1])
    grp = np.repeat(np.arange(G, dtype=np.int32), sizes)
    # interleave the groups' programs in proportion (each keeps its own order)
    pos = np.concatenate([(np.arange(s) + 0.5) / s for s in sizes])
    order = np.lexsort((grp, pos)) if G > 1 else np.arange(n)
    inv = np.empty(n, np.int64)
    inv[order] = np.arange(n)

    def cat(f):
        return np.concatenate([f(p) for p in programs])[order]

    queue = cat(lambda p: p.engine.astype(np.int32)) + grp[order] * NQ
    dur, lat = cat(lambda p: p.dur), cat(lambda p: p.lat)
    pe = cat(lambda p: p.pe)
    is_dma = cat(lambda p: p.partitions > 0)
    eng_frac = cat(lambda p: np.where(p.partitions > 0, dma_engines(hw, p.partitions), 1.0)) / engines
    hbm = cat(lambda p: (p.hbm_read + p.hbm_write).astype(np.float64))
    hbm_r = cat(lambda p: p.hbm_read.astype(np.float64))
    g_sorted = grp[order]
    # dependencies, renumbered into the interleaved order
    counts = np.concatenate([np.diff(p.dep_ptr) for p in programs])[order]
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dep_ptr[1:])
    flat_owner_old = np.concatenate([np.repeat(np.arange(len(p)), np.diff(p.dep_ptr)) + offs[g]
                                     for g, p in enumerate(programs)])
    flat_dep_old = np.concatenate([p.dep_idx + offs[g] for g, p in enumerate(programs)])
    o_new, d_new = inv[flat_owner_old], inv[flat_dep_old]
    srt = np.argsort(o_new, kind="stable")
    dep_idx = d_new[srt]
    thr_id = np.where(pe, g_sorted, -1).astype(np.int32)
    return Prepared(tuple(programs), offs, inv, queue, dur, lat, dep_ptr, dep_idx, thr_id, bool(is_dma.any()),
                    dma_grp=np.where(is_dma, g_sorted, -1).astype(np.int32),
                    hbm_bytes=np.where(is_dma, hbm, 0.0),
                    read_frac=np.where(hbm > 0, hbm_r / np.maximum(hbm, 1.0), 0.0),
                    eng_frac=eng_frac)


class PreparedCache:
    """`Prepared` lists of programs for one hardware, most recently used kept up to `max_bytes`."""

    def __init__(self, hw: Hardware, max_bytes: int = 256 << 20) -> None:
        self.hw = hw
        self.max_bytes = max_bytes
        self._items: dict[tuple[int, ...], Prepared] = {}  # oldest first
        self._bytes = 0

    def get(self, programs: list[Program]) -> Prepared:
        key = tuple(id(p) for p in programs)
        got = self._items.pop(key, None)
        if got is None:
            got = prepare(self.hw, programs)
            self._bytes += got.nbytes
            while self._items and self._bytes > self.max_bytes:
                self._bytes -= self._items.pop(next(iter(self._items))).nbytes
        self._items[key] = got
        return got


def schedule_window(hw: Hardware, programs: list[Program], weights: list[int], t0: float,
                    thr_state: tuple[np.ndarray, np.ndarray] | None = None,
                    cache: PreparedCache | None = None,
                    ) -> tuple[list[Timed], tuple[np.ndarray, np.ndarray], HbmServed | None]:
    """Schedule programs (one per group of identical cores) that start together at `t0`.

    `thr_state` is each group's tensor-engine ramp state (busy-since, last-end) coming in;
    the state going out is returned with the schedules, and the HBM bytes served per slice.
    `cache` (for `hw`) keeps the programs' preparation for the windows that run them again."""
    G = len(programs)
    NQ = N_COMPUTE_ENGINES + hw.dma_queues
    pre = prepare(hw, programs) if cache is None else cache.get(programs)
    queue, dur, lat, dep_ptr, dep_idx, thr_id = pre.queue, pre.dur, pre.lat, pre.dep_ptr, pre.dep_idx, pre.thr_id
    offs, inv = pre.offs, pre.inv
    thr = throttle_of(hw)
    # pass 1: no sharing, to size the ledgers
    start, end, rate, state = schedule(queue, dur, lat, dep_ptr, dep_idx, thr_id, G * NQ, t0, thr, G, None, thr_state)
    served = None
    if pre.any_dma:
        # the ledgers must cover every transfer: sharing can stretch the window well past the unshared
        # schedule (transfers that overlapped on one core now split its engines), so a schedule that
        # runs past the ledger is redone with one twice as long
        span = float(end.max()) - t0
        horizon = 1.5 * span + 20000.0
        w = np.asarray(weights, np.float64)
        while True:
            slice_ns = max(MIN_SLICE_NS, horizon / MAX_SLICES)
            n_slices = int(np.ceil(horizon / slice_ns))
            used, cap = Sharing.ledger(G, n_slices, slice_ns, hw.hbm_bytes_per_ns)
            sharing = Sharing(
                dma_grp=pre.dma_grp,
                hbm_bytes=pre.hbm_bytes,
                read_frac=pre.read_frac,
                weight=w,
                used=used,
                cap=cap,
                slice_ns=slice_ns,
                eng_frac=pre.eng_frac,
            )
            start, end, rate, state = schedule(queue, dur, lat, dep_ptr, dep_idx, thr_id, G * NQ, t0, thr, G, sharing,
                                               thr_state)
            if not sharing.overflowed:
                break
            horizon *= 2.0
        used = np.flatnonzero((sharing.served_r > 0) | (sharing.served_w > 0))
        last = int(used[-1]) + 1 if len(used) else 0
        served = HbmServed(t0, slice_ns, sharing.served_r[:last].copy(), sharing.served_w[:last].copy(),
                           float(end.max()))
    start, end, rate = start[inv], end[inv], rate[inv]
    timed = [Timed(start[offs[g]:offs[g + 1]], end[offs[g]:offs[g + 1]], rate[offs[g]:offs[g + 1]]) for g in range(G)]
    return timed, state, served
