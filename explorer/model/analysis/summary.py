"""Summary metrics of a trace, a chip or a selection: one function for the GUI, the CLI and Python.

`summarize(trace, chips=None, time_range=None, track_ids=None)` returns a `Summary`
whose `metrics` are keyed by the names in `explorer.model.analysis.metrics.METRICS`. A metric
the trace cannot support (no hardware keys, no instruction detail, no Throttling
counter) is None and `unavailable[name]` says why: never a made-up number.

How it works: one vectorised pass builds a per-unit table (a unit is one core, or
a chip's chip-level rows with core -1) of additive totals for the window; a summary
is a sum over some units plus ratios, so the whole trace, each chip and a selection
all come from the same code (`per_unit` -> `aggregate`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from explorer.model.analysis.engine_time import Window, core_activity
from explorer.model.intervals import (
    clip,
    overlap_fraction,
    overlaps,
    sum_per_group,
    union_length_per_group,
    union_runs_per_group,
)
from explorer.model.analysis.metrics import METRIC_NAMES
from explorer.model.analysis.peaks import Peaks
from explorer.model.table_chunks import TrackReader, TrackRuns, batches, pick
from explorer.model.columns import code_of, codes, num
from explorer.model.tracks import COUNTER_KIND, DMA_KIND, ENGINES, ENGINE_OF_KIND, Tracks
from explorer.model.scope import Scope
from simcore.trace import Trace
from simcore.trace.schema import COUNTER_THROTTLE, OPCODE_TRANSPOSE

SMALL_DMA_BYTES_PER_PARTITION = 2048


@dataclass
class Summary:
    """Metric values (None when unavailable) plus the reason each unavailable one is missing."""

    scope: dict[str, Any]
    metrics: dict[str, float | int | None]
    unavailable: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> float | int | None:
        return self.metrics[name]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: scope, metrics (in METRICS order) and unavailable reasons."""
        return {"scope": self.scope, "metrics": dict(self.metrics), "unavailable": dict(self.unavailable)}


# -- per-unit totals ---------------------------------------------------------------
UNIT_SUMS = (
    "kernel_count",
    "hardware_flops",
    "model_flops",
    "hardware_flops_bf16",
    "transpose_flops",
    "transpose_flops_bf16",
    "unknown_dtype_flops",
    "peak_time_ns",  # FLOPs at each kernel's dtype peak, per core: what MFU against the dtype's peak divides
    "transpose_peak_time_ns",
    "unknown_peak_flops",
    "hbm_read_bytes",
    "hbm_write_bytes",
    "total_active_time_ns",
    "instruction_count",
    *(f"{e}_engine_instruction_count" for e in ENGINES),
    *(f"{e}_engine_active_time_ns" for e in ENGINES),
    "dma_active_time_ns",
    "dma_transfer_count",
    "dma_transfer_total_bytes",
    "dma_small_transfer_count",
    "cc_op_count",
    "cc_op_active_time_ns",
    "collective_wait_ns",
    "collective_transfer_ns",
    "throttled_time_ns",
    "throttle_covered_ns",
    "throttle_limit_ns",  # integral of the limit (%) over time, ns x %
)
UNIT_FLAGS = ("has_work", "in_scope", *(f"has_{e}" for e in ENGINES), "has_dma", "has_throttle")


class _Units:
    """Unit ids: one per (chip, core) pair the trace has (core -1 is a chip's chip-level
    unit), numbered in chip then core order. Sized by the pairs present, never by the
    largest chip or core number, so a sparse numbering costs nothing."""

    def __init__(self, tracks: Tracks, kernel_chip: np.ndarray, kernel_core: np.ndarray, cc_chip: np.ndarray) -> None:
        on_chip = tracks.chip >= 0
        chips = np.concatenate([tracks.chip[on_chip], kernel_chip, cc_chip]).astype(np.int64)
        cores = np.concatenate([tracks.core[on_chip], kernel_core, np.full(len(cc_chip), -1)]).astype(np.int64)
        every_chip = np.unique(chips)
        keys = np.unique(np.concatenate([self._key(chips, cores), self._key(every_chip, np.full(len(every_chip), -1))]))
        self.keys = keys if len(keys) else self._key(np.zeros(1, np.int64), np.full(1, -1))
        self.n = len(self.keys)

    @staticmethod
    def _key(chip: np.ndarray, core: np.ndarray) -> np.ndarray:
        return (chip.astype(np.int64) << 32) + core.astype(np.int64) + 1

    def of(self, chip: np.ndarray, core: np.ndarray) -> np.ndarray:
        return np.minimum(np.searchsorted(self.keys, self._key(chip, core)), self.n - 1)

    def chip_core(self) -> tuple[np.ndarray, np.ndarray]:
        return self.keys >> 32, (self.keys & 0xFFFFFFFF) - 1


