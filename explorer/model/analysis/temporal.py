"""Where each rank's device time goes, as Holistic Trace Analysis (HTA) defines it.

Per rank (chip), over its *window* - first device activity start to last end:
- **idle**: window time with no kernel, copy or collective running;
- **compute**: time covered by at least one computation kernel;
- **non-compute**: the rest (communication or memory copies, not under compute);
  idle + compute + non-compute = window.
- **communication-computation overlap**: time where communication and computation
  both run, divided by the time communication runs.
- **stragglers**: ranks that arrive last at most of their collectives, making the
  others wait (`collectives.wait_ns`, computed across ranks).

Communication is a kernel whose name mentions NCCL/RCCL, a kernel whose op is a
collective, or a rank's collective interval [arrive, end]; memory is a `dma` row. For an
imported PyTorch-profiler trace the kernels are classified by name exactly as HTA 0.5.0
does (`hta.utils.utils.get_kernel_type`): communication `^nccl.*Kernel`, memory `^Memcpy`,
`^Memset`, `^dma`, computation anything that matches none of `^nccl.*Kernel`, `.*Memcpy`,
`^Memset`, `.*Sync`; memory and other kernels (synchronisations) count as non-compute; and
times are taken on HTA's microsecond grid (`hta_microseconds`).
docs/interop.md states the definitions with a worked example. Works on simulated
and imported traces alike; everything is a few vectorised passes per rank.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from simcore.trace import Trace
from simcore.trace.schema import IMPORTED_COLLECTIVE_KINDS
from explorer.model.columns import num
from explorer.model.intervals import union_length
from explorer.model.scope import Scope

COLLECTIVE_OP_KINDS = frozenset(IMPORTED_COLLECTIVE_KINDS)   # what a simulator or a profiler names a collective
_COMM_NAME = re.compile(r"nccl|rccl", re.I)
# HTA 0.5.0's kernel classification (hta/utils/utils.py), applied to imported PyTorch-profiler traces
HTA_COMM = re.compile(r"^nccl.*Kernel")
HTA_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")


def hta_microseconds(start: np.ndarray, end: np.ndarray, t0_us: float) -> tuple[np.ndarray, np.ndarray]:
    """Intervals on HTA's microsecond grid: HTA 0.5.0 reads the profiler's float timestamps, then
    rounds each start up and each end (start + duration, added in float as it does) down to a
    whole microsecond of the file's time (`round_down_time_stamps`). `start`/`end` are our ns
    from `t0_us`; `to_ns` made them exact multiples of the file's float steps, so the float
    time here is the file's own."""
    base = np.floor(t0_us)
    ts = t0_us + start / 1000.0
    end_us = ts + (end - start) / 1000.0
    return ((np.ceil(ts) - base) * 1000).astype(np.int64), ((np.floor(end_us) - base) * 1000).astype(np.int64)


def hta_kernel_class(name: str) -> str:
    """'comm', 'compute' or 'other' (memory and synchronisation) by HTA's name rules."""
    if HTA_COMM.match(name):
        return "comm"
    return "other" if HTA_NOT_COMPUTE.match(name) or re.match(r"(^Memcpy)|(^Memset)|(^dma)", name) else "compute"


def in_ranges(ids: np.ndarray, ranges: object) -> np.ndarray:
    """Per id, whether it lies in one of `ranges` ([start, end) pairs: the rows an import
    marks as left out of HTA's analysis, `meta.capture.hta_excluded`); a malformed value
    (a hand-edited trace) excludes nothing."""
    out = np.zeros(len(ids), dtype=bool)
    if not isinstance(ranges, list):
        return out
    good = sorted(r for r in ranges if isinstance(r, list) and len(r) == 2 and all(type(v) is int for v in r) and r[0] < r[1])
    if not good:
        return out
    lo = np.array([r[0] for r in good], dtype=np.int64)
    hi = np.maximum.accumulate(np.array([r[1] for r in good], dtype=np.int64))  # overlapping runs: the furthest end
    k = np.searchsorted(lo, ids, side="right") - 1
    inside = k >= 0
    out[inside] = ids[inside] < hi[k[inside]]
    return out


