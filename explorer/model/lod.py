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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def merge_overlaps(start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals sorted by start, as disjoint (start, dur) runs."""
    if len(start) == 0:
        return start.astype(np.int64), dur.astype(np.int64)
    end = start + dur
    reach = np.maximum.accumulate(end)
    new_run = np.empty(len(start), dtype=bool)
    new_run[0] = True
    new_run[1:] = start[1:] > reach[:-1]
    idx = np.flatnonzero(new_run)
    run_start = start[idx]
    run_end = reach[np.r_[idx[1:] - 1, len(start) - 1]]
    return run_start.astype(np.int64), (run_end - run_start).astype(np.int64)


@dataclass
class Coverage:
    """Busy-time prefix sums over one track's disjoint intervals (sorted by start)."""

    start: np.ndarray  # int64, sorted, disjoint with `dur`
    dur: np.ndarray  # int64
    cum: np.ndarray  # int64, len n + 1: busy time before interval i

    @classmethod
    def build(cls, start: np.ndarray, dur: np.ndarray, *, disjoint: bool | None = None) -> Coverage:
        """Coverage of intervals sorted by start; overlaps are merged unless `disjoint`."""
        start = np.asarray(start, dtype=np.int64)
        dur = np.asarray(dur, dtype=np.int64)
        if disjoint is None:
            disjoint = is_disjoint(start, dur)
        if not disjoint:
            start, dur = merge_overlaps(start, dur)
        cum = np.empty(len(dur) + 1, dtype=np.int64)
        cum[0] = 0
        np.cumsum(dur, out=cum[1:])
        return cls(start, dur, cum)

    @property
    def total(self) -> int:
        return int(self.cum[-1])

    def busy_before(self, t: np.ndarray | int) -> np.ndarray:
        """Busy time in (-inf, t) for each t (vectorised)."""
        t = np.asarray(t, dtype=np.int64)
        if len(self.start) == 0:
            return np.zeros(t.shape, dtype=np.int64)
        j = np.searchsorted(self.start, t, side="right") - 1
        jc = np.maximum(j, 0)
        part = np.clip(t - self.start[jc], 0, self.dur[jc])
        return np.where(j >= 0, self.cum[jc] + part, 0)

    def busy_in(self, t0: int, t1: int) -> int:
        """Busy time inside [t0, t1)."""
        b = self.busy_before(np.array([t0, t1], dtype=np.int64))
        return int(b[1] - b[0])

    def fractions(self, edges: np.ndarray) -> np.ndarray:
        """Busy fraction (0..1) of each bin between consecutive `edges` (float ns allowed)."""
        e = np.asarray(edges, dtype=np.float64)
        # exact: B is piecewise linear, so evaluating it at float edges needs the
        # fractional part only inside the interval that holds the edge
        if len(self.start) == 0:
            return np.zeros(len(e) - 1)
        # integer keys: a float key would make numpy convert the whole start array
        j = np.searchsorted(self.start, np.floor(e).astype(np.int64), side="right") - 1
        jc = np.maximum(j, 0)
        part = np.clip(e - self.start[jc], 0.0, self.dur[jc].astype(np.float64))
        b = np.where(j >= 0, self.cum[jc] + part, 0.0)
        width = np.diff(e)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.diff(b) / width
        return np.clip(np.nan_to_num(f), 0.0, 1.0)


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
    return np.searchsorted(start, right, side="right") - 1
