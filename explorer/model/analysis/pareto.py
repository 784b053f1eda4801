"""The Pareto front of two columns: the points no other point beats on both.

A sweep's question is a trade-off (tokens per second per chip against step latency), and
the answer is the front: for each latency, the most throughput any configuration reaches.
"""

from __future__ import annotations

import numpy as np


def pareto_front(x: np.ndarray, y: np.ndarray, higher_x: bool = True, higher_y: bool = True) -> np.ndarray:
    """Indices of the non-dominated points, ordered by x (ascending); NaN points never count.

    A point is dominated when another is at least as good on both axes and better on one
    (better: higher when `higher_*`, else lower). Of identical points the first is kept.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    if ok.size == 0:
        return ok
    a = x[ok] if higher_x else -x[ok]
    b = y[ok] if higher_y else -y[ok]
    order = np.lexsort((np.arange(ok.size), -b, -a))   # best a first; among equal a, best b first
    front = []
    best_b = -np.inf
    for i in order:
        if b[i] > best_b:
            front.append(ok[i])
            best_b = b[i]
    idx = np.asarray(front, dtype=np.int64)
    return idx[np.argsort(x[idx], kind="stable")]