@dataclass(frozen=True)
class RankTime:
    """One rank's temporal breakdown; times in ns, shares in % of the window."""

    rank: int
    window_ns: int
    idle_ns: int
    compute_ns: int
    non_compute_ns: int
    comm_ns: int
    overlap_ns: int

    @property
    def idle_pct(self) -> float:
        return _pct(self.idle_ns, self.window_ns)

    @property
    def compute_pct(self) -> float:
        return _pct(self.compute_ns, self.window_ns)

    @property
    def non_compute_pct(self) -> float:
        return _pct(self.non_compute_ns, self.window_ns)

    @property
    def overlap_pct(self) -> float | None:
        """Communication-computation overlap: % of communication time under computation;
        None for a rank without communication (there is no ratio to take)."""
        return _pct(self.overlap_ns, self.comm_ns) if self.comm_ns > 0 else None

    def to_dict(self) -> dict[str, float | int | None]:
        d: dict[str, float | int | None] = asdict(self)
        d.update(idle_pct=self.idle_pct, compute_pct=self.compute_pct,
                 non_compute_pct=self.non_compute_pct, overlap_pct=self.overlap_pct)
        return d


def _pct(a: int, b: int) -> float:
    return 100.0 * a / b if b > 0 else 0.0


def _codes_matching(col: pa.ChunkedArray, pred) -> np.ndarray:
    """Per row, whether `pred` holds for its dictionary string (evaluated once per distinct string)."""
    out = []
    for chunk in col.chunks:
        if pa.types.is_dictionary(chunk.type):
            vocab = np.array([bool(pred(s)) for s in chunk.dictionary.to_pylist()] or [False])
            out.append(vocab[chunk.indices.to_numpy(zero_copy_only=False)])
        else:
            out.append(np.array([bool(pred(s)) for s in chunk.to_pylist()], dtype=bool))
    return np.concatenate(out) if out else np.zeros(0, dtype=bool)


class _Activity:
    """Device intervals of the whole trace, tagged by rank and category."""

    def __init__(self, trace: Trace) -> None:
        tracks = trace.tracks
        track_chip = np.zeros(0, dtype=np.int64)
        if tracks.num_rows:
            tid = num(tracks, "track_id")
            track_chip = np.full(int(tid.max()) + 1, -1, dtype=np.int64)
            track_chip[tid] = num(tracks, "chip")
        self.parts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

        def chip_of(track: np.ndarray) -> np.ndarray:  # -1 (ignored) for tracks the tracks table lacks
            inside = (track >= 0) & (track < len(track_chip))
            out = np.full(len(track), -1, dtype=np.int64)
            out[inside] = track_chip[track[inside]]
            return out

        kineto = trace.meta.get("source") == "kineto"
        capture = trace.meta.get("capture")
        skipped = (capture.get("hta_excluded") if isinstance(capture, dict) else None) if kineto else None
        skipped = skipped if isinstance(skipped, dict) else {}
        k = trace.kernels
        if k.num_rows:
            start, end = num(k, "start_ns"), num(k, "start_ns") + num(k, "dur_ns")
            chip = num(k, "chip").astype(np.int64)
            if kineto:  # HTA's definitions, by name only, over the events HTA analyses
                chip = np.where(in_ranges(num(k, "kernel_id"), skipped.get("kernels")), -1, chip)
                comm = _codes_matching(k.column("name"), lambda s: hta_kernel_class(s or "") == "comm")
                comp = _codes_matching(k.column("name"), lambda s: hta_kernel_class(s or "") == "compute")
                other = ~comm & ~comp
                self.parts["other_kernels"] = (chip[other], start[other], end[other])
            else:
                comm = _codes_matching(k.column("name"), lambda s: _COMM_NAME.search(s or "") is not None)
                comm |= self._collective_ops(trace, num(k, "op_id"))
                comp = ~comm
            self.parts["compute"] = (chip[comp], start[comp], end[comp])
            self.parts["comm_kernels"] = (chip[comm], start[comm], end[comm])
        c = trace.collectives
        if c.num_rows and trace.meta.get("source") != "kineto":  # an import's collectives are its comm kernels
            self.parts["collectives"] = (num(c, "chip").astype(np.int64), num(c, "arrive_ns"), num(c, "end_ns"))
        d = trace.dma
        if d.num_rows:
            s = num(d, "start_ns")
            chip = chip_of(num(d, "track_id"))
            if kineto:
                chip = np.where(in_ranges(num(d, "id"), skipped.get("dma")), -1, chip)
            self.parts["memory"] = (chip, s, s + num(d, "dur_ns"))
        if not k.num_rows:  # a trace with instructions only: engine instructions are the compute
            i = trace.instructions
            if i.num_rows:
                s = num(i, "start_ns")
                self.parts["compute"] = (chip_of(num(i, "track_id")), s, s + num(i, "dur_ns"))
        t0 = (trace.meta.get("capture") or {}).get("t0_us") if trace.meta.get("source") == "kineto" else None
        if isinstance(t0, (int, float)) and not isinstance(t0, bool) and np.isfinite(t0):
            self.parts = {k: (c, *hta_microseconds(st, en, float(t0))) for k, (c, st, en) in self.parts.items()}

    @staticmethod
    def _collective_ops(trace: Trace, op_id: np.ndarray) -> np.ndarray:
        ops = trace.ops
        if not ops.num_rows or not (op_id >= 0).any():
            return np.zeros(len(op_id), dtype=bool)
        ids = num(ops, "op_id")
        is_coll = _codes_matching(ops.column("kind"), lambda s: s in COLLECTIVE_OP_KINDS)
        lookup = dict(zip(ids[is_coll].tolist(), [True] * int(is_coll.sum())))
        if not lookup:
            return np.zeros(len(op_id), dtype=bool)
        coll_ids = np.array(sorted(lookup), dtype=np.int64)
        pos = np.clip(np.searchsorted(coll_ids, op_id), 0, len(coll_ids) - 1)
        return coll_ids[pos] == op_id

    def ranks(self) -> list[int]:
        chips = [p[0] for p in self.parts.values()]
        return sorted({int(c) for c in np.unique(np.concatenate(chips))} - {-1}) if chips else []

    def of(self, rank: int, *names: str) -> tuple[np.ndarray, np.ndarray]:
        starts, ends = [], []
        for n in names:
            part = self.parts.get(n)
            if part is not None:
                m = part[0] == rank
                starts.append(part[1][m])
                ends.append(part[2][m])
        if not starts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(starts), np.concatenate(ends)


