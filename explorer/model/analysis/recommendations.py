"""Performance recommendations: rules that fire on evidence in the trace and link to where it is.

Each rule looks for one known problem and fires only when it explains a real share of
the work it is measured against. Its `impact_ns` is wall-clock time: the part of the
trace's critical path (explorer.model.analysis.critical_path) the problem accounts for,
never more than the trace, and rules are ranked by it -- a straggler that holds every
chip back outranks a waste spread over cores that were waiting anyway. A
`Recommendation` carries its evidence (numbers with units a user can check) and `Link`s
(hierarchy node, tracks and time range) that a view follows to the place in the trace.
Rules, thresholds and the reasoning are documented in docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from explorer.model.analysis.critical_path import CriticalPath, critical_path
from explorer.model.analysis.dma_waits import tensor_dma_waits
from explorer.model.events import INSTRUCTION, EventIndex
from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.columns import num, strings
from explorer.model.intervals import union_length, union_length_per_group
from explorer.model.tracks import COUNTER_KIND
from explorer.model.analysis.summary import SMALL_DMA_BYTES_PER_PARTITION, Summary, summarize
from explorer.model.table_chunks import pick, take_rows
from explorer.model.units import format_ns
from simcore.trace import Trace
from simcore.trace.schema import COUNTER_THROTTLE

MIN_SHARE = 0.05  # a rule fires when the time it explains is >= 5% of the time it is measured against
STRAGGLER_DOMINANCE = 0.5  # the last rank's lead over the next-to-last >= 50% of the others' mean wait
SKEW_BYTES_RATIO = 1.25  # max/mean bytes across ranks of an all-to-all
MIN_KERNEL_SAVING = 0.10  # MXFP8 advice lists kernels it would speed up by >= 10%
MOE_WORDS = ("moe", "expert", "dispatch", "combine", "router")


@dataclass(frozen=True)
class Link:
    """A place in the trace: a hierarchy node (when there is one), timeline rows and a time range."""

    label: str
    node: str  # "kernel:7", "op:3", "instruction:12", "dma:5", "collective:4" or "" for a plain range
    track_ids: tuple[int, ...]
    t0: int
    t1: int


# the unit of every evidence key (explorer.model.analysis.metrics.format_metric's units, plus
# "id" for a chip or rank number, "x" for a ratio and "ns by kernel" for {kernel: ns})
EVIDENCE_UNITS: dict[str, str] = {
    "kernels": "count", "kernel_time_ns": "ns", "top_kernels_ns": "ns by kernel",
    "mean_arithmetic_intensity": "FLOP/byte", "ridge_intensity": "FLOP/byte", "achieved_hbm_gbps": "GB/s",
    "core_share_hbm_gbps": "GB/s", "hbm_bandwidth_gbps": "GB/s",
    "small_transfers": "count", "transfers": "count", "small_percent": "%", "mean_small_bytes_per_partition": "bytes",
    "small_transfer_time_ns": "ns", "dma_time_ns": "ns",
    "wait_ns": "ns", "tensor_engine_active_time_ns": "ns", "instructions_waiting": "count",
    "throttled_time_ns": "ns", "throttled_time_percent": "%", "throttling_percent": "%", "capacity_lost_ns": "ns",
    "chip": "id", "rank": "id", "collectives_last": "count", "collectives": "count", "wait_caused_ns": "ns",
    "collective_time_ns": "ns", "mean_lead_ns": "ns", "max_bytes_over_mean": "x", "mean_arrival_spread_ns": "ns",
    "expert_parallel": "yes/no", "bf16_time_ns": "ns", "estimated_mxfp8_time_ns": "ns", "estimated_saving_ns": "ns",
    "bf16_peak_tflops": "TFLOPS", "mxfp8_peak_tflops": "TFLOPS",
    "critical_path_ns": "ns",
}


@dataclass(frozen=True)
class EvidenceBands:
    """Where a rule's evidence is in the trace: one interval [t0, t1) per item on its timeline row
    (the small transfers on their queues, the waits on the tensor rows, the flagged kernels, the
    throttled stretches, the late arrivals), drawn as warning bands as Neuron Explorer does."""

    track_id: np.ndarray
    t0: np.ndarray
    t1: np.ndarray

    @classmethod
    def of(cls, track_id, t0, t1) -> EvidenceBands:
        t0 = np.asarray(t0, np.int64)
        t1 = np.maximum(np.asarray(t1, np.int64), t0)
        order = np.argsort(t0, kind="stable")
        return cls(np.asarray(track_id, np.int64)[order], t0[order], t1[order])

    def __len__(self) -> int:
        return len(self.t0)


NO_BANDS = EvidenceBands(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))


@dataclass(frozen=True)
class Recommendation:
    rule: str  # stable id, e.g. "small_dma_transfers"
    title: str  # one line: what is wrong
    advice: str  # what to do about it
    impact_ns: int  # wall-clock time the problem holds on the critical path (<= the trace's span)
    impact_percent: float  # impact_ns over the trace's span
    evidence: dict[str, Any] = field(default_factory=dict)
    links: tuple[Link, ...] = ()
    bands: EvidenceBands = field(default=NO_BANDS, compare=False, repr=False)  # not in to_dict: can be millions

    @property
    def evidence_units(self) -> dict[str, str]:
        return {k: EVIDENCE_UNITS.get(k, "") for k in self.evidence}

    def evidence_rows(self) -> list[tuple[str, str]]:
        """(label, value with its unit) per evidence item: what the GUI and `trnx summary` print."""
        return [(evidence_label(k), evidence_text(v, EVIDENCE_UNITS.get(k, ""))) for k, v in self.evidence.items()]

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "bands"}
        d["links"] = [asdict(link) for link in self.links]
        d["evidence_units"] = self.evidence_units
        return d


def evidence_label(key: str) -> str:
    """An evidence key as words, its unit suffix dropped (the value carries the unit)."""
    words = key.split("_")
    while len(words) > 1 and words[-1] in ("ns", "gbps", "percent", "tflops"):
        words.pop()
    return " ".join(words)


def evidence_text(value: Any, unit: str) -> str:
    """An evidence value as a person reads it: 14.45 us, 473.5 GB/s, 2,093, chip 5, 2.0x."""
    from explorer.model.analysis.metrics import format_metric

    if unit == "ns by kernel" and isinstance(value, dict):
        return ", ".join(f"{k}: {format_metric(v, 'ns')}" for k, v in value.items())
    if unit == "id":
        return str(value)
    if unit == "x":
        return "n/a" if value is None else f"{value:.3g}x"
    if unit == "count":
        return f"{int(value):,}"
    return format_metric(value, unit)


def _py(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return None if np.isnan(v) else float(v)
    return v


def _kernel_link(k: pd.Series, why: str) -> Link:
    return Link(f"{why}: kernel {k['name']} #{int(k['kernel_id'])} (chip {int(k['chip'])} core {int(k['core'])})",
                f"kernel:{int(k['kernel_id'])}", (int(k["track_id"]),), int(k["start_ns"]), int(k["end_ns"]))


class _Context:
    """What the rules share: the trace, its operator tree, the summary, the event index and
    the critical path."""

    def __init__(self, trace: Trace, hierarchy: Hierarchy | None, summary: Summary | None,
                 path: CriticalPath | None = None) -> None:
        self.trace = trace
        self.h = hierarchy or Hierarchy(trace)
        self.summary = summary or summarize(trace)
        self.kernels = self.h.kernels
        self.kernel_time = float(self.kernels["dur_ns"].sum())
        self.path = path or critical_path(trace)
        self.span = max(int(trace.span_ns[1] - trace.span_ns[0]), 1)

    @property
    def events(self) -> EventIndex:
        return self.h.events

    def impact(self, ns: float) -> tuple[int, float]:
        """(impact_ns, impact_percent of the span), the wall-clock time capped at the span."""
        ns = int(round(min(max(ns, 0.0), self.span)))
        return ns, 100.0 * ns / self.span

    def on_path(self, per_kernel_ns: pd.Series, spread_to_siblings: bool = False) -> int:
        """Critical-path time explained by `per_kernel_ns` (kernel_id -> ns of the kernel the
        problem takes). With `spread_to_siblings`, a kernel captured without instruction detail
        takes the mean share of its op's kernels that have it (an SPMD op runs the same kernel
        on every core; usually only some cores are captured in detail)."""
        k = self.kernels
        dur = k["dur_ns"].to_numpy(np.float64)
        ns = per_kernel_ns.groupby(level=0).sum().reindex(k["kernel_id"].to_numpy()).fillna(0.0).to_numpy(np.float64)
        share = np.clip(np.divide(ns, dur, out=np.zeros(len(k)), where=dur > 0), 0.0, 1.0)
        if spread_to_siblings:
            detail = ~np.isnan(k["engine_busy_ns"].to_numpy(np.float64))
            op = k["op_id"].to_numpy()
            mean = pd.Series(share[detail]).groupby(op[detail]).mean()
            share = np.where(detail, share, pd.Series(op).map(mean).fillna(0.0).to_numpy())
        return self.path.on_path_ns(pd.Series(share, index=k["kernel_id"].to_numpy()))


# -- rules ---------------------------------------------------------------------------
def hbm_bound_low_intensity(c: _Context) -> list[Recommendation]:
    k = c.kernels
    ridge = np.array([c.h.peaks.ridge_flops_per_byte(d) or np.nan for d in k["dtype"]])
    hit = k[(k["bound"] == "hbm") & (k["arithmetic_intensity"].fillna(0) < ridge)]
    if hit.empty or c.kernel_time <= 0:
        return []
    t = float(hit["dur_ns"].sum())
    if t < MIN_SHARE * c.kernel_time:
        return []
    worst = hit.loc[hit["dur_ns"].idxmax()]
    by_name = hit.groupby("name")["dur_ns"].sum().sort_values(ascending=False)
    bw = c.h.peaks.hbm_bandwidth_gbps
    gbps = float((hit["hbm_bytes"].sum()) / max(t, 1))
    impact = c.impact(c.on_path(hit.set_index("kernel_id")["dur_ns"]))
    share = hit["hbm_sharing"].to_numpy(np.float64)
    return [Recommendation(
        "hbm_bound_low_intensity",
        f"{len(hit):,} HBM-bound kernels with low arithmetic intensity take {100 * t / c.kernel_time:.0f}% of kernel time",
        "Raise FLOPs per HBM byte: fuse these kernels with their neighbours, keep weights or KV blocks resident in "
        "SBUF across uses, and process more tokens per weight load (larger batch, speculative decoding).",
        *impact,
        {
            "kernels": int(len(hit)),
            "kernel_time_ns": int(t),
            "critical_path_ns": impact[0],
            "top_kernels_ns": {str(n): int(v) for n, v in by_name.head(5).items()},
            "mean_arithmetic_intensity": _py(hit["arithmetic_intensity"].mean()),
            "ridge_intensity": _py(np.nanmean(ridge[hit.index])),
            "achieved_hbm_gbps": gbps,
            "core_share_hbm_gbps": None if bw is None else _py(np.mean(bw / np.maximum(share, 1.0))),
            "hbm_bandwidth_gbps": bw,
        },
        (_kernel_link(worst, "longest"),),
        EvidenceBands.of(hit["track_id"], hit["start_ns"], hit["end_ns"]),
    )]


def small_dma_transfers(c: _Context) -> list[Recommendation]:
    dma = c.trace.dma
    if not dma.num_rows:
        return []
    nbytes = num(dma, "bytes")
    parts = np.maximum(num(dma, "partitions"), 1)
    small = nbytes < SMALL_DMA_BYTES_PER_PARTITION * parts
    n_small = int(small.sum())
    dur = num(dma, "dur_ns")
    t_small = int(dur[small].sum())
    if n_small == 0 or t_small < MIN_SHARE * max(int(dur.sum()), 1):
        return []
    kid = num(dma, "kernel_id")[small]
    per_kernel = pd.Series(dur[small]).groupby(kid).sum().sort_values(ascending=False)
    # wall-clock: each kernel's time with a small transfer in flight (union over its queues)
    ks = pd.Index(np.unique(kid))
    st = num(dma, "start_ns")[small]
    busy = union_length_per_group(ks.get_indexer(kid), st, st + dur[small], len(ks))
    impact = c.impact(c.on_path(pd.Series(busy, index=ks), spread_to_siblings=True))
    links = []
    top = per_kernel.index[0]
    k = c.kernels[c.kernels["kernel_id"] == top]
    if len(k):
        links.append(_kernel_link(k.iloc[0], "most small transfers"))
    first = int(np.flatnonzero(small)[np.argmax(dur[small])])
    s = int(num(dma, "start_ns")[first])
    links.append(Link(f"longest small transfer dma:{int(num(dma, 'id')[first])}", f"dma:{int(num(dma, 'id')[first])}",
                      (int(num(dma, "track_id")[first]),), s, s + int(dur[first])))
    total = max(int(dur.sum()), 1)
    return [Recommendation(
        "small_dma_transfers",
        f"{n_small:,} of {len(nbytes):,} DMA transfers move under 2 KiB per partition",
        "Transfers under 2 KiB per partition pay the fixed DMA cost for little data: coalesce them into larger "
        "tiles (4 KiB+ per partition saturates a queue), or lay data out so each partition reads a contiguous run.",
        *impact,
        {
            "small_transfers": n_small,
            "transfers": int(len(nbytes)),
            "small_percent": 100.0 * n_small / len(nbytes),
            "mean_small_bytes_per_partition": float((nbytes[small] / parts[small]).mean()),
            "small_transfer_time_ns": t_small,
            "dma_time_ns": int(total),
            "critical_path_ns": impact[0],
        },
        tuple(links),
        EvidenceBands.of(num(dma, "track_id")[small], st, st + dur[small]),
    )]


def tensor_waiting_on_dma(c: _Context) -> list[Recommendation]:
    """Tensor-engine instructions whose binding wait was a DMA transfer finishing after the engine was free."""
    if not c.trace.flows.num_rows or not c.trace.instructions.num_rows:
        return []
    tracks = c.h.tracks
    w = tensor_dma_waits(c.trace, c.events, np.isin(tracks.kind, ["tensor", "tensor_matrix"]),
                         c.kernels["kernel_id"].to_numpy(np.int64), c.kernels["start_ns"].to_numpy(np.int64))
    total_wait = w.total_ns
    active = c.summary.metrics.get("tensor_engine_active_time_ns") or 0
    if total_wait <= 0 or active <= 0 or total_wait < MIN_SHARE * active:
        return []
    per_kernel = w.per_kernel.sort_values(ascending=False)
    links = []
    k = c.kernels[c.kernels["kernel_id"] == per_kernel.index[0]]
    if len(k):
        links.append(_kernel_link(k.iloc[0], "most tensor-engine wait"))
    worst = c.events.event_at(INSTRUCTION, w.worst_row)
    links.append(Link(f"longest wait before instruction:{worst.id}", f"instruction:{worst.id}", (worst.track_id,),
                      worst.start_ns - w.worst_ns, worst.end_ns))
    impact = c.impact(c.on_path(w.per_kernel, spread_to_siblings=True))
    return [Recommendation(
        "tensor_waiting_on_dma",
        f"The tensor engine sat idle {format_ns(total_wait)} waiting for DMA transfers",
        "Prefetch the next tiles earlier: deepen the buffering (double/triple buffer the stationary and moving "
        "tiles), spread loads over more DMA queues, and issue loads for tile i+1 before computing tile i.",
        *impact,
        {
            "wait_ns": total_wait,
            "tensor_engine_active_time_ns": int(active),
            "instructions_waiting": w.waiting,
            "critical_path_ns": impact[0],
            "top_kernels_ns": {f"kernel {int(kid)}": int(v) for kid, v in per_kernel.head(5).items()},
        },
        tuple(links),
        _wait_bands(c, w.rows, w.waits_ns),
    )]


def _wait_bands(c: _Context, rows: np.ndarray, waits: np.ndarray) -> EvidenceBands:
    """[start - wait, start) on each waiting instruction's row."""
    if not len(rows):
        return NO_BANDS
    order = np.argsort(rows, kind="stable")
    sub = take_rows(c.trace.instructions, rows[order])
    start = num(sub, "start_ns")
    return EvidenceBands.of(num(sub, "track_id"), start - waits[order], start)