def _whole_window(scope: Scope, trace: Trace) -> bool:
    lo, hi = trace.span_ns
    return scope.t0 <= lo and scope.t1 >= hi


def per_unit(trace: Trace, scope: Scope, tracks: Tracks | None = None, peaks: Peaks | None = None) -> pd.DataFrame:
    """Additive totals per unit (core) for `scope`'s window and tracks: the basis of every summary.

    Index: unit id; columns: chip, core, the `UNIT_SUMS` totals and `UNIT_FLAGS`.
    """
    tracks = tracks or Tracks.of(trace)
    peaks = peaks or Peaks.from_meta(trace.hardware)
    t0, t1 = scope.t0, scope.t1
    whole = _whole_window(scope, trace)
    kernels = trace.kernels
    k_chip, k_core = num(kernels, "chip"), num(kernels, "core")
    units = _Units(tracks, k_chip, k_core, num(trace.collectives, "chip"))
    out: dict[str, np.ndarray] = {name: np.zeros(units.n, dtype=np.int64) for name in UNIT_SUMS}
    for name in ("hardware_flops", "model_flops", "hardware_flops_bf16", "transpose_flops",
                 "transpose_flops_bf16", "unknown_dtype_flops", "peak_time_ns", "transpose_peak_time_ns",
                 "unknown_peak_flops", "hbm_read_bytes", "hbm_write_bytes", "throttle_limit_ns"):
        out[name] = np.zeros(units.n, dtype=np.float64)
    flags = {name: np.zeros(units.n, dtype=bool) for name in UNIT_FLAGS}

    track_unit = np.where(tracks.chip >= 0, units.of(np.maximum(tracks.chip, 0), tracks.core), 0)
    in_tracks = scope.track_mask(tracks)
    all_tracks = bool(in_tracks[tracks.kind != ""].all())
    # units whose kernels and counters count: every unit of a selected track (or of the chips)
    flags["in_scope"][track_unit[in_tracks & (tracks.chip >= 0)]] = True
    if scope.track_ids is None:
        chip_of_unit, core_of_unit = units.chip_core()
        keep = np.isin(chip_of_unit, list(scope.chips)) if scope.chips is not None else np.True_
        if scope.cores is not None:
            keep = keep & (np.isin(core_of_unit, list(scope.cores)) | (core_of_unit < 0))
        flags["in_scope"] |= keep
    engine_of_track = np.full(len(tracks), -1, np.int64)
    for kind, engine in ENGINE_OF_KIND.items():
        engine_of_track[tracks.kind == kind] = ENGINES.index(engine)
    empty = np.array([], dtype=np.int64)
    kernel_runs = (empty, empty, empty)

    # -- kernels first: FLOPs, HBM bytes, and the runs that cover most engine time ------
    if kernels.num_rows:
        k_unit = units.of(k_chip, k_core)
        flags["has_work"][k_unit] = True
        start = num(kernels, "start_ns")
        end = start + num(kernels, "dur_ns")
        keep = flags["in_scope"][k_unit] & overlaps(start, end, t0, t1)
        idx = np.flatnonzero(keep)
        k_unit, start, end = k_unit[idx], start[idx], end[idx]
        frac = overlap_fraction(start, end, t0, t1)
        d_codes, d_vocab = codes(kernels, "dtype")
        w = _weights(peaks, d_vocab)[d_codes[idx]]
        flops = num(kernels, "flops")[idx] * frac
        out["kernel_count"] += np.bincount(k_unit, minlength=units.n)
        out["hardware_flops"] += np.bincount(k_unit, weights=flops, minlength=units.n)
        out["model_flops"] += np.bincount(k_unit, weights=num(kernels, "model_flops")[idx] * frac, minlength=units.n)
        out["hardware_flops_bf16"] += np.bincount(k_unit, weights=np.nan_to_num(flops * w), minlength=units.n)
        out["unknown_dtype_flops"] += np.bincount(k_unit, weights=np.where(np.isnan(w), flops, 0.0), minlength=units.n)
        at_peak = flops / (_peaks(peaks, d_vocab)[d_codes[idx]] * 1e3)  # TFLOPS = 1e3 FLOP/ns
        out["peak_time_ns"] += np.bincount(k_unit, weights=np.nan_to_num(at_peak), minlength=units.n)
        out["unknown_peak_flops"] += np.bincount(k_unit, weights=np.where(np.isnan(at_peak), flops, 0.0), minlength=units.n)
        out["hbm_read_bytes"] += np.bincount(k_unit, weights=num(kernels, "hbm_read_bytes")[idx] * frac, minlength=units.n)
        out["hbm_write_bytes"] += np.bincount(k_unit, weights=num(kernels, "hbm_write_bytes")[idx] * frac, minlength=units.n)
        s, e = clip(start, end, t0, t1)
        kernel_runs = union_runs_per_group(k_unit, s, e)

    instrumented = np.zeros(units.n, dtype=bool)
    # -- which units have instructions and DMA (one pass over each table's track_id) ----
    ins, dma = trace.instructions, trace.dma
    ins_runs = TrackRuns.of(ins, tracks, "instructions") if ins.num_rows else None
    if ins_runs is not None:
        has_rows = ins_runs.rows_per_track > 0
        flags["has_work"][track_unit[has_rows & (tracks.chip >= 0)]] = True
        # an instrumented unit has engine instructions; its engines count even when idle
        instrumented[track_unit[has_rows & (engine_of_track >= 0) & (tracks.chip >= 0)]] = True
        for i, e in enumerate(ENGINES):
            sel = (engine_of_track == i) & in_tracks & (tracks.chip >= 0)
            flags[f"has_{e}"][track_unit[sel]] = True
            flags[f"has_{e}"] &= instrumented
    dma_runs = TrackRuns.of(dma, tracks, "dma") if dma.num_rows else None
    if dma_runs is not None:
        has_rows = dma_runs.rows_per_track > 0
        flags["has_work"][track_unit[has_rows & (tracks.chip >= 0)]] = True
        instrumented[track_unit[has_rows & (tracks.chip >= 0)]] = True
        flags["has_dma"][track_unit[(tracks.kind == DMA_KIND) & in_tracks & (tracks.chip >= 0)]] = True
        flags["has_dma"] &= instrumented

    # -- engine busy time and counts, DMA totals and each unit's total active time, -----
    # -- one unit's track slices at a time (explorer.model.analysis.engine_time) -----------------
    window = Window(t0, t1, whole, in_tracks, all_tracks)
    group_of_track = np.where(engine_of_track >= 0, track_unit * len(ENGINES) + np.maximum(engine_of_track, 0),
                              units.n * len(ENGINES))
    n_groups = units.n * len(ENGINES) + 1
    act = core_activity(
        TrackReader(ins, ins_runs) if ins_runs is not None else None,
        TrackReader(dma, dma_runs) if dma_runs is not None else None,
        track_unit, group_of_track, units.n, n_groups, kernel_runs, window, SMALL_DMA_BYTES_PER_PARTITION,
    )
    cnt = act.engine_count[:-1].reshape(units.n, len(ENGINES))
    busy = act.engine_active[:-1].reshape(units.n, len(ENGINES))
    for i, eng_name in enumerate(ENGINES):
        out[f"{eng_name}_engine_instruction_count"] += cnt[:, i]
        out[f"{eng_name}_engine_active_time_ns"] += busy[:, i]
    out["instruction_count"] += cnt.sum(axis=1)
    out["dma_active_time_ns"] += act.dma_active
    out["dma_transfer_count"] += act.dma_count
    out["dma_transfer_total_bytes"] += act.dma_bytes
    out["dma_small_transfer_count"] += act.dma_small
    out["total_active_time_ns"] += act.total_active
    if ins.num_rows:
        _transposes(ins, window, track_unit, peaks, out)

    _collectives(trace, scope, tracks, in_tracks, track_unit, units, out)
    _throttle(trace, scope, tracks, track_unit, flags, units, out)

    chip, core = units.chip_core()
    frame = pd.DataFrame({"chip": chip, "core": core, **out, **flags})
    frame.index.name = "unit"
    return frame


