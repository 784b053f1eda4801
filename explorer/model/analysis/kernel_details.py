"""One kernel up close: where its engine time went, its instruction mix, and its roofline.

`kernel_details(trace, kernel_id)` returns plain tables a details panel shows as is,
and a `Roofline` a plot draws: the compute roof of the kernel's dtype (per core), the
HBM roof of the core's share of its chip's bandwidth (the chip's cores stream from one
HBM: 8 cores decoding at once each get about an eighth), the ridge point, the kernel's
point, the roofs of the other dtypes the hardware has (what MXFP8 would buy a BF16
kernel), and beside them the whole chip's HBM roof and how saturated the chip's HBM
was while the kernel ran (the HBM counters' mean over the kernel).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from explorer.model.analysis.hierarchy import Hierarchy, rows_where
from explorer.model.intervals import union_length_per_group
from explorer.model.columns import codes, num
from explorer.model.tracks import DMA_KIND, ENGINES, ENGINE_OF_KIND
from explorer.model.analysis.summary import SMALL_DMA_BYTES_PER_PARTITION
from explorer.model.table_chunks import pick, take_rows
from explorer.model.timeline.counter_bins import CounterSeries
from explorer.model.tracks import COUNTER_KIND, Tracks
from simcore.trace.schema import COUNTER_HBM_READ, COUNTER_HBM_WRITE
from simcore.errors import UserError
from simcore.trace import Trace


@dataclass(frozen=True)
class Roofline:
    """Roofs in TFLOPS and FLOP/byte; None where the trace's hardware lacks the figure."""

    dtype: str
    peak_tflops: float | None  # compute roof of `dtype`, one core
    bandwidth_gbps: float | None  # HBM roof: the core's share of its chip's bandwidth while the kernel ran
    point_intensity: float | None  # the kernel's FLOP per HBM byte
    point_tflops: float  # the kernel's achieved TFLOPS
    other_peaks: dict[str, float] = field(default_factory=dict)  # dtype -> per-core peak
    chip_bandwidth_gbps: float | None = None  # the whole chip's HBM roof
    hbm_sharing: float = 1.0  # mean number of the chip's cores running kernels while this one ran
    chip_hbm_percent: float | None = None  # the chip's HBM traffic (counters) over the kernel / its bandwidth

    @property
    def ridge_intensity(self) -> float | None:
        if self.peak_tflops is None or self.bandwidth_gbps is None:
            return None
        return self.peak_tflops * 1e3 / self.bandwidth_gbps

    def attainable_tflops(self, intensity: np.ndarray | float, peak: float | None = None) -> np.ndarray | float | None:
        """min(compute roof, intensity x bandwidth): the roofline itself."""
        peak = self.peak_tflops if peak is None else peak
        if peak is None or self.bandwidth_gbps is None:
            return None
        return np.minimum(peak, np.asarray(intensity, dtype=np.float64) * self.bandwidth_gbps / 1e3)

    @property
    def efficiency_percent(self) -> float | None:
        """Achieved / attainable at the kernel's intensity (HBM at the core's share)."""
        if self.point_intensity is None:
            return None
        roof = self.attainable_tflops(self.point_intensity)
        return None if roof is None or roof <= 0 else float(100.0 * self.point_tflops / roof)

    @property
    def chip_ridge_intensity(self) -> float | None:
        if self.peak_tflops is None or self.chip_bandwidth_gbps is None:
            return None
        return self.peak_tflops * 1e3 / self.chip_bandwidth_gbps

    @property
    def chip_efficiency_percent(self) -> float | None:
        """Achieved / attainable were the whole chip's HBM the kernel's alone."""
        if self.point_intensity is None or self.chip_bandwidth_gbps is None or self.peak_tflops is None:
            return None
        roof = min(self.peak_tflops, self.point_intensity * self.chip_bandwidth_gbps / 1e3)
        return None if roof <= 0 else float(100.0 * self.point_tflops / roof)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype, "peak_tflops": self.peak_tflops, "bandwidth_gbps": self.bandwidth_gbps,
            "ridge_intensity": self.ridge_intensity, "point_intensity": self.point_intensity,
            "point_tflops": self.point_tflops, "efficiency_percent": self.efficiency_percent,
            "other_peaks": dict(self.other_peaks), "chip_bandwidth_gbps": self.chip_bandwidth_gbps,
            "hbm_sharing": self.hbm_sharing, "chip_ridge_intensity": self.chip_ridge_intensity,
            "chip_efficiency_percent": self.chip_efficiency_percent, "chip_hbm_percent": self.chip_hbm_percent,
        }


