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


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Total time covered by at least one interval (overlaps counted once)."""
    if len(start) == 0:
        return 0
    order = np.argsort(start, kind="stable")
    s = start[order].astype(np.int64, copy=False)
    e = end[order].astype(np.int64, copy=False)
    reach = np.maximum.accumulate(e)
    # an interval starts a new covered run when it begins after everything before it ended
    new_run = np.empty(len(s), dtype=bool)
    new_run[0] = True
    new_run[1:] = s[1:] > reach[:-1]
    run_start = s[new_run]
    run_idx = np.flatnonzero(new_run)
    run_end = reach[np.r_[run_idx[1:] - 1, len(s) - 1]]
    return int((run_end - run_start).sum())


def union_length_in(start: np.ndarray, end: np.ndarray, t0: int, t1: int) -> int:
    """`union_length` of the intervals clipped to [t0, t1)."""
    s, e = clip(start, end, t0, t1)
    keep = e > s
    return union_length(s[keep], e[keep])


def busy_per_group(group: np.ndarray, start: np.ndarray, end: np.ndarray, n_groups: int) -> np.ndarray:
    """Summed durations per group id (for tracks whose intervals never overlap)."""
    return np.bincount(group, weights=(end - start).astype(np.float64), minlength=n_groups).astype(np.int64)