def _transposes(ins: pa.Table, window: Window, track_unit: np.ndarray, peaks: Peaks, out: dict[str, np.ndarray]) -> None:
    """FLOPs of Transpose instructions in scope (raw and BF16-normalised) per unit, batch by
    batch in row order, reading `flops` and `dtype` only at the Transpose rows."""
    t0, t1 = window.t0, window.t1
    columns = ("opcode", "track_id", "start_ns", "dur_ns", "flops", "dtype")
    for _, c, batch in batches(ins, columns):
        opcode, dtype = batch.column(0), batch.column(5)
        if not pa.types.is_dictionary(opcode.type):
            opcode = opcode.dictionary_encode()
            c["opcode"] = opcode.indices.to_numpy(zero_copy_only=False)
        tcode = code_of(opcode.dictionary.to_pylist(), OPCODE_TRANSPOSE)
        if tcode < 0:
            continue
        tr = np.flatnonzero(c["opcode"] == tcode)
        if not len(tr):
            continue
        tid = c["track_id"][tr]
        start = c["start_ns"][tr]
        end = start + c["dur_ns"][tr]
        if not (window.whole and window.all_tracks):
            keep = window.in_tracks[tid] & overlaps(start, end, t0, t1)
            tr, tid, start, end = tr[keep], tid[keep], start[keep], end[keep]
        if not pa.types.is_dictionary(dtype.type):
            dtype = dtype.dictionary_encode()
            c["dtype"] = dtype.indices.to_numpy(zero_copy_only=False)
        fl = c["flops"][tr] * overlap_fraction(start, end, t0, t1)
        w = _weights(peaks, dtype.dictionary.to_pylist())[c["dtype"][tr]]
        np.add.at(out["transpose_flops"], track_unit[tid], fl)
        np.add.at(out["transpose_flops_bf16"], track_unit[tid], np.nan_to_num(fl * w))
        at_peak = fl / (_peaks(peaks, dtype.dictionary.to_pylist())[c["dtype"][tr]] * 1e3)
        np.add.at(out["transpose_peak_time_ns"], track_unit[tid], np.nan_to_num(at_peak))