@dataclass
class KernelDetails:
    kernel: dict[str, Any]  # the kernel's operator-table row (Hierarchy.kernels)
    engines: pd.DataFrame  # engine, instruction_count, busy_ns, busy_percent
    instruction_mix: pd.DataFrame  # opcode, engine, count, time_ns, time_percent, flops, bytes
    dma_queues: pd.DataFrame  # track_id, name, transfers, bytes, busy_ns, average_bytes_per_partition, small_transfers
    roofline: Roofline
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in self.kernel.items()},
            "engines": self.engines.to_dict("records"),
            "instruction_mix": self.instruction_mix.to_dict("records"),
            "dma_queues": self.dma_queues.to_dict("records"),
            "roofline": self.roofline.to_dict(),
            "notes": list(self.notes),
        }


def chip_hbm_percent(trace: Trace, chip: int, t0: int, t1: int, bandwidth_gbps: float | None) -> float | None:
    """The chip's HBM read + write traffic over [t0, t1) (time-weighted mean of its HBM counters)
    as a % of its bandwidth; None without the counters or the bandwidth."""
    if bandwidth_gbps is None or t1 <= t0:
        return None
    tracks = Tracks.of(trace)
    want = (tracks.kind == COUNTER_KIND) & (tracks.chip == chip) & np.isin(tracks.name, [COUNTER_HBM_READ, COUNTER_HBM_WRITE])
    if not want.any():
        return None
    tid, time, value = pick(trace.counters, ("track_id", "time_ns", "value"), want)
    if not len(tid):
        return None
    total = 0.0
    for t in np.unique(tid).tolist():
        rows = tid == t
        order = np.argsort(time[rows], kind="stable")
        total += CounterSeries("", "GB/s", time[rows][order], value[rows][order]).mean_in(t0, t1)
    return 100.0 * total / bandwidth_gbps


def _exact_sum(group: np.ndarray, x: np.ndarray, n: int) -> np.ndarray:
    """Per group (0..n-1, each present) the sum of the int64 `x`, exactly: bincount's float
    weights would round past 2**53."""
    out = np.zeros(n, np.int64)
    if len(x):
        order = np.argsort(group, kind="stable")
        g = group[order]
        first = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
        out[g[first]] = np.add.reduceat(x[order], first)
    return out


