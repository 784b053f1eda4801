"""Which profiler scope contains which: the parent of each CPU op on its thread.

Profiler scopes (RecordFunction ranges) nest properly on one thread, so a parent is
the innermost earlier scope still open. `nesting_parents` finds all parents with a
few sorts and searches; `_nesting_parents_loop` is the stack walk for the traces whose
clock rounding left scopes improperly nested (an overlapping scope becomes a sibling).
"""

from __future__ import annotations

import numpy as np


def nesting_parents(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray | None:
    """Parent index (-1 for none) of each interval, for intervals sorted by (thread, start, -end)
    that nest properly within each thread (profiler scopes do); None when they do not.

    Vectorised: an interval's depth is its position in its thread minus the intervals of
    the thread that ended by its start; its parent is the last earlier interval of the
    thread one level up. The result is checked (every parent contains its child); a
    trace whose clock rounding breaks the nesting goes to the loop instead.
    """
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    point = end <= start
    if point.any():  # zero-length scopes: nest the others, then hang each point in the innermost scope open at it
        body = np.flatnonzero(~point)
        inner = nesting_parents(thread[body], start[body], end[body])
        if inner is None:
            return None
        parent = np.full(n, -1, dtype=np.int64)
        parent[body] = np.where(inner >= 0, body[np.maximum(inner, 0)], -1)
        pts = np.flatnonzero(point)
        if len(body):
            bt, bs, be = thread[body], start[body], end[body]
            # the last body scope of the same thread starting at or before the point
            cand = np.full(len(pts), -1, dtype=np.int64)
            for t in np.unique(thread[pts]).tolist():
                rows = np.flatnonzero(bt == t)
                if not len(rows):
                    continue
                at = np.flatnonzero(thread[pts] == t)
                k = np.searchsorted(bs[rows], start[pts[at]], side="right") - 1
                cand[at] = np.where(k >= 0, rows[np.maximum(k, 0)], -1)
            # walk up while the candidate closed before the point
            for _ in range(n + 1):
                bad = (cand >= 0) & (be[np.maximum(cand, 0)] < start[pts])
                if not bad.any():
                    break
                up = inner[cand[bad]]
                cand[bad] = up
            parent[pts] = np.where(cand >= 0, body[np.maximum(cand, 0)], -1)
        return parent
    lo, hi = int(start.min()), int(end.max())
    span = hi - lo + 1
    n_threads = int(thread.max()) + 1
    if span * (n_threads + 1) >= 1 << 62:
        return None  # the thread-major key would overflow
    key_start = thread * span + (start - lo)
    key_end = np.sort(thread * span + (end - lo))
    pos = np.arange(n, dtype=np.int64)
    first = np.searchsorted(thread, thread, side="left")  # sorted by thread: index of its first row
    ended = np.searchsorted(key_end, key_start, side="right") - np.searchsorted(key_end, thread * span, side="left")
    depth = (pos - first) - ended
    if (depth < 0).any():
        return None
    levels = int(depth.max()) + 2
    code = (thread * levels + depth) * n + pos
    order = np.argsort(code, kind="stable")
    codes = code[order]
    want = (thread * levels + (depth - 1)) * n + pos
    cand = np.searchsorted(codes, want, side="left") - 1
    parent = np.full(n, -1, dtype=np.int64)
    has = depth > 0
    c = order[np.maximum(cand, 0)]
    ok = has & (cand >= 0) & (thread[c] == thread) & (depth[c] == depth - 1)
    if (has & ~ok).any():
        return None
    parent[ok] = c[ok]
    p = parent[has]
    if not ((start[p] <= start[has]) & (end[p] >= end[has])).all():
        return None
    return parent


def _nesting_parents_loop(thread: list[int], start: list[int], end: list[int]) -> np.ndarray:
    """The same with a stack, tolerating improper nesting (an overlapping scope becomes a sibling)."""
    parent = np.full(len(start), -1, dtype=np.int64)
    stack: list[int] = []
    ends: list[int] = []
    current = -1
    for j, (th, s, e) in enumerate(zip(thread, start, end)):
        if th != current:
            current, stack, ends = th, [], []
        while ends and ends[-1] <= s and not (ends[-1] == s == e):
            stack.pop()
            ends.pop()
        while ends and ends[-1] < e:
            stack.pop()
            ends.pop()
        if stack:
            parent[j] = stack[-1]
        stack.append(j)
        ends.append(e)
    return parent
