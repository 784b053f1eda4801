"""Per-pixel busy coverage of a track at any zoom, in O(pixels x log n) per frame.

DESIGN.md suggests a busy-time pyramid (power-of-two buckets halved level by level).
We keep the limit of that pyramid instead: a prefix sum of busy time over the
track's intervals (one int64 per interval, built once off the GUI thread). The busy
time before any instant t is

    B(t) = cum[j] + clip(t - start[j], 0, dur[j]),   j = last interval starting <= t

so the busy time of a pixel [a, b) is B(b) - B(a): exact at every zoom (a pyramid is
exact only at its bucket edges), found with one `searchsorted` of the pixel edges,
whatever the number of intervals. Overlapping intervals (kernel rows, anything a
writer overlaps) are first merged into their union, so a pixel is never more than
100% busy and "20% busy" always looks 20% busy.

Disjoint tracks share their table's arrays: a `Coverage` is the slice [lo, hi) of
root arrays (`start`, `dur` and a table-wide prefix sum), so one frame can gather
the pixels of every visible row in a few numpy calls (`fractions_many`).

A long lane also gets a sample of its starts (every 64th; `Coverage.sample`), taken on a
thread of its own the first time a frame draws the lane: at the widest zooms the compiled
loops search it first and the column only inside one block of 64 per pixel edge
(`lod_kernels.counts_sampled`), the same answers with far fewer cache misses. Frames
drawn before it is there search the column alone.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field

import numpy as np

from explorer.model.intervals import sorted_runs

HAVE_NUMBA = True  # use lod_kernels' compiled loops (imported on first use: importing numba costs
# ~0.3 s and much address space, which commands that never draw a timeline should not pay)
SAMPLE_MIN = 1 << 12  # lanes with fewer intervals are searched whole (their column stays in cache)
_NO_SAMPLE = np.zeros(0, dtype=np.int64)


def merge_overlaps(start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals sorted by start, as disjoint (start, dur) runs."""
    run_start, run_end = sorted_runs(start, start + dur)
    return run_start.astype(np.int64), (run_end - run_start).astype(np.int64)


def prefix_sum(dur: np.ndarray) -> np.ndarray:
    """[0, d0, d0+d1, ...]: busy time before each interval (len n + 1)."""
    cum = np.empty(len(dur) + 1, dtype=np.int64)
    cum[0] = 0
    np.cumsum(dur, out=cum[1:])
    return cum


