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

try:  # numba is a declared dependency; the pure-Python path keeps simcore importable without it
    from numba import njit as _njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False

    def _njit(*args, **kwargs):  # type: ignore[no-redef]
        def wrap(f):
            return f

        return wrap(args[0]) if args and callable(args[0]) else wrap


@dataclass
class Throttle:
    """Tensor-engine dI/dt limit: rate starts at `start_fraction`, full after `ramp_ns` busy."""

    start_fraction: float = 1.0
    ramp_ns: float = 0.0
    cooldown_ns: float = 0.0


@_njit(cache=True, nogil=True)
def _inverse_progress(t, g, f, lo, hi, s, work):
    """End time of `work` ns of nominal transfer started at `s` under slowdown profile (t, g, f)[lo:hi]."""
    if hi <= lo:
        return s + work
    # binary search: last k with t[k] <= s
    a, b = lo, hi
    while b - a > 1:
        m = (a + b) // 2
        if t[m] <= s:
            a = m
        else:
            b = m
    k = a
    if s < t[lo]:
        gs = g[lo] - (t[lo] - s)
        if gs + work <= g[lo]:
            return s + work
        k = lo
    else:
        gs = g[k] + (s - t[k]) / f[k]
    target = gs + work
    # last k2 with g[k2] <= target
    a, b = k, hi
    while b - a > 1:
        m = (a + b) // 2
        if g[m] <= target:
            a = m
        else:
            b = m
    return t[a] + (target - g[a]) * f[a]


@_njit(cache=True, nogil=True)
def _schedule(queue, dur, lat, dep_ptr, dep_idx, thr_id, dma_prof, n_queues, t0,
              thr_start, thr_ramp, thr_cool, busy_since, last_end,
              prof_ptr, prof_t, prof_g, prof_f):
    n = queue.shape[0]
    start = np.empty(n, np.float64)
    end = np.empty(n, np.float64)
    rate = np.ones(n, np.float32)
    qfree = np.full(n_queues, t0, np.float64)
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
        p = dma_prof[i]
        if p >= 0:
            e = _inverse_progress(prof_t, prof_g, prof_f, prof_ptr[p], prof_ptr[p + 1], s, d)
        else:
            e = s + d
        start[i] = s
        end[i] = e
        qfree[q] = e
        if th >= 0 and e > last_end[th]:
            last_end[th] = e
    return start, end, rate, busy_since, last_end


@dataclass
class Profiles:
    """Piecewise-constant DMA slowdown per profile (core): breakpoints t, progress g, factor f."""

    ptr: np.ndarray
    t: np.ndarray
    g: np.ndarray
    f: np.ndarray

    @staticmethod
    def none(n_profiles: int) -> "Profiles":
        return Profiles(np.zeros(n_profiles + 1, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))


def schedule(
    queue: np.ndarray,
    dur: np.ndarray,
    lat: np.ndarray,
    dep_ptr: np.ndarray,
    dep_idx: np.ndarray,
    thr_id: np.ndarray,
    dma_prof: np.ndarray,
    n_queues: int,
    t0: float,
    throttle: Throttle,
    n_thr: int,
    profiles: Profiles,
    thr_state: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Start, end (ns, float) and tensor rate factor of every instruction, in program order,
    and the throttle state (busy-since, last-end per throttle group) after the last one.

    Dependencies must point to earlier instructions (program order is a topological order).
    `thr_state` carries the tensor engines' ramp state in from an earlier window.
    """
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
        np.ascontiguousarray(dma_prof, np.int32), int(n_queues), float(t0),
        float(throttle.start_fraction), float(throttle.ramp_ns), float(throttle.cooldown_ns), busy, last,
        profiles.ptr.astype(np.int64), profiles.t.astype(np.float64), profiles.g.astype(np.float64),
        profiles.f.astype(np.float64),
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
