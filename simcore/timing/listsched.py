"""The exact scheduler: in-order engine queues, semaphore dependencies, throttle and DMA sharing.

Every engine (and DMA queue) executes its instructions in program order; an instruction
starts when its queue is free and every instruction it waits on (its semaphores) has
finished, plus a fixed latency (DMA). That is a longest path through a DAG whose edges
are the queue order and the dependencies.

DESIGN.md's closed form (end = C + maximum.accumulate(ready - C_prev)) solves one queue
at once, but here ready times depend on other queues, so the closed form must be iterated
to a fixed point, and the number of iterations equals the number of times the critical
path switches engines -- thousands in a flash-attention kernel, where the tensor and
vector engines hand work back and forth every few instructions. So the hot loop is one
pass in program order, compiled with numba when it is installed (about 10^8
instructions/s); `schedule_closed_form` keeps the vectorised fixed point for reference
and for the tests that check both agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.jit import depends_on, njit
from simcore.timing import fluid
from simcore.timing.fluid import NO_TALLY, advance


@dataclass
class Throttle:
    """Tensor-engine dI/dt limit: rate starts at `start_fraction`, full after `ramp_ns` busy."""

    start_fraction: float = 1.0
    ramp_ns: float = 0.0
    cooldown_ns: float = 0.0


@depends_on(fluid)  # `advance` is inlined: an edit to fluid.py recompiles this
@njit(cache=True, nogil=True)
def _schedule(queue, dur, lat, dep_ptr, dep_idx, thr_id, dma_grp, hbm_bytes, read_frac, eng_frac, weight, n_queues, t0,
              thr_start, thr_ramp, thr_cool, busy_since, last_end, used, cap, served, slice_ns, overflow):
    n = queue.shape[0]
    start = np.empty(n, np.float64)
    end = np.empty(n, np.float64)
    rate = np.ones(n, np.float32)
    qfree = np.full(n_queues, t0, np.float64)
    # a transfer's ledger entries: its core's DMA engines (row g), then the chip's HBM (the last row),
    # whose bytes are tallied as reads (served row 0) and writes (row 1)
    hbm_row = used.shape[0] - 1
    res = np.zeros(2, np.int64)
    need = np.zeros(2, np.float64)
    tally = np.array([NO_TALLY, 0], np.int64)
    rest = np.array([NO_TALLY, 1], np.int64)
    frac = np.ones(2, np.float64)
    for i in range(n):
        r = t0
        for j in range(dep_ptr[i], dep_ptr[i + 1]):
            e = end[dep_idx[j]]
            if e > r:
                r = e
        r += lat[i]
        q = queue[i]
        s = qfree[q]
        if r > s:
            s = r
        d = dur[i]
        th = thr_id[i]
        if th >= 0:
            if s - last_end[th] >= thr_cool:
                busy_since[th] = s
            x = 1.0
            if thr_ramp > 0.0:
                x = (s - busy_since[th]) / thr_ramp
                if x > 1.0:
                    x = 1.0
            rt = thr_start + (1.0 - thr_start) * x
            rate[i] = rt
            d = d / rt
        g = dma_grp[i]
        if g >= 0 and used.shape[1] > 0 and d > 0.0:
            # it can use at most eng_frac of its core's engines at once (those its partitions map to)
            res[0] = g
            need[0] = d * eng_frac[i]
            res[1] = hbm_row
            need[1] = hbm_bytes[i] * weight[g]
            frac[1] = read_frac[i]
            e, left = advance(s, 1.0, d, t0, slice_ns, used, cap, res, need, tally, frac, rest, served,
                              2 if need[1] > 0.0 else 1)
            if left > 1e-12:  # ran past the ledger: the caller schedules again with a longer one
                overflow[0] = 1
                e += left * d
        else:
            e = s + d
        start[i] = s
        end[i] = e
        qfree[q] = e
        if th >= 0 and e > last_end[th]:
            last_end[th] = e
    return start, end, rate, busy_since, last_end


@dataclass
class Sharing:
    """Fluid ledgers (`timing/fluid.py`) for DMA sharing: rows 0..G-1 are the groups' (cores') DMA
    engine-ns, the last row the chip's HBM bytes, per time slice."""

    dma_grp: np.ndarray     # int32 per instruction: its group for DMA transfers, -1 otherwise
    hbm_bytes: np.ndarray   # float64 HBM bytes each transfer moves (for one core of its group)
    read_frac: np.ndarray   # float64 share of those bytes that are reads
    weight: np.ndarray      # float64 identical cores each group stands for (their HBM bytes add up)
    used: np.ndarray        # (groups + 1, slices) engine-ns / HBM bytes taken
    cap: np.ndarray         # (groups + 1,) what each row offers per slice
    slice_ns: float
    served: np.ndarray | None = None    # (2, slices) HBM bytes read and written per slice (filled by the scheduler)
    overflow: np.ndarray | None = None  # (1,) set when a transfer ran past the last slice
    eng_frac: np.ndarray | None = None  # float64 per instruction: share of its core's DMA engines a transfer uses (1)

    def __post_init__(self) -> None:
        if self.served is None:
            self.served = np.zeros((2, self.used.shape[1]))
        if self.overflow is None:
            self.overflow = np.zeros(1, np.int64)
        if self.eng_frac is None:
            self.eng_frac = np.ones(self.dma_grp.shape[0])

    @staticmethod
    def ledger(groups: int, slices: int, slice_ns: float, hbm_bytes_per_ns: float) -> tuple[np.ndarray, np.ndarray]:
        """Empty ledger rows and their capacities: each core's DMA engine set offers one engine-ns per
        ns, the chip's HBM its bandwidth."""
        cap = np.full(groups + 1, slice_ns, np.float64)
        cap[-1] = hbm_bytes_per_ns * slice_ns
        return np.zeros((groups + 1, slices)), cap

    @property
    def served_r(self) -> np.ndarray:
        return self.served[0]

    @property
    def served_w(self) -> np.ndarray:
        return self.served[1]

    @property
    def overflowed(self) -> bool:
        return bool(self.overflow[0])

    @staticmethod
    def none(n: int) -> "Sharing":
        return Sharing(np.full(n, -1, np.int32), np.zeros(n), np.zeros(n), np.ones(1), np.zeros((1, 0)), np.ones(1), 1.0)