def _weights(peaks: Peaks, vocab: list[str]) -> np.ndarray:
    """BF16 normalisation weight per dtype code (NaN where unknown)."""
    w = [peaks.weight(d) for d in vocab]
    return np.array([np.nan if x is None else x for x in w] or [np.nan], dtype=np.float64)


def _peaks(peaks: Peaks, vocab: list[str]) -> np.ndarray:
    """Per-core tensor peak (TFLOPS) per dtype code (NaN where unknown)."""
    p = [peaks.peak_tflops_for(d) for d in vocab]
    return np.array([np.nan if x is None else x for x in p] or [np.nan], dtype=np.float64)


def _collectives(trace: Trace, scope: Scope, tracks: Tracks, in_tracks: np.ndarray, track_unit: np.ndarray,
                 units: _Units, out: dict[str, np.ndarray]) -> None:
    cc = trace.collectives
    if not cc.num_rows:
        return
    tid = tracks.check("collectives", num(cc, "track_id"))
    arrive, start, end = num(cc, "arrive_ns"), num(cc, "start_ns"), num(cc, "end_ns")
    keep = in_tracks[tid] & overlaps(arrive, end, scope.t0, scope.t1)
    tid, arrive, start, end = tid[keep], arrive[keep], start[keep], end[keep]
    chip = num(cc, "chip")[keep]
    unit = units.of(chip, np.full(len(chip), -1))
    out["cc_op_count"] += np.bincount(unit, minlength=units.n)
    a, e = clip(arrive, end, scope.t0, scope.t1)
    out["cc_op_active_time_ns"] += union_length_per_group(unit, a, e, units.n)
    ws, we = clip(arrive, start, scope.t0, scope.t1)
    out["collective_wait_ns"] += sum_per_group(unit, we - ws, units.n)
    xs, xe = clip(start, end, scope.t0, scope.t1)
    out["collective_transfer_ns"] += sum_per_group(unit, xe - xs, units.n)


