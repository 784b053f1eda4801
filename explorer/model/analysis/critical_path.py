"""The trace's critical path at kernel and collective level: the wall-clock chain of work that set its end.

Recommendations rank by the wall-clock time a problem holds on this path (`impact_ns`),
so a straggler that delays every chip outranks a waste spread over cores that were
waiting anyway, and no impact exceeds the trace.

The walk starts from the activity (a kernel, or a collective's transfer) that ends last
and steps back along dependencies the trace implies:
- a kernel waited for the activity of its own chip that finished last before it
  started: the previous kernel of its core, or another core's (a chip's cores meet at
  op boundaries and barriers: an op starts on every core once the slowest finished the
  previous one), or a collective the chip took part in;
- a collective waited for its last rank to arrive, so the step goes to that rank's chip,
  to its activity that finished last before it arrived: a straggler's compute is on the
  path, the other ranks' waits are not.
Chips meet only through collectives, so data-parallel replicas that never talk stay
apart. Time between two path activities is a `gap` (runtime launch, barrier, idle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from explorer.model.columns import num
from simcore.trace import Trace

KINDS = ("kernel", "collective")
_COLUMNS = ["kind", "ref", "chip", "core", "start_ns", "end_ns"]


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


class _Activities:
    """Every kernel and collective, and per chip its activities sorted by end (what a step back searches)."""

    def __init__(self, trace: Trace) -> None:
        k, cc = trace.kernels, trace.collectives
        nk = k.num_rows
        ks = num(k, "start_ns").astype(np.int64) if nk else np.zeros(0, np.int64)
        ke = ks + (num(k, "dur_ns").astype(np.int64) if nk else 0)
        kchip = num(k, "chip").astype(np.int64) if nk else np.zeros(0, np.int64)
        if cc.num_rows:
            f = pd.DataFrame({"cid": num(cc, "collective_id"), "chip": num(cc, "chip"), "arrive": num(cc, "arrive_ns"),
                              "start": num(cc, "start_ns"), "end": num(cc, "end_ns")})
            coll = f.groupby("cid", sort=True).agg(start=("start", "min"), end=("end", "max"))
            member = f.groupby(["cid", "chip"], as_index=False)["arrive"].max()  # a chip arrives with its last rank
        else:
            coll = pd.DataFrame(columns=["start", "end"], dtype=np.int64)
            member = pd.DataFrame({"cid": np.zeros(0, np.int64), "chip": np.zeros(0, np.int64),
                                   "arrive": np.zeros(0, np.int64)})
        nc = len(coll)
        # activity a: kernels 0..nk-1, collectives nk..nk+nc-1
        self.start = np.concatenate([ks, coll["start"].to_numpy(np.int64)])
        self.end = np.concatenate([ke, coll["end"].to_numpy(np.int64)])
        self.kind = np.r_[np.zeros(nk, np.int8), np.ones(nc, np.int8)]
        self.ref = np.concatenate([num(k, "kernel_id").astype(np.int64) if nk else np.zeros(0, np.int64),
                                   coll.index.to_numpy(np.int64)])
        self.chip = np.concatenate([kchip, np.full(nc, -1, np.int64)])
        self.core = np.concatenate([num(k, "core").astype(np.int64) if nk else np.zeros(0, np.int64),
                                    np.full(nc, -1, np.int64)])
        cpos = pd.Index(coll.index)
        # per collective: its chips and when each arrived (the last of them binds)
        self.arrivals: dict[int, list[tuple[int, int]]] = {}
        for a, chip, t in zip((nk + cpos.get_indexer(member["cid"].to_numpy())).tolist(),
                              member["chip"].tolist(), member["arrive"].tolist()):
            self.arrivals.setdefault(a, []).append((int(chip), int(t)))
        # per chip: its kernels and the collectives it took part in, by (end, start)
        owner = np.concatenate([kchip, member["chip"].to_numpy(np.int64)])
        act = np.concatenate([np.arange(nk), nk + cpos.get_indexer(member["cid"].to_numpy())])
        self.by_chip: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for chip in np.unique(owner).tolist():
            a = act[owner == chip]
            a = a[np.lexsort((self.start[a], self.end[a]))]
            self.by_chip[int(chip)] = (a, self.end[a])

    def __len__(self) -> int:
        return len(self.end)

    def latest_before(self, chip: int, t: int, exclude: int) -> int:
        """The activity of `chip` that ended last at or before `t` (not `exclude`); -1 if none."""
        found = self.by_chip.get(chip)
        if found is None:
            return -1
        acts, ends = found
        i = int(np.searchsorted(ends, t, side="right")) - 1
        while i >= 0 and acts[i] == exclude:
            i -= 1
        return int(acts[i]) if i >= 0 else -1


def critical_path(trace: Trace) -> CriticalPath:
    """The kernel/collective-level critical path of the whole trace (see the module docstring)."""
    span = tuple(int(x) for x in trace.span_ns)
    acts = _Activities(trace)
    if not len(acts):
        return CriticalPath(pd.DataFrame(columns=_COLUMNS), span)
    cur = int(np.lexsort((acts.start, acts.end))[-1])
    path, seen = [], set()
    while cur >= 0 and cur not in seen:
        seen.add(cur)
        path.append(cur)
        if acts.kind[cur] == 0:  # a kernel: its chip's latest activity before it started
            nxt = acts.latest_before(int(acts.chip[cur]), int(acts.start[cur]), cur)
        else:  # a collective: the last chip to arrive, its latest activity before it did (ties: the later one)
            best = (-1, -1, -1)
            for chip, arrive in acts.arrivals.get(cur, []):
                a = acts.latest_before(chip, arrive, cur)
                best = max(best, (arrive, int(acts.end[a]) if a >= 0 else -1, a))
            nxt = best[2]
        if nxt >= 0 and acts.end[nxt] > acts.start[cur]:  # (an arrival during a transfer: never on the path)
            nxt = -1
        cur = nxt
    p = np.asarray(path[::-1], np.int64)
    ps, pe = acts.start[p], acts.end[p]
    seg = pd.DataFrame({"kind": np.asarray(KINDS, dtype=object)[acts.kind[p]], "ref": acts.ref[p], "chip": acts.chip[p],
                        "core": acts.core[p], "start_ns": ps, "end_ns": pe})
    gap_start, gap_end = pe[:-1], ps[1:]
    has_gap = gap_end > gap_start
    if has_gap.any():
        gaps = pd.DataFrame({"kind": "gap", "ref": -1, "chip": -1, "core": -1,
                             "start_ns": gap_start[has_gap], "end_ns": gap_end[has_gap]})
        seg = pd.concat([seg, gaps], ignore_index=True)
    seg = seg.sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)
    return CriticalPath(seg[_COLUMNS], span)