def schedule(
    queue: np.ndarray,
    dur: np.ndarray,
    lat: np.ndarray,
    dep_ptr: np.ndarray,
    dep_idx: np.ndarray,
    thr_id: np.ndarray,
    n_queues: int,
    t0: float,
    throttle: Throttle,
    n_thr: int,
    sharing: Sharing | None = None,
    thr_state: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Start, end (ns, float) and tensor rate factor of every instruction, in program order,
    and the throttle state (busy-since, last-end per throttle group) after the last one.

    Dependencies must point to earlier instructions (program order is a topological order).
    `thr_state` carries the tensor engines' ramp state in from an earlier window; `sharing`
    (consumed) holds the DMA/HBM capacity ledgers.
    """
    n = len(queue)
    if sharing is None:
        sharing = Sharing.none(n)
    if thr_state is None:
        busy = np.full(max(n_thr, 1), -1e300, np.float64)
        last = np.full(max(n_thr, 1), -1e300, np.float64)
    else:
        busy = np.array(thr_state[0], np.float64, copy=True)
        last = np.array(thr_state[1], np.float64, copy=True)
    start, end, rate, busy, last = _schedule(
        np.ascontiguousarray(queue, np.int32), np.ascontiguousarray(dur, np.float64),
        np.ascontiguousarray(lat, np.float64), np.ascontiguousarray(dep_ptr, np.int64),
        np.ascontiguousarray(dep_idx, np.int64), np.ascontiguousarray(thr_id, np.int32),
        np.ascontiguousarray(sharing.dma_grp, np.int32), np.ascontiguousarray(sharing.hbm_bytes, np.float64),
        np.ascontiguousarray(sharing.read_frac, np.float64), np.ascontiguousarray(sharing.eng_frac, np.float64),
        np.ascontiguousarray(sharing.weight, np.float64), int(n_queues), float(t0),
        float(throttle.start_fraction), float(throttle.ramp_ns), float(throttle.cooldown_ns), busy, last,
        sharing.used, sharing.cap, sharing.served, float(sharing.slice_ns), sharing.overflow,
    )
    return start, end, rate, (busy, last)


def schedule_closed_form(
    queue: np.ndarray, dur: np.ndarray, lat: np.ndarray, dep_ptr: np.ndarray, dep_idx: np.ndarray,
    n_queues: int, t0: float, max_iter: int = 100000,
) -> tuple[np.ndarray, np.ndarray, int]:
    """DESIGN.md's vectorised closed form, iterated to its fixed point (no throttle, no sharing).

    Returns start, end and the number of iterations it took. Used as the reference the
    compiled scheduler is tested against, and by bench/ to show why it is not the default.
    """
    n = len(queue)
    queue = np.asarray(queue, np.int64)
    dur = np.asarray(dur, np.float64)
    order = np.lexsort((np.arange(n), queue))
    qs = queue[order]
    ds = dur[order]
    seg_first = np.ones(n, bool)
    seg_first[1:] = qs[1:] != qs[:-1]
    seg_id = np.cumsum(seg_first) - 1
    c_all = np.cumsum(ds)
    seg_base = (c_all - ds)[seg_first][seg_id]
    c = c_all - seg_base            # inclusive cumulative duration within the queue
    c_prev = c - ds
    counts = np.diff(dep_ptr)
    dep_owner = np.repeat(np.arange(n), counts)
    end = np.zeros(n)
    ready_prev = None
    for it in range(1, max_iter + 1):
        ready = np.full(n, t0, np.float64)
        if len(dep_idx):
            np.maximum.at(ready, dep_owner, end[dep_idx])
        ready += lat
        if ready_prev is not None and np.abs(ready - ready_prev).max(initial=0.0) < 1e-6:
            return end - dur, end, it
        ready_prev = ready
        v = np.maximum(ready[order], t0) - c_prev
        span = float(v.max() - v.min()) + 1.0
        cm = np.maximum.accumulate(v + seg_id * span) - seg_id * span
        end_sorted = c + cm
        end = np.empty(n)
        end[order] = end_sorted
    raise RuntimeError("closed-form schedule did not converge")