def _throttle(trace: Trace, scope: Scope, tracks: Tracks, track_unit: np.ndarray, flags: dict[str, np.ndarray],
              units: _Units, out: dict[str, np.ndarray]) -> None:
    """Throttling counters of in-scope cores: time below 100% and the mean limit."""
    is_thr = (tracks.kind == COUNTER_KIND) & (tracks.name == COUNTER_THROTTLE) & (tracks.chip >= 0)
    is_thr &= flags["in_scope"][track_unit]
    if not is_thr.any():
        return
    ctr = trace.counters
    TrackRuns.of(ctr, tracks, "counters")  # checks every track id
    tid, time, value = pick(ctr, ("track_id", "time_ns", "value"), is_thr)  # only the Throttling samples
    if not len(tid):
        return
    order = np.lexsort((time, tid))
    tid, time, value = tid[order], time[order], value[order]
    nxt = np.empty_like(time)
    nxt[:-1] = time[1:]
    last = np.r_[tid[1:] != tid[:-1], True]
    nxt[last] = max(trace.span_ns[1], int(time.max()))  # the last sample holds to the trace's end
    s, e = clip(time, np.maximum(nxt, time), scope.t0, scope.t1)
    length = e - s
    unit = track_unit[tid]
    flags["has_throttle"][track_unit[is_thr]] = True
    out["throttle_covered_ns"] += sum_per_group(unit, length, units.n)
    out["throttled_time_ns"] += sum_per_group(unit, np.where(value < 100.0, length, 0), units.n)
    out["throttle_limit_ns"] += np.bincount(unit, weights=length * np.minimum(value, 100.0), minlength=units.n)