def _deficit_integral(time: np.ndarray, length: np.ndarray, deficit: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Integral of a step function (one track's samples: `deficit` from `time` for `length` ns)
    from the first sample up to each time in `at` (0 before it)."""
    cum = np.r_[0.0, np.cumsum(length * deficit)]
    i = np.searchsorted(time, at, side="right") - 1
    j = np.maximum(i, 0)
    inside = np.clip(at - time[j], 0, length[j]) * deficit[j]
    return np.where(i >= 0, cum[j] + inside, 0.0)


def throttling(c: _Context) -> list[Recommendation]:
    m = c.summary.metrics
    pct = m.get("throttled_time_percent")
    if pct is None or pct < 100 * MIN_SHARE:
        return []
    tracks = c.h.tracks
    thr = np.flatnonzero((tracks.kind == COUNTER_KIND) & (tracks.name == COUNTER_THROTTLE))
    ctr = c.trace.counters
    is_thr = np.zeros(len(tracks), bool)
    is_thr[thr] = True
    tid, time, value = pick(ctr, ("track_id", "time_ns", "value"), is_thr)  # only the Throttling samples
    order = np.lexsort((time, tid))
    tid, time, value = tid[order], time[order], value[order]
    nxt = np.r_[time[1:], 0]
    last = np.r_[tid[1:] != tid[:-1], True]
    nxt[last] = max(c.trace.span_ns[1], int(time.max()))
    length = nxt - time
    deficit = np.clip(100.0 - value, 0, 100) / 100.0
    lost = float((length * deficit).sum())
    capacity = float(m["total_time_ns"]) * len(thr)
    if capacity <= 0 or lost < MIN_SHARE * capacity:
        return []
    # wall-clock: the rate lost while the critical path ran kernels on a throttled core
    seg = c.path.segments[c.path.segments["kind"] == "kernel"]
    on_path = 0.0
    for t in np.unique(tid).tolist():
        mine = seg[(seg["chip"] == tracks.chip[t]) & (seg["core"] == tracks.core[t])]
        if mine.empty:
            continue
        rows = tid == t
        f = (lambda x: _deficit_integral(time[rows], length[rows], deficit[rows], x.to_numpy(np.int64)))
        on_path += float((f(mine["end_ns"]) - f(mine["start_ns"])).sum())
    impact = c.impact(on_path)
    low = value < 100.0
    i = int(np.flatnonzero(low)[np.argmax(length[low])])
    return [Recommendation(
        "throttling",
        f"The tensor engine was throttled {pct:.0f}% of the time (mean throttling {m['throttling_percent']:.0f}%)",
        "Power (dI/dt) throttling restarts the tensor engine at about half rate after idle gaps and ramps over "
        "~3 us: keep it fed continuously (fewer, longer matmul bursts; overlap loads so it never drops below 50% "
        "utilisation) rather than in short bursts separated by waits.",
        *impact,
        {
            "throttled_time_ns": m["throttled_time_ns"],
            "throttled_time_percent": pct,
            "throttling_percent": m["throttling_percent"],
            "capacity_lost_ns": int(lost),
            "critical_path_ns": impact[0],
        },
        (Link(f"longest throttled stretch on {tracks.name[tid[i]]} (chip {tracks.chip[tid[i]]} core {tracks.core[tid[i]]})",
              "", (int(tid[i]),), int(time[i]), int(nxt[i])),),
        EvidenceBands.of(tid[low], time[low], nxt[low]),
    )]


def _collective_frame(c: _Context) -> pd.DataFrame:
    cc = c.trace.collectives
    if not cc.num_rows:
        return pd.DataFrame()
    f = pd.DataFrame({
        "cid": num(cc, "collective_id"), "track_id": num(cc, "track_id"), "chip": num(cc, "chip"),
        "rank": num(cc, "rank"), "kind": strings(cc, "kind"), "op_id": num(cc, "op_id"),
        "bytes": num(cc, "bytes"), "arrive": num(cc, "arrive_ns"), "start": num(cc, "start_ns"),
        "end": num(cc, "end_ns"), "wait": num(cc, "wait_ns"),
    })
    f = f.sort_values(["cid", "arrive"], kind="stable")
    g = f.groupby("cid")
    f["n"] = g["rank"].transform("size")
    f["is_last"] = ~f.duplicated("cid", keep="last")
    # a chip arrives with its last rank (a chip's logical cores share its pace); the straggler is the
    # last chip, and its lead is over the next-to-last chip -- with one rank a chip, the next-to-last rank
    chip_arrive = f.groupby(["cid", "chip"])["arrive"].transform("max")
    last_chip = f.loc[f["is_last"]].set_index("cid")["chip"]
    on_last = f["chip"].to_numpy() == f["cid"].map(last_chip).to_numpy()
    second = chip_arrive.where(~on_last).groupby(f["cid"]).transform("max")
    f["lead"] = (g["arrive"].transform("max") - second.fillna(g["arrive"].transform("max"))).astype(np.int64)
    other_wait = f["wait"].where(~on_last)
    f["others_mean_wait"] = other_wait.groupby(f["cid"]).transform("mean")
    f["others"] = pd.Series(~on_last, index=f.index).groupby(f["cid"]).transform("sum")  # ranks that waited
    f["bytes_ratio"] = f["bytes"] / g["bytes"].transform("mean").replace(0, np.nan)
    f["max_bytes_ratio"] = f.groupby("cid")["bytes_ratio"].transform("max")
    f["transfer"] = g["end"].transform("max") - g["start"].transform("max")
    f["straggler"] = (f["others"] > 0) & (f["others_mean_wait"] > 0) & (
        f["lead"] >= STRAGGLER_DOMINANCE * f["others_mean_wait"])
    op_text = c.h._ops_raw.set_index("op_id")[["name", "kind"]].astype(str).agg(" ".join, axis=1).str.lower()
    f["moe"] = f["op_id"].map(op_text).fillna("").str.contains("|".join(MOE_WORDS))
    f["skewed_a2a"] = (f["kind"] == "all_to_all") & (
        (f["max_bytes_ratio"] >= SKEW_BYTES_RATIO) | ((f["others_mean_wait"] > 0) & ~f["straggler"])
    )
    return f


def _union(start: pd.Series, end: pd.Series) -> int:
    return int(union_length(start.to_numpy(np.int64), end.to_numpy(np.int64)))


def _collective_link(f: pd.DataFrame, cid: int, why: str) -> Link:
    rows = f[f["cid"] == cid]
    return Link(f"{why}: collective {cid} ({rows['kind'].iloc[0]}, {len(rows)} ranks)", f"collective:{cid}",
                tuple(sorted(set(rows["track_id"].astype(int).tolist()))), int(rows["arrive"].min()), int(rows["end"].max()))


def collective_straggler(c: _Context) -> list[Recommendation]:
    f = _collective_frame(c)
    if f.empty:
        return []
    total = float((f["end"] - f["arrive"]).sum())
    strag = f[f["straggler"] & ~f["skewed_a2a"]]
    if strag.empty or total <= 0:
        return []
    # waits caused: every rank of the other chips waited at least `lead` for the last one
    caused = strag.assign(caused=strag["lead"] * strag["others"])
    last = caused[caused["is_last"]]
    by_chip = last.groupby("chip")["caused"].sum().sort_values(ascending=False)
    chip = int(by_chip.index[0])
    chip_caused = float(by_chip.iloc[0])
    if chip_caused < MIN_SHARE * total:
        return []
    mine = last[last["chip"] == chip]
    worst = int(mine.loc[mine["caused"].idxmax(), "cid"])
    n_coll = int(f.loc[f["chip"] == chip, "cid"].nunique())  # the collectives this chip took part in
    # wall-clock: every collective started when this chip arrived, `lead` after the next-to-last
    # rank; had it kept up, the collectives (and all that follows) would have started that much sooner
    impact = c.impact(_union(mine["arrive"] - mine["lead"], mine["arrive"]))
    return [Recommendation(
        "collective_straggler",
        f"Chip {chip} arrived last at {len(mine)} of {n_coll} collectives and kept the other ranks waiting",
        "The other ranks' waits are set by one slow rank: find what makes it late (extra work, a slower link, a noisy "
        "neighbour, unbalanced sharding) on its timeline just before the collective, and rebalance that work.",
        *impact,
        {
            "chip": chip,
            "rank": int(mine["rank"].iloc[0]),
            "collectives_last": int(len(mine)),
            "collectives": n_coll,
            "wait_caused_ns": int(chip_caused),
            "collective_time_ns": int(total),
            "mean_lead_ns": float(mine["lead"].mean()),
            "critical_path_ns": impact[0],
        },
        (_chip_work_link(c, f, chip, worst), _collective_link(f, worst, "worst")),
        EvidenceBands.of(mine["track_id"], mine["arrive"] - mine["lead"], mine["arrive"]),
    )]


def _chip_work_link(c: _Context, f: pd.DataFrame, chip: int, cid: int) -> Link:
    """The late chip's own rows (its cores' kernels and its collective row) from its previous
    collective's end to its arrival at `cid`: the work that made it late."""
    mine = f[f["chip"] == chip]
    arrive = int(mine.loc[mine["cid"] == cid, "arrive"].iloc[0])
    before = mine.loc[mine["end"] <= arrive, "end"]
    t0 = int(before.max()) if len(before) else int(c.trace.span_ns[0])
    tr = c.h.tracks
    rows = np.flatnonzero((tr.chip == chip) & (tr.kind == "kernel")).tolist()
    rows += sorted(set(mine.loc[mine["cid"] == cid, "track_id"].astype(int).tolist()))
    return Link(f"chip {chip}'s work before collective {cid}: its kernels until it arrived last", "",
                tuple(rows), t0, arrive)


def alltoall_routing_skew(c: _Context) -> list[Recommendation]:
    f = _collective_frame(c)
    if f.empty:
        return []
    total = float((f["end"] - f["arrive"]).sum())
    hit = f[f["skewed_a2a"]]
    if hit.empty or total <= 0:
        return []
    wait = float(hit["wait"].sum())
    if wait < MIN_SHARE * total:
        return []
    per = hit.groupby("cid").agg(wait=("wait", "sum"), ratio=("max_bytes_ratio", "max"), moe=("moe", "any"))
    worst = int(per["wait"].idxmax())
    moe = bool(per["moe"].any())
    what = "expert-parallel all-to-all" if moe else "all-to-all"
    spread = hit.groupby("cid")["arrive"].agg(lambda a: a.max() - a.min())
    # wall-clock: balanced ranks would arrive at the mean arrival and move the mean bytes
    g = hit.groupby("cid")
    late = g["arrive"].max() - g["arrive"].mean()
    excess = g["transfer"].first() * (1.0 - 1.0 / g["max_bytes_ratio"].first().clip(lower=1.0))
    impact = c.impact(float((late + excess.fillna(0.0)).sum()))
    return [Recommendation(
        "alltoall_routing_skew",
        f"{len(per)} {what} collectives are skewed: ranks arrive unevenly and wait {format_ns(wait)} in total",
        "Token routing is unbalanced across experts, so ranks hosting popular experts finish late and carry more "
        "bytes: balance routing (auxiliary load-balancing loss, capacity factor), replicate hot experts, or "
        "place experts so hot ones do not share a rank.",
        *impact,
        {
            "collectives": int(len(per)),
            "wait_ns": int(wait),
            "collective_time_ns": int(total),
            "max_bytes_over_mean": _py(per["ratio"].max()),
            "mean_arrival_spread_ns": float(spread.mean()),
            "expert_parallel": moe,
            "critical_path_ns": impact[0],
        },
        (_collective_link(f, worst, "most wait"),),
        EvidenceBands.of(hit["track_id"], hit["arrive"], hit["start"]),
    )]


def mxfp8_for_bf16_matmul(c: _Context) -> list[Recommendation]:
    p = c.h.peaks
    bf16, mx = p.peak_tflops_for("bf16"), p.peak_tflops.get("mxfp8")
    if not bf16 or not mx or mx <= bf16 or c.kernel_time <= 0:
        return []
    k = c.kernels
    hit = k[(k["dtype"] == "bf16") & (k["bound"] == "compute") & (k["flops"] > 0)]
    if hit.empty:
        return []
    tc = hit["t_compute_ns"].to_numpy(np.float64)
    th = np.nan_to_num(hit["t_hbm_ns"].to_numpy(np.float64))
    dur = hit["dur_ns"].to_numpy(np.float64)
    new = np.maximum(dur - tc * (1 - bf16 / mx), th)
    saving = dur - new
    worth = saving >= MIN_KERNEL_SAVING * dur  # kernels whose time is mostly elsewhere are left out
    hit, dur, new, saving = hit[worth], dur[worth], new[worth], saving[worth]
    if hit.empty:
        return []
    total = float(saving.sum())
    if total < MIN_SHARE * c.kernel_time:
        return []
    i = int(np.argmax(saving))
    impact = c.impact(c.on_path(pd.Series(saving, index=hit["kernel_id"].to_numpy())))
    return [Recommendation(
        "mxfp8_for_bf16_matmul",
        f"{len(hit)} compute-bound BF16 kernels would run about {dur.sum() / max(new.sum(), 1):.1f}x faster in MXFP8",
        f"The tensor engine does MXFP8 at {mx:g} TFLOPS against {bf16:g} for BF16: quantise these matmuls' "
        "operands to MXFP8 (QuantizeMX on the Vector engine, or pre-quantised weights) where accuracy allows.",
        *impact,
        {
            "kernels": int(len(hit)),
            "bf16_time_ns": int(dur.sum()),
            "estimated_mxfp8_time_ns": int(new.sum()),
            "estimated_saving_ns": int(total),
            "critical_path_ns": impact[0],
            "bf16_peak_tflops": bf16,
            "mxfp8_peak_tflops": mx,
        },
        (_kernel_link(hit.iloc[i], "largest saving"),),
        EvidenceBands.of(hit["track_id"], hit["start_ns"], hit["end_ns"]),
    )]


RULES: dict[str, Callable[[_Context], list[Recommendation]]] = {
    "hbm_bound_low_intensity": hbm_bound_low_intensity,
    "small_dma_transfers": small_dma_transfers,
    "tensor_waiting_on_dma": tensor_waiting_on_dma,
    "throttling": throttling,
    "collective_straggler": collective_straggler,
    "alltoall_routing_skew": alltoall_routing_skew,
    "mxfp8_for_bf16_matmul": mxfp8_for_bf16_matmul,
}


def recommend(trace: Trace, hierarchy: Hierarchy | None = None, summary: Summary | None = None,
              path: CriticalPath | None = None) -> list[Recommendation]:
    """Every rule's findings, the most critical-path time first."""
    ctx = _Context(trace, hierarchy, summary, path)
    found = [r for rule in RULES.values() for r in rule(ctx)]
    return sorted(found, key=lambda r: -r.impact_ns)
