"""A timed program as trace rows: one chunk per engine track, DMA queues to `dma` and the
other engines to `instructions`, plus the cross-engine dependencies as `flows`.

Single- and multi-chip captures both turn a detailed core's program into rows this way;
the trace contract (rows grouped by track, starts never decreasing) lives here once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from simcore.lowering.program import Program

Rows = dict[str, np.ndarray]


def rows_by_track(p: Program, ids: np.ndarray, start: np.ndarray, end: np.ndarray, kernel_id: int,
                  engine_base: int) -> Iterator[tuple[int, bool, Rows]]:
    """(track, is_dma, rows) for each engine the program uses.

    A stable sort by engine keeps each track's rows in program order, so their starts never
    decrease (engines run their queues in order).
    """
    n = len(p)
    order = np.argsort(p.engine, kind="stable")
    eng = p.engine[order]
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(eng)) + 1, [n]])
    dur = end - start
    for a, b in zip(bounds[:-1], bounds[1:]):
        sel = order[a:b]
        track = int(engine_base + eng[a])
        kernel = np.full(len(sel), kernel_id, np.int64)
        if p.partitions[sel[0]] > 0:
            yield track, True, {
                "id": ids[sel], "start_ns": start[sel], "dur_ns": dur[sel], "bytes": p.bytes[sel],
                "partitions": p.partitions[sel], "src": p.src[sel].astype(np.int32),
                "dst": p.dst[sel].astype(np.int32), "kernel_id": kernel}
        else:
            yield track, False, {
                "id": ids[sel], "start_ns": start[sel], "dur_ns": dur[sel], "opcode": p.opcode[sel].astype(np.int32),
                "kernel_id": kernel, "flops": p.flops[sel], "bytes": p.bytes[sel], "dtype": p.dtype[sel].astype(np.int32)}


def cross_engine_flows(p: Program, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(src_id, dst_id) of every dependency between two engines (same-engine order is implicit)."""
    if not len(p.dep_idx):
        return None
    owner = np.repeat(np.arange(len(p)), np.diff(p.dep_ptr))
    cross = p.engine[owner] != p.engine[p.dep_idx]
    return ids[p.dep_idx[cross]], ids[owner[cross]]