@dataclass
class Coverage:
    """Busy-time prefix sums over one track's disjoint intervals: rows [lo, hi) of root arrays."""

    root_start: np.ndarray  # int64; sorted and disjoint within [lo, hi)
    root_dur: np.ndarray  # int64
    root_cum: np.ndarray  # int64, len(root) + 1: prefix sum of root_dur
    lo: int
    hi: int
    sample: np.ndarray | None = field(default=None, repr=False, compare=False)  # every 64th start, once taken
    _sampling: bool = field(default=False, repr=False, compare=False)  # queued for `_sampler`

    @classmethod
    def build(cls, start: np.ndarray, dur: np.ndarray, *, disjoint: bool | None = None) -> Coverage:
        """Coverage of intervals sorted by start; overlaps are merged unless `disjoint`."""
        start = np.asarray(start, dtype=np.int64)
        dur = np.asarray(dur, dtype=np.int64)
        if disjoint is None:
            disjoint = is_disjoint(start, dur)
        if not disjoint:
            start, dur = merge_overlaps(start, dur)
        return cls(start, dur, prefix_sum(dur), 0, len(start))

    @property
    def start(self) -> np.ndarray:
        return self.root_start[self.lo:self.hi]

    @property
    def dur(self) -> np.ndarray:
        return self.root_dur[self.lo:self.hi]

    @property
    def total(self) -> int:
        return int(self.root_cum[self.hi] - self.root_cum[self.lo])

    def busy_before(self, t: np.ndarray | int) -> np.ndarray:
        """Busy time in (-inf, t) for each t (vectorised)."""
        t = np.asarray(t, dtype=np.int64)
        if self.hi <= self.lo:
            return np.zeros(t.shape, dtype=np.int64)
        j = np.searchsorted(self.start, t, side="right") - 1 + self.lo
        jc = np.maximum(j, self.lo)
        part = np.clip(t - self.root_start[jc], 0, self.root_dur[jc])
        return np.where(j >= self.lo, self.root_cum[jc] - self.root_cum[self.lo] + part, 0)

    def busy_in(self, t0: int, t1: int) -> int:
        """Busy time inside [t0, t1)."""
        b = self.busy_before(np.array([t0, t1], dtype=np.int64))
        return int(b[1] - b[0])

    def fractions(self, edges: np.ndarray) -> np.ndarray:
        """Busy fraction (0..1) of each bin between consecutive `edges` (float ns allowed)."""
        return fractions_many([self], edges)[0][0]

    def fractions_and_last(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Busy fraction of each bin, and the (track-relative) index of the last interval
        starting at or before each bin's right edge (-1: none)."""
        f, j = fractions_many([self], edges)
        return f[0], j[0]


def fractions_many(covs: list[Coverage], edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`fractions_and_last` for many tracks at once: (n, bins) fractions and indices.

    Per track one `searchsorted` and three gathers (each track may have its own arrays: a
    view of its record batch); the arithmetic then runs once over all tracks, as a frame's
    cost is dominated by per-call overhead otherwise.
    """
    e = np.asarray(edges, dtype=np.float64)
    n, nb = len(covs), len(e) - 1
    frac = np.zeros((n, nb))
    last = np.full((n, nb), -1, dtype=np.int64)
    live = [i for i, c in enumerate(covs) if c.hi > c.lo]
    if not live or nb < 1:
        return frac, last
    keys = np.floor(e).astype(np.int64)  # integer keys: a float key would convert the whole root
    if HAVE_NUMBA and nb > 1 and bool((keys[1:] >= keys[:-1]).all()) and compiled_loops():
        from explorer.model.timeline.lod_kernels import coverage_row

        # one compiled pass per row, the same arithmetic (lod_kernels)
        count = np.empty(nb + 1, dtype=np.int64)
        unsampled = []
        for i in live:
            c = covs[i]
            sample = c.sample
            if sample is None:
                sample = _NO_SAMPLE
                if c.hi - c.lo >= SAMPLE_MIN and not c._sampling:
                    unsampled.append(c)
            coverage_row(c.root_start, c.root_dur, c.root_cum, c.lo, c.hi, sample, e, keys, count, frac[i], last[i])
        if unsampled:
            sample_apart(unsampled)
        return frac, last
    m = len(live)
    j = np.empty((m, nb + 1), dtype=np.int64)
    start = np.empty((m, nb + 1), dtype=np.int64)
    dur = np.empty((m, nb + 1), dtype=np.int64)
    before = np.empty((m, nb + 1), dtype=np.int64)
    for r, i in enumerate(live):
        c = covs[i]
        j[r] = np.searchsorted(c.root_start[c.lo:c.hi], keys, side="right") - 1  # -1: nothing started yet
        jc = np.maximum(j[r], 0) + c.lo
        start[r] = c.root_start[jc]
        dur[r] = c.root_dur[jc]
        before[r] = c.root_cum[jc] - c.root_cum[c.lo]
    part = np.clip(e[None, :] - start, 0.0, dur.astype(np.float64))
    b = np.where(j >= 0, before + part, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.diff(b, axis=1) / np.diff(e)[None, :]
    frac[live] = np.clip(np.nan_to_num(f), 0.0, 1.0)
    last[live] = j[:, 1:]
    return frac, last


def is_disjoint(start: np.ndarray, dur: np.ndarray) -> bool:
    """True when no interval starts before the previous one ended (start-sorted input)."""
    if len(start) < 2:
        return True
    return bool((start[1:] >= start[:-1] + dur[:-1]).all())


def last_started(start: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """For each bin, the index of the last interval starting before its right edge (-1: none).

    With disjoint intervals, when a bin has any coverage this interval overlaps it:
    the colour a coverage pixel takes.
    """
    right = np.ceil(np.asarray(edges, dtype=np.float64)[1:]).astype(np.int64) - 1
    if HAVE_NUMBA and len(right) > 1 and bool((right[1:] >= right[:-1]).all()) and compiled_loops():
        from explorer.model.timeline.lod_kernels import counts_le

        out = np.empty(len(right), dtype=np.int64)
        counts_le(start, 0, len(start), right, out)  # galloping from each edge's answer to the next
        return out - 1
    return np.searchsorted(start, right, side="right") - 1


def take_sample(cov: Coverage) -> None:
    """Set `cov.sample`: every 64th of its starts (`lod_kernels.sample_starts`; needs numba)."""
    from explorer.model.timeline.lod_kernels import SAMPLE_SHIFT, sample_starts

    n = cov.hi - cov.lo
    out = np.empty((n + (1 << SAMPLE_SHIFT) - 1) >> SAMPLE_SHIFT, dtype=np.int64)
    sample_starts(cov.root_start, cov.lo, cov.hi, out)
    cov.sample = out  # one assignment: a frame sees no sample or the whole of it


_samples_asked: list[Coverage] = []  # waiting for `_sampler`
_sampler: threading.Thread | None = None  # while there are samples to take
_sampler_cond = threading.Condition()


def sample_apart(covs: list[Coverage]) -> None:
    """Take these lanes' samples on a thread of their own (taking them in a frame would read a
    5M-interval lane's whole column first: ~40 MB, tens of ms when it is not in memory). Only the
    main (GUI) thread starts that thread: a thread starts with its creator's niceness, and asked
    first by the window's utilisation worker (which runs nicer than the GUI thread) it sampled
    behind everything else on a loaded machine while the frames searched whole lanes without
    them; asked from elsewhere with no sampler running, nothing is queued (the frames ask)."""
    global _sampler
    with _sampler_cond:
        if _sampler is None and threading.current_thread() is not threading.main_thread():
            return
        for c in covs:
            c._sampling = True
            _samples_asked.append(c)
        if _sampler is None:
            _sampler = threading.Thread(target=_sample_loop, name="lane-samples", daemon=True)
            _sampler.start()


def _sample_loop() -> None:
    global _sampler
    while True:
        with _sampler_cond:
            if not _samples_asked:  # done: the next `sample_apart` starts another thread
                _sampler = None
                _sampler_cond.notify_all()
                return
            cov = _samples_asked.pop(0)
        try:
            take_sample(cov)
        except Exception:  # noqa: BLE001 - a lane left without its sample is searched whole, as before
            pass


def wait_for_samples() -> None:
    """Return once every sample asked for so far is taken (tests and benches comparing pictures)."""
    with _sampler_cond:
        _sampler_cond.wait_for(lambda: _sampler is None)


_loading: threading.Thread | None = None  # load_compiled_loops_apart's thread, while it runs


def compiled_loops() -> bool:
    """Whether the compiled loops are there (numba installed), importing them on first use;
    False while `load_compiled_loops_apart` loads them (the numpy path draws the same meanwhile)."""
    if _loading is not None and _loading.is_alive():
        return False
    from explorer.model.timeline.lod_kernels import HAVE_NUMBA as have

    return have


def load_compiled_loops_apart() -> None:
    """Import numba and load (or compile, once per machine) the compiled loops on a thread of their
    own: ~0.4-0.6 s that the window's first frame need not wait for."""
    global _loading
    if _loading is None and "explorer.model.timeline.lod_kernels" not in sys.modules:
        _loading = threading.Thread(target=_load, name="compiled-loops", daemon=True)
        _loading.start()


def wait_for_compiled_loops() -> None:
    """Return once `load_compiled_loops_apart` is done (tests comparing the two paths)."""
    if _loading is not None:
        _loading.join()


def _load() -> None:
    from explorer.model.timeline import lod_kernels

    lod_kernels.warm()