# -- aggregation ---------------------------------------------------------------------
def aggregate(units: pd.DataFrame, scope: Scope, peaks: Peaks, extra_scope: Mapping[str, Any] | None = None) -> Summary:
    """Sum the units in scope and derive every metric of `METRICS`."""
    u = units[units["in_scope"]]
    tot = u[list(UNIT_SUMS)].sum()
    T = scope.duration_ns
    secs = T / 1e9
    is_core = u["core"] >= 0
    cores = int((is_core & u["has_work"]).sum())
    chips = int(u.loc[u["has_work"], "chip"].nunique())
    m: dict[str, Any] = {name: None for name in METRIC_NAMES}
    why: dict[str, str] = {}

    def pct(num_: float, den: float, name: str, reason: str) -> None:
        if den > 0:
            m[name] = 100.0 * num_ / den
        else:
            why[name] = reason

    m["total_time_ns"] = T
    m["core_count"] = cores
    m["chip_count"] = chips
    m["kernel_count"] = int(tot["kernel_count"])
    m["total_active_time_ns"] = int(tot["total_active_time_ns"])
    pct(tot["total_active_time_ns"], T * cores, "total_active_time_percent", "no core in scope ran any work.")

    # compute
    m["hardware_flops"] = int(round(tot["hardware_flops"]))
    m["model_flops"] = int(round(tot["model_flops"]))
    m["transpose_flops"] = int(round(tot["transpose_flops"]))
    empty = "the window is empty (0 ns)."

    def rate(value: float, name: str, scale: float) -> None:
        if secs > 0:
            m[name] = value / secs / scale
        else:
            why[name] = empty

    rate(tot["hardware_flops"], "achieved_tflops", 1e12)
    per_core = peaks.bf16_flops_per_s_per_core
    if per_core is None:
        reason = f"the trace's hardware lacks {', '.join(peaks.missing_tensor_keys())}."
        for name in ("peak_bf16_tflops", "mfu_estimated_percent", "hfu_estimated_percent", "peak_flops_bandwidth_ratio"):
            why[name] = reason
    if tot["unknown_dtype_flops"] > 0:
        reason = "some kernels' dtypes have no tensor.bf16_flop_weight or peak in the trace's hardware."
        for name in ("hardware_flops_bf16", "mfu_estimated_percent", "hfu_estimated_percent"):
            why.setdefault(name, reason)
    else:
        m["hardware_flops_bf16"] = int(round(tot["hardware_flops_bf16"]))
    if per_core is not None:
        m["peak_bf16_tflops"] = per_core * cores / 1e12
        if "mfu_estimated_percent" not in why:
            den = per_core * secs * cores
            pct(tot["hardware_flops_bf16"] - tot["transpose_flops_bf16"], den, "mfu_estimated_percent", "no core in scope ran work.")
            pct(tot["hardware_flops_bf16"], den, "hfu_estimated_percent", "no core in scope ran work.")
        if peaks.hbm_bytes_per_s is not None:
            m["peak_flops_bandwidth_ratio"] = per_core / peaks.hbm_bytes_per_s
        else:
            why["peak_flops_bandwidth_ratio"] = "the trace's hardware lacks hbm.bandwidth_gbps."
    if tot["unknown_peak_flops"] > 0:
        why["mfu_percent"] = "some kernels' dtypes have no tensor peak in the trace's hardware."
    else:
        pct(tot["peak_time_ns"] - tot["transpose_peak_time_ns"], T * cores, "mfu_percent", "no core in scope ran work.")
    hbm = tot["hbm_read_bytes"] + tot["hbm_write_bytes"]
    if hbm > 0:
        m["mm_arithmetic_intensity"] = tot["hardware_flops"] / hbm
    else:
        why["mm_arithmetic_intensity"] = "no HBM traffic in scope."

    # memory
    m["hbm_read_bytes"] = int(round(tot["hbm_read_bytes"]))
    m["hbm_write_bytes"] = int(round(tot["hbm_write_bytes"]))
    rate(tot["hbm_read_bytes"], "hbm_read_bandwidth_gbps", 1e9)
    rate(tot["hbm_write_bytes"], "hbm_write_bandwidth_gbps", 1e9)
    rate(hbm, "hbm_bandwidth_gbps", 1e9)
    if peaks.hbm_bytes_per_s is None:
        why["mbu_estimated_percent"] = "the trace's hardware lacks hbm.bandwidth_gbps."
    elif secs <= 0:
        why["mbu_estimated_percent"] = empty
    else:
        pct(hbm / secs, peaks.hbm_bytes_per_s * chips, "mbu_estimated_percent", "no chip in scope ran work.")

    # engines
    m["instruction_count"] = int(tot["instruction_count"])
    for e in ENGINES:
        n_e = int((is_core & u[f"has_{e}"]).sum())
        m[f"{e}_engine_instruction_count"] = int(tot[f"{e}_engine_instruction_count"])
        m[f"{e}_engine_active_time_ns"] = int(tot[f"{e}_engine_active_time_ns"])
        pct(tot[f"{e}_engine_active_time_ns"], T * n_e, f"{e}_engine_active_time_percent",
            f"no {e} engine instructions in scope (the trace may hold kernel-level detail only).")

    # dma
    n_dma = int(u["has_dma"].sum())
    m["dma_active_time_ns"] = int(tot["dma_active_time_ns"])
    pct(tot["dma_active_time_ns"], T * n_dma, "dma_active_time_percent",
        "no DMA transfers in scope (the trace may hold kernel-level detail only).")
    n_tr = int(tot["dma_transfer_count"])
    m["dma_transfer_count"] = n_tr
    m["dma_transfer_total_bytes"] = int(tot["dma_transfer_total_bytes"])
    m["dma_small_transfer_count"] = int(tot["dma_small_transfer_count"])
    if n_tr:
        m["dma_transfer_average_bytes"] = tot["dma_transfer_total_bytes"] / n_tr
        m["dma_small_transfer_percent"] = 100.0 * tot["dma_small_transfer_count"] / n_tr
    else:
        why["dma_transfer_average_bytes"] = why["dma_small_transfer_percent"] = "no DMA transfers in scope."

    # collectives
    m["cc_op_count"] = int(tot["cc_op_count"])
    m["cc_op_active_time_ns"] = int(tot["cc_op_active_time_ns"])
    pct(tot["cc_op_active_time_ns"], T * chips, "cc_op_active_time_percent", "no chip in scope ran work.")
    m["collective_wait_ns"] = int(tot["collective_wait_ns"])
    m["collective_transfer_ns"] = int(tot["collective_transfer_ns"])

    # power
    n_thr = int(u["has_throttle"].sum())
    if n_thr == 0:
        for name in ("throttled_time_ns", "throttled_time_percent", "average_utilization_limit_percent",
                     "throttling_percent"):
            why[name] = "the trace has no Throttling counter for the cores in scope."
    else:
        m["throttled_time_ns"] = int(tot["throttled_time_ns"])
        pct(tot["throttled_time_ns"], T * n_thr, "throttled_time_percent", "empty window.")
        if tot["throttle_covered_ns"] > 0:
            m["average_utilization_limit_percent"] = tot["throttle_limit_ns"] / tot["throttle_covered_ns"]
            m["throttling_percent"] = 100.0 - m["average_utilization_limit_percent"]
        else:
            why["average_utilization_limit_percent"] = why["throttling_percent"] = "no Throttling samples cover the window."

    for name, value in m.items():
        if isinstance(value, (float, np.floating)):
            m[name] = None if not np.isfinite(value) else float(value)
        if m[name] is None and name not in why:
            why[name] = "not available for this scope."
    scope_info = {**scope.describe(), "cores": cores, "chips_with_work": chips, "hardware": peaks.name}
    scope_info.update(extra_scope or {})
    return Summary(scope=scope_info, metrics=m, unavailable=why)


