"""Each rank's wait versus transfer time for the collectives in a time range.

A rank arrives when its own work is done and waits until the last rank arrives
(`wait_ns`); the rank that arrived last is the slowest one, the one every other rank
waited for. The matrix (rank x collective) is what the waits heat map shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.model.units import format_bytes
from explorer.model import columns
from explorer.model.timeline.trace_index import EventRef, TraceIndex

MAX_COLLECTIVES = 400


@dataclass
class CollectiveWaits:
    collective_ids: np.ndarray  # (n_coll,) in start order
    labels: list[str]  # per collective: "all_reduce 64 MiB #12"
    rank_tracks: list[int]  # cc track id per matrix row
    rank_labels: list[str]
    wait_ns: np.ndarray  # (n_rank, n_coll), NaN where the rank is not in the collective
    transfer_ns: np.ndarray  # (n_rank, n_coll)
    rows: np.ndarray  # (n_rank, n_coll) collectives-table row, -1 where absent
    slowest_rank: np.ndarray  # (n_coll,) matrix row of the last rank to arrive
    truncated: int  # collectives in range left out (beyond MAX_COLLECTIVES)
    scale_ns: float = 1.0  # the longest wait of any rank in the whole trace: one colour scale at every zoom

    def ref(self, rank_row: int, coll: int) -> EventRef | None:
        row = int(self.rows[rank_row, coll])
        return None if row < 0 else EventRef("collectives", row)

    @property
    def total_wait_per_rank(self) -> np.ndarray:
        return np.nansum(self.wait_ns, axis=1)

    @property
    def total_wait_ns(self) -> float:
        """Every rank's wait in these collectives, summed."""
        return float(np.nansum(self.wait_ns))

    def most_often_slowest(self) -> tuple[int, int]:
        """(matrix row, count) of the rank that arrived last at the most collectives (the lowest row on a tie)."""
        counts = np.bincount(self.slowest_rank, minlength=self.wait_ns.shape[0])
        worst = int(np.argmax(counts))
        return worst, int(counts[worst])


def collective_waits(index: TraceIndex, t0: int, t1: int, *, chips: set[int] | None = None) -> CollectiveWaits:
    """The collectives overlapping [t0, t1) (earliest MAX_COLLECTIVES of them)."""
    tab = index.trace.collectives
    cid = columns.num(tab, "collective_id")
    arrive, start, end = (columns.num(tab, c) for c in ("arrive_ns", "start_ns", "end_ns"))
    track = columns.num(tab, "track_id")
    keep = (end > t0) & (arrive < t1)
    if chips is not None:
        keep &= np.isin(columns.num(tab, "chip"), list(chips))
    rows = np.flatnonzero(keep)
    ids, first = np.unique(cid[rows], return_index=True) if len(rows) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    # order collectives by their start (the last arrival)
    ids = ids[np.argsort(start[rows][first], kind="stable")]
    truncated = max(len(ids) - MAX_COLLECTIVES, 0)
    ids = ids[:MAX_COLLECTIVES]
    rows = rows[np.isin(cid[rows], ids)]
    rank_tracks = sorted(set(int(t) for t in track[rows]))
    r_of = {t: i for i, t in enumerate(rank_tracks)}
    c_of = {int(c): i for i, c in enumerate(ids)}
    shape = (len(rank_tracks), len(ids))
    wait = np.full(shape, np.nan)
    xfer = np.full(shape, np.nan)
    cell = np.full(shape, -1, dtype=np.int64)
    ri = np.array([r_of[int(t)] for t in track[rows]], dtype=np.int64)
    ci = np.array([c_of[int(c)] for c in cid[rows]], dtype=np.int64)
    if len(rows):
        wait[ri, ci] = (start[rows] - arrive[rows]).astype(np.float64)
        xfer[ri, ci] = (end[rows] - start[rows]).astype(np.float64)
        cell[ri, ci] = rows
    arrive_m = np.full(shape, -np.inf)
    if len(rows):
        arrive_m[ri, ci] = arrive[rows].astype(np.float64)
    slowest = np.argmax(arrive_m, axis=0) if len(ids) else np.zeros(0, np.int64)
    kcodes, kvocab = columns.codes(tab, "kind")
    nbytes = columns.num(tab, "bytes")
    labels = []
    op_names = _op_names(index)
    op_of = columns.num(tab, "op_id")
    for c in ids:
        r = int(rows[np.argmax(cid[rows] == c)])
        op = op_names.get(int(op_of[r]), "")
        labels.append(f"#{int(c)} {kvocab[kcodes[r]]} {format_bytes(nbytes[r])}" + (f" ({op})" if op else ""))
    names = []
    for t in rank_tracks:
        info = index.tracks.get(t)
        names.append(f"chip {info.chip} {info.name}" if info else f"track {t}")
    return CollectiveWaits(ids, labels, rank_tracks, names, wait, xfer, cell, slowest, truncated,
                           max(float((start - arrive).max()) if len(start) else 0.0, 1.0))


def _op_names(index: TraceIndex) -> dict[int, str]:
    """op_id -> name of the ops collectives belong to (a trace has few ops; names from the ops table)."""
    ops = index.trace.ops
    if not ops.num_rows:
        return {}
    codes, vocab = columns.codes(ops, "name")
    return dict(zip(columns.num(ops, "op_id").tolist(), (vocab[c] for c in codes.tolist())))
