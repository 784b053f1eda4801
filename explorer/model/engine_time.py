"""Engine instruction counts and busy time per (core, engine), one track slice at a time.

Writers group instruction rows by track with starts sorted (docs/trace-format.md), so
each track is a contiguous slice. Per slice, an in-order engine row is covered exactly
by the sum of its durations (no sort), and only rows of engines drawn on two tracks
(the Tensor and TensorMatrix rows) or rows that overlap need the sort-based union.
Working slice by slice also keeps the "outside its kernels" test (for a core's total
active time) on small, cache-resident arrays. Ungrouped input takes the generic path.
"""

from __future__ import annotations

import numpy as np

from explorer.model.intervals import covered_by_runs, union_length_by_track_groups, union_length_per_group

Intervals = tuple[np.ndarray, np.ndarray, np.ndarray]


def engine_activity(
    tid: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    group_of_track: np.ndarray,
    unit_of_track: np.ndarray,
    n_groups: int,
    kernel_runs: Intervals,
) -> tuple[np.ndarray, np.ndarray, list[Intervals]]:
    """(instruction count per group, covered ns per group, intervals lying outside their unit's kernel runs).

    `kernel_runs` are (unit, start, end) runs sorted by unit then start, disjoint per unit.
    """
    n = len(tid)
    empty_counts = np.zeros(n_groups, np.int64)
    if n == 0:
        return empty_counts, empty_counts.copy(), []
    first = np.r_[0, np.flatnonzero(tid[1:] != tid[:-1]) + 1]
    slice_track = tid[first]
    if len(np.unique(slice_track)) != len(slice_track):  # a track in several slices: not grouped
        return _generic(tid, start, end, group_of_track, unit_of_track, n_groups, kernel_runs)
    last = np.r_[first[1:], n]
    length = last - first
    g = group_of_track[slice_track]
    count = np.bincount(g, weights=length, minlength=n_groups).astype(np.int64)
    dur = end - start
    dur_sum = np.add.reduceat(dur, first)
    overlap = np.zeros(n, np.int8)
    overlap[1:] = start[1:] < end[:-1]
    overlap[first] = 0  # a slice's first row does not overlap the previous track's last
    overlapping = np.add.reduceat(overlap, first) > 0
    tracks_in_group = np.bincount(g, minlength=n_groups)
    simple = (tracks_in_group[g] == 1) & ~overlapping
    active = np.rint(np.bincount(g[simple], weights=dur_sum[simple].astype(np.float64), minlength=n_groups)).astype(np.int64)
    if not simple.all():
        rest = np.repeat(~simple, length)
        active += union_length_per_group(group_of_track[tid[rest]], start[rest], end[rest], n_groups)
    run_u, run_s, run_e = kernel_runs
    unit_bounds = np.searchsorted(run_u, np.arange(int(unit_of_track.max(initial=0)) + 2))
    outside: list[Intervals] = []
    for a, b, track in zip(first.tolist(), last.tolist(), slice_track.tolist()):
        u = int(unit_of_track[track])
        lo, hi = (unit_bounds[u], unit_bounds[u + 1]) if u + 1 < len(unit_bounds) else (0, 0)
        s, e = start[a:b], end[a:b]
        if hi <= lo:
            out = np.ones(b - a, bool)
        else:
            rs, re = run_s[lo:hi], run_e[lo:hi]
            idx = np.searchsorted(rs, s, side="right") - 1
            out = (idx < 0) | (re[np.maximum(idx, 0)] < e)
        out &= e > s
        if out.any():
            outside.append((np.full(int(out.sum()), u, np.int64), s[out], e[out]))
    return count, active, outside


def _generic(
    tid: np.ndarray, start: np.ndarray, end: np.ndarray, group_of_track: np.ndarray, unit_of_track: np.ndarray,
    n_groups: int, kernel_runs: Intervals,
) -> tuple[np.ndarray, np.ndarray, list[Intervals]]:
    count = np.bincount(group_of_track[tid], minlength=n_groups).astype(np.int64)
    active = union_length_by_track_groups(tid, group_of_track, start, end, n_groups)
    unit = unit_of_track[tid]
    out = ~covered_by_runs(unit, start, end, *kernel_runs) & (end > start)
    return count, active, ([(unit[out], start[out], end[out])] if out.any() else [])