def _intersection(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], ua: int, ub: int) -> int:
    """|A n B| = |A| + |B| - |A u B| for unions A and B."""
    both = union_length(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    return ua + ub - both


def _clip(part: tuple[np.ndarray, np.ndarray], t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
    """The intervals that overlap [t0, t1) (a zero-length one when inside it), cut to it."""
    s, e = part
    keep = ((s < t1) & (e > t0)) | ((s == e) & (s >= t0) & (s < t1))
    return np.clip(s[keep], t0, t1), np.clip(e[keep], t0, t1)


def breakdown(trace: Trace, scope: Scope | None = None) -> list[RankTime]:
    """The temporal breakdown and communication overlap of every rank (of the scope's
    chips, over the scope's window [t0, t1) when given: intervals are cut to it)."""
    act = _Activity(trace)
    out = []
    for r in act.ranks():
        if scope is not None and scope.chips is not None and r not in scope.chips:
            continue
        parts = {name: act.of(r, *names) for name, names in
                 (("all", ("compute", "comm_kernels", "other_kernels", "collectives", "memory")), ("comp", ("compute",)),
                  ("comm", ("comm_kernels", "collectives")))}
        if scope is not None:
            parts = {k: _clip(v, scope.t0, scope.t1) for k, v in parts.items()}
        everything, comp, comm = parts["all"], parts["comp"], parts["comm"]
        if not len(everything[0]):
            continue
        window = int(everything[1].max() - everything[0].min())
        busy = union_length(*everything)
        compute_ns = union_length(*comp)
        comm_ns = union_length(*comm)
        overlap = _intersection(comm, comp, comm_ns, compute_ns) if comm_ns and compute_ns else 0
        idle = window - busy
        out.append(RankTime(r, window, idle, compute_ns, window - idle - compute_ns, comm_ns, overlap))
    return out


def breakdown_frame(trace: Trace) -> pd.DataFrame:
    """`breakdown` as a table, one row per rank."""
    cols = ["rank", "window_ns", "idle_ns", "compute_ns", "non_compute_ns", "comm_ns", "overlap_ns",
            "idle_pct", "compute_pct", "non_compute_pct", "overlap_pct"]
    return pd.DataFrame([r.to_dict() for r in breakdown(trace)], columns=cols)


STRAGGLER_COLUMNS = ["rank", "collectives", "last_arrivals", "mean_lateness_ns", "caused_wait_ns", "own_wait_ns",
                     "is_straggler"]


def stragglers(trace: Trace, scope: Scope | None = None) -> pd.DataFrame:
    """Per rank: how often it arrived last at a collective and how much waiting it caused.

    Over collectives with two or more ranks in the trace: `lateness` is a rank's
    arrival minus the earliest arrival; the ranks arriving last (wait 0 while some
    other rank waited) share the collective's total wait as `caused_wait_ns`. A rank is
    a straggler when it arrives last at more than half of its collectives and made
    others wait. With a scope: the collective rows that overlap its window (arrive <
    t1 and end > t0, as the summary's collective table counts them), every rank of
    them counted, and the rows of the scope's chips returned.
    """
    cols = STRAGGLER_COLUMNS
    c = trace.collectives
    if not c.num_rows:
        return pd.DataFrame(columns=cols)
    cid = num(c, "collective_id")
    chip = num(c, "chip").astype(np.int64)
    arrive, wait = num(c, "arrive_ns"), num(c, "wait_ns")
    if scope is not None:
        keep = (arrive < scope.t1) & (num(c, "end_ns") > scope.t0)
        cid, chip, arrive, wait = cid[keep], chip[keep], arrive[keep], wait[keep]
        if not len(cid):
            return pd.DataFrame(columns=cols)
    _, inv = np.unique(cid, return_inverse=True)
    n = int(inv.max()) + 1
    members = np.bincount(inv, minlength=n)
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, inv, arrive)
    total_wait = np.bincount(inv, weights=wait.astype(np.float64), minlength=n)
    shared = members[inv] >= 2
    last = shared & (wait == 0) & (total_wait[inv] > 0)
    n_last = np.bincount(inv, weights=last.astype(np.float64), minlength=n)
    caused = np.where(last, total_wait[inv] / np.maximum(n_last[inv], 1), 0.0)
    lateness = (arrive - first[inv]).astype(np.float64)
    # a chip holding several ranks (logical cores) of a collective counts once per collective: it is
    # last when one of its ranks is, as late as its latest rank
    pair = inv.astype(np.int64) * (int(chip.max()) + 1) + chip
    _, first_row, pinv = np.unique(pair, return_index=True, return_inverse=True)
    p_last = np.zeros(len(first_row), bool)
    np.logical_or.at(p_last, pinv, last)
    p_late = np.zeros(len(first_row))
    np.maximum.at(p_late, pinv, np.where(shared, lateness, 0.0))
    p_chip, p_shared = chip[first_row], shared[first_row]
    ranks, prinv = np.unique(p_chip, return_inverse=True)
    rinv = np.searchsorted(ranks, chip)
    count = np.bincount(prinv, weights=p_shared.astype(np.float64), minlength=len(ranks))
    lasts = np.bincount(prinv, weights=p_last.astype(np.float64), minlength=len(ranks))
    late = np.bincount(prinv, weights=p_late, minlength=len(ranks))
    caused_r = np.bincount(rinv, weights=caused, minlength=len(ranks))
    own = np.bincount(rinv, weights=wait.astype(np.float64), minlength=len(ranks))
    frame = pd.DataFrame({
        "rank": ranks.astype(np.int64),
        "collectives": count.astype(np.int64),
        "last_arrivals": lasts.astype(np.int64),
        "mean_lateness_ns": np.divide(late, count, out=np.zeros(len(ranks)), where=count > 0),
        "caused_wait_ns": np.rint(caused_r).astype(np.int64),
        "own_wait_ns": own.astype(np.int64),
        "is_straggler": (lasts > count / 2) & (caused_r > 0),
    }, columns=cols)
    if scope is not None and scope.chips is not None:
        frame = frame[frame["rank"].isin(scope.chips)].reset_index(drop=True)
    return frame


@dataclass(frozen=True)
class TemporalSummary:
    """The temporal section of a summary: each rank's breakdown and overlap, and stragglers."""

    ranks: list[RankTime]
    stragglers: pd.DataFrame  # STRAGGLER_COLUMNS, one row per rank of the scope that took part in a collective

    @property
    def straggler_ranks(self) -> list[int]:
        return [int(r) for r in self.stragglers.loc[self.stragglers["is_straggler"].astype(bool), "rank"]]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready; a rank without communication has overlap_pct null (no ratio to take)."""
        ranks = [r.to_dict() for r in self.ranks]
        rows = [{k: (bool(v) if k == "is_straggler" else float(v) if k == "mean_lateness_ns" else int(v))
                 for k, v in row.items()} for row in self.stragglers.to_dict("records")]
        return {"ranks": ranks, "stragglers": rows, "straggler_ranks": self.straggler_ranks}


def temporal_summary(trace: Trace, scope: Scope | None = None) -> TemporalSummary | None:
    """The breakdown, overlap and stragglers of the scope's ranks, for `trnx summary`; None
    when there is nothing to compare or overlap: a simulation with fewer than two ranks with
    device activity and no communication (a measured trace always shows its breakdown)."""
    from explorer.model.analysis.name_diff import is_measured

    ranks = breakdown(trace, scope)
    if not ranks or (len(ranks) < 2 and not any(r.comm_ns for r in ranks) and not is_measured(trace)):
        return None
    return TemporalSummary(ranks, stragglers(trace, scope))
