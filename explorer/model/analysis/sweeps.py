"""Linear sweeps over start-sorted intervals, compiled with numba.

numpy can take the union of sorted interval lists only through a sort (or a binary search
per interval): ~0.5 s for the two tensor-engine rows of a 9M-instruction core. Merging
the already-sorted lists in one pass does it in ~20 ms. numba is a declared dependency
(the scheduler uses it); this module is imported on first use, so commands that never
measure engine time do not load it. Functions compile once per machine (`cache=True`)
and release the GIL (`nogil=True`), so the GUI's analysis worker does not stall the window.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def merged_union_length(start: np.ndarray, end: np.ndarray, bounds: np.ndarray) -> int:
    """Time covered by the intervals of several parts, each sorted by start; -1 when a part is not.

    Part k is rows [bounds[k], bounds[k+1]) of `start`/`end`. The parts are merged by start
    on the fly (a scan over the part heads: parts are few, a core's rows) and the covered
    runs summed, exactly as `intervals.union_length` sums them after sorting.
    """
    k = len(bounds) - 1
    head = bounds[:-1].copy()
    total = 0
    run_start = 0
    reach = 0
    started = False
    while True:
        best = -1
        for p in range(k):
            i = head[p]
            if i < bounds[p + 1] and (best < 0 or start[i] < start[head[best]]):
                best = p
        if best < 0:
            break
        i = head[best]
        head[best] = i + 1
        if i + 1 < bounds[best + 1] and start[i + 1] < start[i]:
            return -1
        s, e = start[i], end[i]
        if not started:
            run_start, reach, started = s, e, True
        elif s > reach:
            total += reach - run_start
            run_start, reach = s, e
        elif e > reach:
            reach = e
    if started:
        total += reach - run_start
    return total


@njit(cache=True, nogil=True)
def outside_runs(start: np.ndarray, end: np.ndarray, run_start: np.ndarray, run_end: np.ndarray) -> np.ndarray:
    """Mask of non-empty intervals not lying inside one of the runs (runs sorted and disjoint,
    intervals sorted by start): a pointer walks the runs as the starts grow."""
    n = len(start)
    out = np.empty(n, np.bool_)
    r = -1
    for i in range(n):
        s = start[i]
        if i and s < start[i - 1]:  # not sorted after all: find its run afresh
            r = np.searchsorted(run_start, s, side="right") - 1
        while r + 1 < len(run_start) and run_start[r + 1] <= s:
            r += 1
        out[i] = end[i] > s and (r < 0 or run_end[r] < end[i])
    return out


@njit(cache=True, nogil=True)
def dma_flow_rows(src, dst, lo, table_of, row_of, dma_end, out_row, out_end) -> int:
    """`dma_waits`' first step in one pass: for flows from a DMA transfer to an instruction, the
    instruction's row and the transfer's end, ids looked up in the event index's direct table
    (`lo`, `table_of`: 0 instruction, 1 DMA, `row_of`). Flows come in destination order, so an
    instruction's are adjacent and are written once, with their latest end. Returns the count."""
    m = 0
    size = len(table_of)
    for i in range(len(src)):
        d = dst[i] - lo
        if d < 0 or d >= size or table_of[d] != 0:
            continue
        s = src[i] - lo
        if s < 0 or s >= size or table_of[s] != 1:
            continue
        row, end = row_of[d], dma_end[row_of[s]]
        if m and out_row[m - 1] == row:
            if end > out_end[m - 1]:
                out_end[m - 1] = end
            continue
        out_row[m] = row
        out_end[m] = end
        m += 1
    return m


@njit(cache=True, nogil=True)
def tensor_row_waits(rows, ends, starts, durs, kernels, offsets, run_lo, run_tensor, kernel_ids, kernel_starts, t0,
                     out_row, out_wait, out_kernel) -> int:
    """`dma_waits`' second step in one pass: for distinct instruction rows with the end of the transfer
    that binds them, the wait of those on a tensor run (`run_lo`, `run_tensor`): from max(the previous
    row's end in its run, its kernel's start; the trace start `t0` when there is neither) to
    min(transfer end, its start). Instruction columns come as per-chunk arrays (`starts`, `durs`,
    `kernels`; `offsets`: each chunk's first row); rows are visited chunk by chunk (a counting sort),
    so a chunk's arrays are taken from the list once, not once per row. Writes (row, wait, kernel id);
    returns the count."""
    n = len(rows)
    n_chunks = len(offsets) - 1
    chunk = np.empty(n, np.int64)
    first = np.zeros(n_chunks + 1, np.int64)
    for i in range(n):
        c = np.searchsorted(offsets, rows[i], side="right") - 1
        chunk[i] = c
        first[c + 1] += 1
    for c in range(n_chunks):
        first[c + 1] += first[c]
    order = np.empty(n, np.int64)
    fill = first[:-1].copy()
    for i in range(n):
        order[fill[chunk[i]]] = i
        fill[chunk[i]] += 1
    m = 0
    last_k, last_ks = -1, t0
    known = False
    for c in range(n_chunks):
        if first[c + 1] == first[c]:
            continue
        st, du, ke = starts[c], durs[c], kernels[c]
        base = offsets[c]
        for q in range(first[c], first[c + 1]):
            i = order[q]
            row = rows[i]
            r = np.searchsorted(run_lo, row, side="right") - 1
            if not run_tensor[r]:
                continue
            free = t0
            if row > run_lo[r]:
                p = row - 1
                if p >= base:
                    free = st[p - base] + du[p - base]
                else:  # the previous row ends the previous non-empty chunk
                    cp = np.searchsorted(offsets, p, side="right") - 1
                    free = starts[cp][p - offsets[cp]] + durs[cp][p - offsets[cp]]
            k = ke[row - base]
            if k != last_k or m == 0:
                j = np.searchsorted(kernel_ids, k)
                known = j < len(kernel_ids) and kernel_ids[j] == k
                last_k, last_ks = k, kernel_starts[j] if known else t0
            if last_ks > free:
                free = last_ks
            start = st[row - base]
            wait = min(ends[i], start) - free
            out_row[m] = row
            out_wait[m] = wait if wait > 0 else 0
            out_kernel[m] = k
            m += 1
    return m