def summarize(
    trace: Trace,
    chips: Iterable[int] | None = None,
    time_range: tuple[int, int] | None = None,
    track_ids: Iterable[int] | None = None,
    *,
    cores: Iterable[int] | None = None,
    scope: Scope | None = None,
) -> Summary:
    """Summary metrics for the whole trace, some chips, cores, a time window and/or some tracks.

    `time_range` is [t0, t1) in trace ns; `track_ids` narrows instruction, DMA and
    collective metrics to those tracks and kernel metrics (FLOPs, HBM bytes) to the
    cores the tracks belong to; or pass a ready `Scope` (what `trnx summary` parses).
    Bad values raise `UserError`.
    """
    tracks = Tracks.of(trace)
    peaks = Peaks.from_meta(trace.hardware)
    scope = (scope or Scope.of(chips, time_range, track_ids, cores)).resolve(trace, tracks)
    return aggregate(per_unit(trace, scope, tracks, peaks), scope, peaks)


def summarize_per_chip(trace: Trace, time_range: tuple[int, int] | None = None, *,
                       scope: Scope | None = None) -> dict[int, Summary]:
    """One summary per chip that ran work (in `scope`'s window and cores), from a single pass over the tables."""
    tracks = Tracks.of(trace)
    peaks = Peaks.from_meta(trace.hardware)
    scope = replace(scope or Scope.of(time_range=time_range), chips=None).resolve(trace, tracks)
    return _per_chip(per_unit(trace, scope, tracks, peaks), scope, peaks)


def summarize_trace_and_chips(trace: Trace) -> tuple[Summary, dict[int, Summary]]:
    """`summarize(trace)` and `summarize_per_chip(trace)` from one pass over the tables.

    Both aggregate the same per-unit totals over the whole span (what the GUI's summary
    panel shows side by side), so one `per_unit` serves both: half the time and half
    the passes over a 10M-row trace.
    """
    tracks = Tracks.of(trace)
    peaks = Peaks.from_meta(trace.hardware)
    scope = Scope().resolve(trace, tracks)
    units = per_unit(trace, scope, tracks, peaks)
    return aggregate(units, scope, peaks), _per_chip(units, scope, peaks)


def _per_chip(units: pd.DataFrame, scope: Scope, peaks: Peaks) -> dict[int, Summary]:
    per_chip: dict[int, Summary] = {}
    for chip in sorted(units.loc[units["has_work"], "chip"].unique().tolist()):
        chip_scope = replace(scope, chips=(int(chip),))
        per_chip[int(chip)] = aggregate(units[units["chip"] == chip], chip_scope, peaks)
    return per_chip
