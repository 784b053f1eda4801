"""Engine and DMA activity per core, one core's track slices at a time.

Writers group instruction and DMA rows by track with starts sorted
(docs/trace-format.md), so each track is a contiguous slice of its table, and a table
streamed in record batches keeps a track within one or a few chunks. `core_activity`
walks the cores (units): per core it reads its tracks' slices (numpy views of the
memory-mapped chunks, see `table_chunks.TrackReader`), counts and measures them, and
keeps only the intervals lying outside the core's kernels for its total active time.
Temporaries are one core's rows at most, never a 10M-row column.

Per slice, an in-order engine row is covered exactly by the sum of its durations (no
sort); only engines drawn on two rows (the Tensor and TensorMatrix rows) or rows that
overlap need the sort-based union. Ungrouped input (a track in several runs) is read
through one stable sort by track: the same arithmetic, whole-column memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from explorer.model.intervals import (
    clip,
    covered_by_runs,
    overlaps,
    sum_per_group,
    union_length,
    union_length_by_track_groups,
)
from explorer.model.table_chunks import TrackReader

Intervals = tuple[np.ndarray, np.ndarray, np.ndarray]
SWEEP_MIN_ROWS = 200_000  # from here a compiled sweep (explorer.model.analysis.sweeps) beats numpy's sort


@dataclass(frozen=True)
class Window:
    """Which rows count: those of tracks in scope overlapping [t0, t1), cut to it.

    `whole`: [t0, t1) covers the trace (nothing to cut); `all_tracks`: every track is in
    scope. Engine instructions are filtered only when one of them is False, DMA transfers
    always (as `overlaps` drops a zero-length transfer at the window's very end).
    """

    t0: int
    t1: int
    whole: bool
    in_tracks: np.ndarray  # bool per track id
    all_tracks: bool

    def cut(self, start: np.ndarray, end: np.ndarray, always: bool, *more: np.ndarray) -> tuple[np.ndarray, ...]:
        """(start, end, *more) of the rows that count, start and end cut to the window."""
        if not always and self.whole and self.all_tracks:
            return (start, end, *more)
        keep = overlaps(start, end, self.t0, self.t1)
        if not keep.all():
            start, end, more = start[keep], end[keep], tuple(m[keep] for m in more)
        if not (self.whole and not always):
            start, end = clip(start, end, self.t0, self.t1)
        return (start, end, *more)


@dataclass
class CoreActivity:
    """What `core_activity` measures: per engine group and per unit (core)."""

    engine_count: np.ndarray  # instructions per group
    engine_active: np.ndarray  # covered ns per group
    dma_active: np.ndarray  # covered ns per unit (all its queues together)
    dma_count: np.ndarray  # transfers per unit
    dma_bytes: np.ndarray  # their bytes (int64)
    dma_small: np.ndarray  # transfers under the small-transfer threshold
    total_active: np.ndarray  # per unit: covered by a kernel, an engine instruction or a DMA transfer


def core_activity(
    ins: TrackReader | None,
    dma: TrackReader | None,
    unit_of_track: np.ndarray,
    group_of_track: np.ndarray,
    n_units: int,
    n_groups: int,
    kernel_runs: Intervals,
    window: Window,
    small_bytes_per_partition: int,
) -> CoreActivity:
    """Instruction counts and busy time per engine group, DMA totals per unit and each unit's
    total active time (its kernel runs plus whatever lies outside them), one unit at a time.

    `kernel_runs` are (unit, start, end) runs sorted by unit then start, disjoint per unit.
    """
    z = np.zeros
    act = CoreActivity(z(n_groups, np.int64), z(n_groups, np.int64), z(n_units, np.int64), z(n_units, np.int64),
                       z(n_units, np.int64), z(n_units, np.int64), z(n_units, np.int64))
    run_u, run_s, run_e = kernel_runs
    # a unit without instructions or DMA is active exactly when its (disjoint) kernel runs are
    act.total_active += sum_per_group(run_u, run_e - run_s, n_units)
    run_bounds = np.searchsorted(run_u, np.arange(n_units + 1))
    work: dict[int, tuple[list[int], list[int]]] = {}
    for i, reader in enumerate((ins, dma)):
        if reader is not None:
            for t in reader.tracks.tolist():
                if window.in_tracks[t]:
                    work.setdefault(int(unit_of_track[t]), ([], []))[i].append(t)
    for u in sorted(work):
        ins_tracks, dma_tracks = work[u]
        rs, re = run_s[run_bounds[u]:run_bounds[u + 1]], run_e[run_bounds[u]:run_bounds[u + 1]]
        pieces: list[tuple[np.ndarray, np.ndarray]] = [(rs, re)]
        if ins_tracks:
            assert ins is not None
            slices = []
            for t in ins_tracks:
                start = ins.read(t, "start_ns")
                s, e = window.cut(start, start + ins.read(t, "dur_ns"), False)
                slices.append((t, s, e))
            outside = _slices_activity(slices, group_of_track, act.engine_count, act.engine_active, rs, re)
            pieces.extend(outside)
        if dma_tracks:
            assert dma is not None
            parts = []
            for t in dma_tracks:
                start = dma.read(t, "start_ns")
                s, e, nbytes, part = window.cut(start, start + dma.read(t, "dur_ns"), True,
                                                dma.read(t, "bytes"), dma.read(t, "partitions"))
                act.dma_count[u] += len(s)
                act.dma_bytes[u] += int(nbytes.astype(np.int64).sum())
                act.dma_small[u] += int((nbytes < small_bytes_per_partition * np.maximum(part, 1)).sum())
                parts.append((s, e))
                pieces.append(_outside(s, e, rs, re))
            act.dma_active[u] += _union(parts)
        act.total_active[u] = _union(pieces)
    return act


def _concat(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _union(parts: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Time covered by the intervals of several parts (track slices, kernel runs), each sorted by
    start: merged in one compiled pass when they are many (`sweeps`), else sorted by numpy."""
    if sum(len(p[0]) for p in parts) >= SWEEP_MIN_ROWS:
        from explorer.model.analysis.sweeps import merged_union_length

        bounds = np.cumsum([0] + [len(p[0]) for p in parts], dtype=np.int64)
        s, e = (np.concatenate([p[i] for p in parts]).astype(np.int64, copy=False) for i in (0, 1))
        total = merged_union_length(s, e, bounds)
        if total >= 0:
            return int(total)
    return union_length(*_concat(parts))


def _outside(s: np.ndarray, e: np.ndarray, run_s: np.ndarray, run_e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The non-empty intervals not lying inside one of a unit's kernel runs (sorted, disjoint)."""
    if len(run_s) == 0:
        out = e > s
    elif len(s) >= SWEEP_MIN_ROWS:  # starts sorted (a track's slice): one compiled pass
        from explorer.model.analysis.sweeps import outside_runs

        out = outside_runs(s.astype(np.int64, copy=False), e.astype(np.int64, copy=False),
                           run_s.astype(np.int64, copy=False), run_e.astype(np.int64, copy=False))
    else:
        idx = np.searchsorted(run_s, s, side="right") - 1
        out = ((idx < 0) | (run_e[np.maximum(idx, 0)] < e)) & (e > s)
    return s[out], e[out]


def _covered(parts: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Time covered by a group's intervals: the sum of durations when it is one in-order row."""
    if len(parts) == 1:
        s, e = parts[0]
        if len(s) < 2 or bool((s[1:] >= e[:-1]).all()):  # sorted and disjoint
            return int((e - s).sum())
    return _union(parts)


def _slices_activity(
    slices: Iterable[tuple[int, np.ndarray, np.ndarray]],
    group_of_track: np.ndarray,
    count: np.ndarray,
    active: np.ndarray,
    run_s: np.ndarray,
    run_e: np.ndarray,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Add one unit's track slices (track, start, end) to `count` and `active` per group;
    return their intervals lying outside the unit's kernel runs (run_s, run_e)."""
    by_group: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    outside = []
    for track, s, e in slices:
        g = int(group_of_track[track])
        count[g] += len(s)
        by_group.setdefault(g, []).append((s, e))
        o = _outside(s, e, run_s, run_e)
        if len(o[0]):
            outside.append(o)
    for g, parts in by_group.items():
        active[g] += _covered(parts)
    return outside


def engine_activity(
    tid: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    group_of_track: np.ndarray,
    unit_of_track: np.ndarray,
    n_groups: int,
    kernel_runs: Intervals,
) -> tuple[np.ndarray, np.ndarray, list[Intervals]]:
    """(instruction count per group, covered ns per group, intervals lying outside their unit's
    kernel runs) of whole arrays: the per-unit slice arithmetic of `core_activity`.

    `kernel_runs` are (unit, start, end) runs sorted by unit then start, disjoint per unit.
    """
    n = len(tid)
    count, active = np.zeros(n_groups, np.int64), np.zeros(n_groups, np.int64)
    if n == 0:
        return count, active, []
    first = np.r_[0, np.flatnonzero(tid[1:] != tid[:-1]) + 1]
    slice_track = tid[first]
    if len(np.unique(slice_track)) != len(slice_track):  # a track in several slices: not grouped
        return _generic(tid, start, end, group_of_track, unit_of_track, n_groups, kernel_runs)
    last = np.r_[first[1:], n]
    run_u, run_s, run_e = kernel_runs
    units = unit_of_track[slice_track]
    bounds = np.searchsorted(run_u, np.arange(int(units.max(initial=0)) + 2))
    outside: list[Intervals] = []
    for u in np.unique(units).tolist():
        mine = np.flatnonzero(units == u)
        rs, re = run_s[bounds[u]:bounds[u + 1]], run_e[bounds[u]:bounds[u + 1]]
        slices = [(int(slice_track[i]), start[first[i]:last[i]], end[first[i]:last[i]]) for i in mine]
        for s, e in _slices_activity(slices, group_of_track, count, active, rs, re):
            outside.append((np.full(len(s), u, np.int64), s, e))
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
