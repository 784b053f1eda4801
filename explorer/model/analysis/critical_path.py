"""The trace's critical path at kernel and collective level: the wall-clock chain of work that set its end.

Recommendations rank by the wall-clock time a problem holds on this path (`impact_ns`),
so a straggler that delays every chip outranks a waste spread over idle cores, and no
impact exceeds the trace.

The walk starts from the activity (a kernel, or a collective's transfer) that ends last
and steps back to the activity that finished last at or before the current one started
-- the one it waited for when cores meet at op boundaries, barriers and collectives (how
SPMD steps run: an op starts on every core once the slowest core finished the previous
one). Time between the two is a `gap` (runtime launch, barrier, idle) on the path. A
collective's predecessor is the last rank's work before it, so a straggler's compute is
on the path and the other ranks' waits are not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from explorer.model.columns import num
from simcore.jit import njit
from simcore.trace import Trace

KERNEL, COLLECTIVE = 0, 1
KINDS = ("kernel", "collective")


@njit(cache=True)
def _walk_back(start: np.ndarray, end: np.ndarray, order: np.ndarray, sorted_end: np.ndarray) -> np.ndarray:
    """Activity indices on the path, last first: from the latest-ending one, each step to the
    activity that ended last at or before the current one's start (strictly earlier in end
    order, so the walk always ends)."""
    n = len(start)
    out = np.empty(n, np.int64)
    if n == 0:
        return out[:0]
    pos = n - 1  # position in end order of the current activity
    k = 0
    while pos >= 0:
        cur = order[pos]
        out[k] = cur
        k += 1
        nxt = np.searchsorted(sorted_end, start[cur], side="right") - 1
        pos = min(nxt, pos - 1)
    return out[:k]


@dataclass
class CriticalPath:
    """Path segments in time order: `kind` (kernel, collective, gap), `ref` (kernel_id or
    collective_id; -1 for a gap), `chip`, `core` (-1 for collectives and gaps), `start_ns`, `end_ns`."""

    segments: pd.DataFrame
    span_ns: tuple[int, int]

    @property
    def length_ns(self) -> int:
        s = self.segments
        return int((s["end_ns"] - s["start_ns"]).sum()) if len(s) else 0

    def kernel_ids(self) -> np.ndarray:
        s = self.segments
        return s.loc[s["kind"] == "kernel", "ref"].to_numpy(np.int64)

    def time_of(self, kind: str) -> int:
        s = self.segments[self.segments["kind"] == kind]
        return int((s["end_ns"] - s["start_ns"]).sum())

    def on_path_ns(self, kernel_fraction: pd.Series) -> int:
        """Wall-clock time on the path explained by a per-kernel fraction (kernel_id -> 0..1 of
        the kernel's time a problem accounts for); kernels not in the series count 0."""
        s = self.segments[self.segments["kind"] == "kernel"]
        if s.empty or kernel_fraction.empty:
            return 0
        f = kernel_fraction.reindex(s["ref"].to_numpy()).fillna(0.0).clip(0.0, 1.0).to_numpy()
        return int(round(float(((s["end_ns"] - s["start_ns"]).to_numpy() * f).sum())))


def critical_path(trace: Trace) -> CriticalPath:
    """The kernel/collective-level critical path of the whole trace (see the module docstring)."""
    k = trace.kernels
    cc = trace.collectives
    starts, ends, kinds, refs, chips, cores = [], [], [], [], [], []
    if k.num_rows:
        s = num(k, "start_ns").astype(np.int64)
        starts.append(s)
        ends.append(s + num(k, "dur_ns").astype(np.int64))
        kinds.append(np.full(len(s), KERNEL, np.int8))
        refs.append(num(k, "kernel_id").astype(np.int64))
        chips.append(num(k, "chip").astype(np.int64))
        cores.append(num(k, "core").astype(np.int64))
    if cc.num_rows:
        f = pd.DataFrame({"cid": num(cc, "collective_id"), "start": num(cc, "start_ns"), "end": num(cc, "end_ns")})
        g = f.groupby("cid", sort=True).agg(start=("start", "min"), end=("end", "max"))
        starts.append(g["start"].to_numpy(np.int64))
        ends.append(g["end"].to_numpy(np.int64))
        kinds.append(np.full(len(g), COLLECTIVE, np.int8))
        refs.append(g.index.to_numpy(np.int64))
        chips.append(np.full(len(g), -1, np.int64))
        cores.append(np.full(len(g), -1, np.int64))
    span = tuple(int(x) for x in trace.span_ns)
    columns = ["kind", "ref", "chip", "core", "start_ns", "end_ns"]
    if not starts:
        return CriticalPath(pd.DataFrame(columns=columns), span)
    start, end = np.concatenate(starts), np.concatenate(ends)
    kind, ref = np.concatenate(kinds), np.concatenate(refs)
    chip, core = np.concatenate(chips), np.concatenate(cores)
    order = np.lexsort((start, end))  # by end; of equal ends the later start first on the path
    path = _walk_back(start, end, order, end[order])[::-1]
    ps, pe = start[path], end[path]
    gap_start, gap_end = pe[:-1], ps[1:]
    has_gap = gap_end > gap_start
    seg = pd.DataFrame({
        "kind": np.asarray(KINDS, dtype=object)[kind[path]], "ref": ref[path], "chip": chip[path], "core": core[path],
        "start_ns": ps, "end_ns": pe,
    })
    if has_gap.any():
        gaps = pd.DataFrame({"kind": "gap", "ref": -1, "chip": -1, "core": -1,
                             "start_ns": gap_start[has_gap], "end_ns": gap_end[has_gap]})
        seg = pd.concat([seg, gaps], ignore_index=True)
    seg = seg.sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)
    return CriticalPath(seg[columns], span)