def kernel_details(trace: Trace, kernel_id: int, hierarchy: Hierarchy | None = None) -> KernelDetails:
    """Engine breakdown, instruction mix, DMA queues and roofline of one kernel."""
    h = hierarchy or Hierarchy(trace)
    k = h.kernels
    hit = k[k["kernel_id"] == kernel_id]
    if hit.empty:
        raise UserError(f"kernel {kernel_id} is not in this trace.")
    row = hit.iloc[0]
    dur = max(int(row["dur_ns"]), 1)
    tracks = h.tracks
    notes: list[str] = []

    # only this kernel's rows, taken chunk by chunk (no whole-column copies of a many-chunk table).
    # Grouped with numpy on integer codes, not pandas on strings: this runs on a worker beside the
    # GUI thread, and pandas' per-row Python work held the GIL the window waits for.
    sel = rows_where(trace.instructions, "kernel_id", kernel_id)
    ins = take_rows(trace.instructions, sel)
    tid = num(ins, "track_id").astype(np.int64) if len(sel) else np.array([], np.int64)
    start = num(ins, "start_ns") if len(sel) else np.array([], np.int64)
    d = num(ins, "dur_ns").astype(np.int64) if len(sel) else np.array([], np.int64)
    # per track (a few hundred): its engine's name (a kind that is no engine names itself) and index
    names = np.array([ENGINE_OF_KIND.get(x, x) for x in tracks.kind], dtype=object)
    engine_names, track_engine = np.unique(names.astype(str), return_inverse=True) if len(names) else (np.array([], str), np.zeros(0, np.int64))
    track_eidx = np.array([ENGINES.index(e) if e in ENGINES else len(ENGINES) for e in names], dtype=np.int64)
    eidx = track_eidx[tid]
    busy = union_length_per_group(eidx, start, start + d, len(ENGINES) + 1)
    count = np.bincount(eidx, minlength=len(ENGINES) + 1)
    engines = pd.DataFrame({
        "engine": list(ENGINES),
        "instruction_count": count[: len(ENGINES)],
        "busy_ns": busy[: len(ENGINES)],
    })
    engines["busy_percent"] = 100.0 * engines["busy_ns"] / dur

    if len(sel):
        oc, ov = codes(ins, "opcode")
        ecode = track_engine[tid]
        groups, group = np.unique(oc.astype(np.int64) * len(engine_names) + ecode, return_inverse=True)
        n = len(groups)
        mix = pd.DataFrame({
            "opcode": np.asarray(ov, dtype=object)[groups // len(engine_names)],
            "engine": engine_names.astype(object)[groups % len(engine_names)],
            "count": np.bincount(group, minlength=n).astype(np.int64),
            "time_ns": _exact_sum(group, d, n),
            "flops": _exact_sum(group, num(ins, "flops").astype(np.int64), n),
            "bytes": _exact_sum(group, num(ins, "bytes").astype(np.int64), n),
        })
        mix = mix.sort_values(["opcode", "engine"], kind="stable")  # groupby's order, then by time
        tot = max(int(mix["time_ns"].sum()), 1)
        mix["time_percent"] = 100.0 * mix["time_ns"] / tot
        mix = mix.sort_values("time_ns", ascending=False, kind="stable").reset_index(drop=True)
        mix = mix[["opcode", "engine", "count", "time_ns", "time_percent", "flops", "bytes"]]
    else:
        mix = pd.DataFrame(columns=["opcode", "engine", "count", "time_ns", "time_percent", "flops", "bytes"])
        notes.append("no instruction-level detail for this kernel's core: engine breakdown and mix are empty.")

    dsel = rows_where(trace.dma, "kernel_id", kernel_id)
    dma = take_rows(trace.dma, dsel)
    if len(dsel):
        qtid = num(dma, "track_id").astype(np.int64)
        s = num(dma, "start_ns").astype(np.int64)
        qdur = num(dma, "dur_ns").astype(np.int64)
        qbytes = num(dma, "bytes").astype(np.int64)
        parts = np.maximum(num(dma, "partitions").astype(np.int64), 1)
        queue_ids, queue = np.unique(qtid, return_inverse=True)
        n = len(queue_ids)
        transfers = np.bincount(queue, minlength=n).astype(np.int64)
        queues = pd.DataFrame({
            "track_id": queue_ids,
            "name": tracks.name[queue_ids],
            "transfers": transfers,
            "bytes": _exact_sum(queue, qbytes, n),
            "busy_ns": _exact_sum(queue, qdur, n),
            "average_bytes_per_partition": np.bincount(queue, weights=qbytes / parts, minlength=n) / transfers,
            "small_transfers": np.bincount(queue, weights=qbytes < SMALL_DMA_BYTES_PER_PARTITION * parts,
                                           minlength=n).astype(np.int64),
        })
        dma_busy = int(union_length_per_group(np.zeros(len(s), np.int64), s, s + qdur, 1)[0])
    else:
        queues = pd.DataFrame(columns=["track_id", "name", "transfers", "bytes", "busy_ns",
                                       "average_bytes_per_partition", "small_transfers"])
        dma_busy = 0
    engines = pd.concat([engines, pd.DataFrame({
        "engine": ["dma"], "instruction_count": [len(dsel)], "busy_ns": [dma_busy],
        "busy_percent": [100.0 * dma_busy / dur]})], ignore_index=True)
    if DMA_KIND not in set(tracks.kind):
        notes.append("the trace has no DMA queue tracks.")

    peaks = h.peaks
    dtype = str(row["dtype"])
    ai = row["arithmetic_intensity"]
    sharing = max(float(row["hbm_sharing"]), 1.0)
    chip_bw = peaks.hbm_bandwidth_gbps
    roof = Roofline(
        dtype=dtype,
        peak_tflops=peaks.peak_tflops_for(dtype),
        bandwidth_gbps=None if chip_bw is None else chip_bw / sharing,
        point_intensity=None if np.isnan(ai) else float(ai),
        point_tflops=float(np.nan_to_num(row["tflops"])),
        other_peaks={dt: p for dt, p in peaks.peak_tflops.items() if dt != dtype},
        chip_bandwidth_gbps=chip_bw,
        hbm_sharing=sharing,
        chip_hbm_percent=chip_hbm_percent(trace, int(row["chip"]), int(row["start_ns"]), int(row["end_ns"]), chip_bw),
    )
    if roof.peak_tflops is None or roof.bandwidth_gbps is None:
        notes.append("the trace's hardware lacks tensor peaks or HBM bandwidth: the roofline has no roofs.")
    kernel = {c: (v.item() if hasattr(v, "item") else v) for c, v in row.items()}
    return KernelDetails(kernel, engines, mix, queues, roof, notes)
