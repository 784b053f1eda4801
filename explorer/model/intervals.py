"""Vectorised interval arithmetic shared by every analysis (summary, selection, utilisation).

Intervals are (start, end) int64 numpy arrays in ns. Nothing here loops in Python
over intervals, so the functions stay fast on tens of millions of rows.
"""

from __future__ import annotations

import numpy as np


def clip(start: np.ndarray, end: np.ndarray, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
    """Intervals cut to [t0, t1); ones outside become empty (start == end)."""
    s = np.clip(start, t0, t1)
    e = np.clip(end, t0, t1)
    return s, np.maximum(e, s)


def sorted_runs(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint covered runs (run_start, run_end) of intervals already sorted by start.

    An interval opens a new run when it begins after everything before it ended.
    """
    if len(start) == 0:
        return start.astype(np.int64), end.astype(np.int64)
    reach = np.maximum.accumulate(end)
    new_run = np.empty(len(start), dtype=bool)
    new_run[0] = True
    new_run[1:] = start[1:] > reach[:-1]
    run_idx = np.flatnonzero(new_run)
    return start[run_idx], reach[np.r_[run_idx[1:] - 1, len(start) - 1]]


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Total time covered by at least one interval (overlaps counted once)."""
    if len(start) == 0:
        return 0
    order = np.argsort(start, kind="stable")
    run_start, run_end = sorted_runs(start[order].astype(np.int64, copy=False), end[order].astype(np.int64, copy=False))
    return int((run_end - run_start).sum())


def union_length_in(start: np.ndarray, end: np.ndarray, t0: int, t1: int) -> int:
    """`union_length` of the intervals clipped to [t0, t1)."""
    s, e = clip(start, end, t0, t1)
    keep = e > s
    return union_length(s[keep], e[keep])


def busy_per_group(group: np.ndarray, start: np.ndarray, end: np.ndarray, n_groups: int) -> np.ndarray:
    """Summed durations per group id (for tracks whose intervals never overlap)."""
    return np.bincount(group, weights=(end - start).astype(np.float64), minlength=n_groups).astype(np.int64)


def overlaps(start: np.ndarray, end: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """Mask of intervals that share time with [t0, t1); a zero-length one counts when t0 <= start < t1."""
    return (start < t1) & ((end > t0) | ((end == start) & (start >= t0)))


def overlap_fraction(start: np.ndarray, end: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """Share of each interval's length inside [t0, t1) (1 or 0 for zero-length intervals).

    Used to prorate per-interval totals (a kernel's FLOPs, bytes) to a time window,
    assuming the interval did its work at a uniform rate.
    """
    s, e = clip(start, end, t0, t1)
    length = (end - start).astype(np.float64)
    inside = (e - s).astype(np.float64)
    frac = np.divide(inside, length, out=np.zeros(len(start)), where=length > 0)
    point = length <= 0
    frac[point] = ((start[point] >= t0) & (start[point] < t1)).astype(np.float64)
    return frac


def union_runs_per_group(
    group: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The covered runs (group, run_start, run_end) of each group's intervals, sorted by group then time.

    Each group is shifted into its own stretch of a single time line, so one sort
    and one running maximum handle every group at once. Traces store intervals as
    sorted runs per track, which the stable sort (timsort) merges in near-linear time.
    Empty intervals are ignored.
    """
    keep = end > start
    if not keep.any():
        empty = np.array([], dtype=np.int64)
        return empty, empty, empty
    if keep.all():  # the common case: no copies of 10M-row columns just to drop nothing
        g, s, e = group, start, end
    else:
        g, s, e = group[keep], start[keep], end[keep]
    g = g.astype(np.int64, copy=False)
    s = s.astype(np.int64, copy=False)
    e = e.astype(np.int64, copy=False)
    lo = int(s.min())
    stride = int(e.max()) - lo + 1
    if stride * (int(g.max()) + 2) >= 2**62:  # groups cannot share one int64 time line
        return _union_runs_group_by_group(g, s, e)
    base = g * stride - lo
    s = s + base
    e = e + base
    if not (s[1:] >= s[:-1]).all():
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    run_start, run_end = sorted_runs(s, e)
    run_group = run_start // stride
    shift = run_group * stride - lo
    return run_group, run_start - shift, run_end - shift


def _union_runs_group_by_group(
    g: np.ndarray, s: np.ndarray, e: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`union_runs_per_group` one group at a time: for spans so long (up to 2^62 ns) that
    group * stride would overflow int64. Slower (a loop over groups), never wrong."""
    order = np.lexsort((s, g))
    g, s, e = g[order], s[order], e[order]
    cuts = np.flatnonzero(np.diff(g)) + 1
    parts = [sorted_runs(si, ei) for si, ei in zip(np.split(s, cuts), np.split(e, cuts))]
    groups = [np.full(len(rs), gi[0], np.int64) for (rs, _), gi in zip(parts, np.split(g, cuts))]
    return np.concatenate(groups), np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def sum_per_group(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Exact int64 sums of `values` per group id (bincount with int64 weights)."""
    if len(group) == 0:
        return np.zeros(n_groups, dtype=np.int64)
    order = None if (group[1:] >= group[:-1]).all() else np.argsort(group, kind="stable")
    g = group if order is None else group[order]
    v = values if order is None else values[order]
    bounds = np.searchsorted(g, np.arange(n_groups + 1))
    csum = np.concatenate(([0], np.cumsum(v, dtype=np.int64)))
    return csum[bounds[1:]] - csum[bounds[:-1]]


def union_length_per_group(group: np.ndarray, start: np.ndarray, end: np.ndarray, n_groups: int) -> np.ndarray:
    """Covered time per group id (overlaps inside a group counted once), int64 [n_groups]."""
    g, s, e = union_runs_per_group(group, start, end)
    return sum_per_group(g, e - s, n_groups)


def union_length_by_track_groups(
    track: np.ndarray, group_of_track: np.ndarray, start: np.ndarray, end: np.ndarray, n_groups: int
) -> np.ndarray:
    """`union_length_per_group` for intervals on tracks, where each track belongs to a group.

    Fast path: a group made of one track whose rows are contiguous and never overlap
    (an in-order engine) is covered exactly by the sum of its durations, so only the
    rest (e.g. the two Tensor rows of one engine) needs the sort-based union.
    """
    n = len(track)
    if n == 0:
        return np.zeros(n_groups, dtype=np.int64)
    n_tracks = len(group_of_track)
    change = track[1:] != track[:-1]
    present = np.bincount(track, minlength=n_tracks) > 0
    grouped = int(change.sum()) + 1 == int(present.sum())
    simple = np.zeros(n_tracks, dtype=bool)
    if grouped:
        overlap = ~change & (start[1:] < end[:-1])
        simple = present.copy()
        simple[np.unique(track[1:][overlap])] = False
        tracks_in_group = np.bincount(group_of_track[present], minlength=n_groups)
        simple &= tracks_in_group[group_of_track] == 1
    row_simple = simple[track]
    group = group_of_track[track]
    dur = (end - start).astype(np.float64)
    out = np.rint(np.bincount(group[row_simple], weights=dur[row_simple], minlength=n_groups)).astype(np.int64)
    rest = ~row_simple
    if rest.any():
        out += union_length_per_group(group[rest], start[rest], end[rest], n_groups)
    return out


def covered_by_runs(
    group: np.ndarray, start: np.ndarray, end: np.ndarray,
    run_group: np.ndarray, run_start: np.ndarray, run_end: np.ndarray,
) -> np.ndarray:
    """Mask of intervals lying inside one run of their group (runs sorted by group then start, disjoint)."""
    if len(run_group) == 0 or len(start) == 0:
        return np.zeros(len(start), dtype=bool)
    lo = min(int(start.min()), int(run_start.min()))
    stride = max(int(end.max()), int(run_end.max())) - lo + 1
    if stride * (max(int(group.max()), int(run_group.max())) + 2) >= 2**62:
        return np.zeros(len(start), dtype=bool)
    keys = run_group.astype(np.int64) * stride + (run_start - lo)
    q = group.astype(np.int64) * stride + (start - lo)
    idx = np.searchsorted(keys, q, side="right") - 1
    ok = idx >= 0
    i = np.maximum(idx, 0)
    return ok & (run_group[i] == group) & (run_end[i] >= end) & (run_start[i] <= start)


def mean_concurrency(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For each interval, the mean number of intervals of its group running during it (itself included).

    A step function of the active count per group (intervals touching end-to-start do
    not overlap) and its running integral, queried at each interval's ends. Zero-length
    intervals get 1.
    """
    n = len(start)
    if n == 0:
        return np.zeros(0)
    g = group.astype(np.int64)
    lo = int(start.min())
    stride = int(end.max()) - lo + 1
    s = g * stride + (start.astype(np.int64) - lo)
    e = g * stride + (end.astype(np.int64) - lo)
    t = np.concatenate([s, e])
    d = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
    order = np.lexsort((d, t))  # at equal times ends (-1) come first
    t, d = t[order], d[order]
    active = np.cumsum(d)  # count on [t[i], t[i+1])
    integral = np.concatenate(([0.0], np.cumsum(np.diff(t) * active[:-1].astype(np.float64))))

    def at(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(t, x, side="right") - 1
        return integral[i] + active[i] * (x - t[i])

    length = (e - s).astype(np.float64)
    out = np.ones(n)
    pos = length > 0
    out[pos] = (at(e[pos]) - at(s[pos]))[:] / length[pos]
    return np.maximum(out, 1.0)
