"""Fluid sharing over time slices: how far one transfer gets through capacity others also use.

Written once because two parts of the simulator share capacity the same way: a core's DMA
engines and its chip's HBM inside an op's window (`timing/listsched.py`), and the chips'
links, collective DMA and HBM between chips (`collectives/links.py`). Time is cut into
slices; a ledger row (one resource) offers `cap[row]` per slice and records in `used[row,
slice]` what earlier transfers took. A transfer needs known amounts of some rows and takes
W ns alone; in each slice it progresses as far as the busiest of its rows still allows,
never faster than W allows. On an idle system it therefore takes exactly W, and transfers
that overlap on a row each slow down; they are served in the order they are resolved.

Ledgers count up from zeros: zeros are allocated lazily by the OS, so slices no transfer
touches cost no memory. `advance` is inlined into compiled callers (the scheduler calls it
once per DMA transfer). numba's on-disk cache alone would not notice an edit here (it checks
the caller's own file), so every compiled caller in another file is declared
`@depends_on(fluid)` (`simcore.jit`): an edit to this file recompiles them, no cache to clear.
"""

from __future__ import annotations

import numpy as np

from simcore.jit import njit

NO_TALLY = -1


@njit(cache=True, nogil=True, inline="always")
def advance(t, left, W, t0, slice_ns, used, cap, res, need, tally, frac, rest, served, n):
    """Advance a transfer from time t with `left` (of 1) of its work to do; returns (t, left).

    Entry e < n needs need[e] > 0 of row res[e] for the whole transfer; slice j of a row starts
    at t0 + j x slice_ns. With tally[e] >= 0, frac[e] of what entry e takes is added to
    served[tally[e], j] and, with rest[e] >= 0, the remainder to served[rest[e], j] (reads and
    writes of one HBM entry). Stops early (left > 0) at the ledger's last slice, so the caller
    can grow the ledger or redo its schedule with a longer one: nothing moves unaccounted."""
    if W <= 0.0:
        return t, 0.0
    n_slices = used.shape[1]
    j = int((t - t0) // slice_ns)
    while left > 1e-12:
        if j >= n_slices:
            return t, left
        slice_end = t0 + (j + 1) * slice_ns
        avail = slice_end - t
        if avail <= 1e-9:
            j += 1
            continue
        p = avail / W  # idle progress in the rest of this slice
        for e in range(n):
            q = (cap[res[e]] - used[res[e], j]) / need[e]
            if q < p:
                p = q
        if p <= 1e-15:
            t = slice_end
            j += 1
            continue
        rate = p / avail
        take = left if left <= p else p
        for e in range(n):
            b = take * need[e]
            used[res[e], j] += b
            k = tally[e]
            if k >= 0:
                served[k, j] += b * frac[e]
                if rest[e] >= 0:
                    served[rest[e], j] += b * (1.0 - frac[e])
        if left <= p:
            return t + left / rate, 0.0
        left -= p
        t = slice_end
        j += 1
    return t, left


@njit(cache=True, nogil=True)
def advance_one(t, left, W, t0, slice_ns, used, cap, row, need):
    """`advance` for one untallied entry, for callers in Python: scalars in, no arrays to build per call."""
    res = np.full(1, row, np.int64)
    nd = np.full(1, need, np.float64)
    none = np.full(1, NO_TALLY, np.int64)
    return advance(t, left, W, t0, slice_ns, used, cap, res, nd, none, nd, none, used, 1)


__all__ = ["NO_TALLY", "advance", "advance_one"]
