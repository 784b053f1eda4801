"""Summary metrics against hand-worked answers and an independent pandas computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from model import analysis_traces as at

from explorer.model.analysis.metrics import METRIC_NAMES
from explorer.model.analysis.summary import summarize, summarize_per_chip
from simcore.errors import UserError
from simcore.trace import open_trace

PEAK_CORE = 2 * 128 * 128 * 2.4e9  # BF16 FLOP/s of one core


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return open_trace(at.write(tmp_path_factory.mktemp("s") / "basic.trnx"))


def test_whole_trace_matches_hand_worked_answers(trace):
    m = summarize(trace).metrics
    assert set(m) == set(METRIC_NAMES)
    assert m["total_time_ns"] == 10_000
    assert (m["core_count"], m["chip_count"], m["kernel_count"]) == (3, 2, 4)
    assert m["hardware_flops"] == 16_110_000
    assert m["model_flops"] == 16_010_000
    assert m["hardware_flops_bf16"] == 8_110_000
    assert m["transpose_flops"] == 100_000
    secs = 10_000e-9
    assert m["mfu_estimated_percent"] == pytest.approx(100 * (8_110_000 - 100_000) / (PEAK_CORE * secs * 3))
    assert m["hfu_estimated_percent"] == pytest.approx(100 * 8_110_000 / (PEAK_CORE * secs * 3))
    # against each kernel's own dtype peak (bf16 79, mxfp8 315, fp8 158 TFLOPS per core), less the bf16 transposes
    at_peak_ns = (4_110_000 - 100_000) / 79e3 + 8_000_000 / 315e3 + 4_000_000 / 158e3
    assert m["mfu_percent"] == pytest.approx(100 * at_peak_ns / (10_000 * 3))
    assert m["hbm_read_bytes"] == 3_600_000 and m["hbm_write_bytes"] == 565_536
    assert m["hbm_bandwidth_gbps"] == pytest.approx(4_165_536 / secs / 1e9)
    assert m["mbu_estimated_percent"] == pytest.approx(100 * 4_165_536 / secs / (4900e9 * 2))
    assert m["mm_arithmetic_intensity"] == pytest.approx(16_110_000 / 4_165_536)
    assert m["peak_flops_bandwidth_ratio"] == pytest.approx(PEAK_CORE / 4900e9)
    # engines: only chip 0 core 0 has instruction detail, so each percent is over one core
    assert m["tensor_engine_active_time_ns"] == 2200 and m["tensor_engine_instruction_count"] == 5
    assert m["tensor_engine_active_time_percent"] == pytest.approx(22.0)
    assert (m["vector_engine_active_time_ns"], m["vector_engine_instruction_count"]) == (600, 2)
    assert (m["scalar_engine_active_time_ns"], m["sync_engine_active_time_ns"]) == (200, 10)
    assert m["gpsimd_engine_active_time_percent"] == 0.0  # an idle engine of an instrumented core
    assert m["instruction_count"] == 9
    assert m["dma_active_time_ns"] == 600 and m["dma_active_time_percent"] == pytest.approx(6.0)
    assert (m["dma_transfer_count"], m["dma_transfer_total_bytes"]) == (3, 720_896)
    assert m["dma_transfer_average_bytes"] == pytest.approx(720_896 / 3)
    assert m["dma_small_transfer_count"] == 2
    assert m["total_active_time_ns"] == 11_300
    assert m["total_active_time_percent"] == pytest.approx(100 * 11_300 / 30_000)
    assert (m["cc_op_count"], m["cc_op_active_time_ns"]) == (2, 5000)
    assert m["cc_op_active_time_percent"] == pytest.approx(25.0)
    assert (m["collective_wait_ns"], m["collective_transfer_ns"]) == (1000, 4000)
    assert m["throttled_time_ns"] == 2000 and m["throttled_time_percent"] == pytest.approx(20.0)
    assert m["average_utilization_limit_percent"] == pytest.approx(93.0)
    assert m["throttling_percent"] == pytest.approx(7.0)  # as Neuron Explorer shows it: 0 at full rate


def _independent(path: Path, t0: int, t1: int, chips: list[int] | None = None) -> dict[str, float]:
    """The same numbers from plain pandas over the Feather files (no explorer code)."""
    tracks = pd.read_feather(path / "tracks.arrow")
    ins = pd.read_feather(path / "instructions.arrow").merge(tracks, on="track_id")
    ker = pd.read_feather(path / "kernels.arrow")
    dma = pd.read_feather(path / "dma.arrow").merge(tracks, on="track_id")
    if chips is not None:
        ins, ker, dma = ins[ins.chip.isin(chips)], ker[ker.chip.isin(chips)], dma[dma.chip.isin(chips)]
    out: dict[str, float] = {}

    def busy(frame: pd.DataFrame, keys: list[str]) -> int:
        total = 0
        for _, g in frame.groupby(keys, observed=True):
            covered = set()
            for s, d in zip(g.start_ns, g.dur_ns):
                covered.update(range(max(s, t0), min(s + d, t1)))
            total += len(covered)
        return total

    ins = ins.assign(engine=ins.kind.astype(str).replace({"tensor_matrix": "tensor"}))
    for e in ("tensor", "vector", "scalar", "gpsimd", "sync"):
        sel = ins[(ins.engine == e) & (ins.start_ns < t1) & (ins.start_ns + ins.dur_ns > t0)]
        out[f"{e}_engine_active_time_ns"] = busy(sel, ["chip", "core"])
        out[f"{e}_engine_instruction_count"] = len(sel)
    d = dma[(dma.start_ns < t1) & (dma.start_ns + dma.dur_ns > t0)]
    out["dma_active_time_ns"] = busy(d, ["chip", "core"])
    out["dma_transfer_count"] = len(d)
    out["dma_transfer_total_bytes"] = int(d.bytes.sum())
    end = ker.start_ns + ker.dur_ns
    frac = ((np.minimum(end, t1) - np.maximum(ker.start_ns, t0)).clip(lower=0)) / ker.dur_ns
    out["hardware_flops"] = float((ker.flops * frac).sum())
    out["model_flops"] = float((ker.model_flops * frac).sum())
    weight = ker.dtype.astype(str).map(at.TRN3_LIKE["tensor"]["bf16_flop_weight"]).astype(float)
    out["hardware_flops_bf16"] = float((ker.flops * frac * weight).sum())
    out["hbm_read_bytes"] = float((ker.hbm_read_bytes * frac).sum())
    out["hbm_write_bytes"] = float((ker.hbm_write_bytes * frac).sum())
    return out


@pytest.mark.parametrize("window", [(0, 10_000), (1000, 3050), (60, 1090), (2150, 9999)])
def test_window_matches_independent_pandas(trace, window):
    m = summarize(trace, time_range=window).metrics
    ref = _independent(trace.path, *window)
    assert m["total_time_ns"] == window[1] - window[0]
    for name, value in ref.items():
        assert m[name] == pytest.approx(value, abs=1), name
    core_ns = (window[1] - window[0]) * 1  # one instrumented core
    assert m["tensor_engine_active_time_percent"] == pytest.approx(100 * ref["tensor_engine_active_time_ns"] / core_ns)


def test_chip_scope_and_per_chip_agree(trace):
    one = summarize(trace, chips=[1])
    m = one.metrics
    assert (m["core_count"], m["chip_count"], m["hardware_flops"]) == (1, 1, 4_000_000)
    assert m["mfu_estimated_percent"] == pytest.approx(100 * 2_000_000 / (PEAK_CORE * 1e-5))
    assert m["mbu_estimated_percent"] == pytest.approx(100 * 2_500_000 / 1e-5 / 4900e9)
    # chip 1 has kernels only: engine figures are unavailable, with a reason
    assert m["tensor_engine_active_time_percent"] is None
    assert "kernel-level" in one.unavailable["tensor_engine_active_time_percent"]
    assert m["collective_wait_ns"] == 0 and m["cc_op_active_time_ns"] == 2000
    per_chip = summarize_per_chip(trace)
    assert sorted(per_chip) == [0, 1]
    assert per_chip[1].metrics == m
    assert per_chip[0].metrics == summarize(trace, chips=[0]).metrics
    assert per_chip[0]["hardware_flops"] + per_chip[1]["hardware_flops"] == 16_110_000


def test_track_selection_narrows_engines_and_keeps_its_cores_kernels(trace):
    s = summarize(trace, track_ids=[at.T_VECTOR])
    m = s.metrics
    assert m["instruction_count"] == 2 and m["vector_engine_active_time_percent"] == pytest.approx(6.0)
    assert m["tensor_engine_active_time_percent"] is None  # no tensor track selected
    assert m["hardware_flops"] == 4_110_000  # kernels of chip 0 core 0, the Vector row's core
    assert m["dma_transfer_count"] == 0


def test_missing_hardware_keys_degrade_to_unavailable(tmp_path):
    t = open_trace(at.write(tmp_path / "nohw.trnx", hardware=None))
    s = summarize(t)
    for name in ("mfu_estimated_percent", "hfu_estimated_percent", "mbu_estimated_percent", "peak_bf16_tflops"):
        assert s.metrics[name] is None and s.unavailable[name]
    assert s.metrics["hardware_flops"] == 16_110_000  # what the trace does hold is still reported
    assert s.metrics["tensor_engine_active_time_percent"] == pytest.approx(22.0)


def test_unknown_dtype_makes_mfu_unavailable_not_wrong(tmp_path):
    tables = at.basic_tables()
    tables["kernels"]["dtype"][3] = "int4"
    hw = {**at.TRN3_LIKE, "tensor": {k: v for k, v in at.TRN3_LIKE["tensor"].items() if k != "peak_tflops"}}
    s = summarize(open_trace(at.write(tmp_path / "int4.trnx", tables, hardware=hw)))
    assert s.metrics["mfu_estimated_percent"] is None
    assert "dtype" in s.unavailable["mfu_estimated_percent"]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"chips": [7]}, "chip 7"),
        ({"time_range": (500, 100)}, "empty"),
        ({"track_ids": [99]}, "track 99"),
    ],
)
def test_bad_selection_is_one_sentence_user_error(trace, kwargs, fragment):
    with pytest.raises(UserError, match=fragment) as err:
        summarize(trace, **kwargs)
    assert "\n" not in str(err.value)


def test_metric_formatting_shared_by_cli_and_gui():
    from explorer.model.analysis.metrics import format_metric

    assert format_metric(None, "%") == "n/a"
    assert format_metric(1_234_567, "ns") == "1.235 ms"
    assert format_metric(92.4712, "%") == "92.47 %"
    assert format_metric(3_600_000, "bytes") == "3.433 MiB"
    assert format_metric(16_110_000, "FLOP") == "16.11 MFLOP"
    assert format_metric(4900.0, "GB/s") == "4.9 TB/s"


def test_empty_trace_reports_zeros_and_reasons_never_nan(tmp_path):
    import json

    from explorer.model.analysis.diff import diff
    from explorer.model.analysis.hierarchy import Hierarchy
    from explorer.model.analysis.recommendations import recommend

    tables = at.basic_tables()
    empty = {name: {c: [] for c in cols} for name, cols in tables.items()}
    empty["tracks"] = tables["tracks"]
    t = open_trace(at.write(tmp_path / "empty.trnx", empty, span=(0, 0)))
    s = summarize(t)
    json.dumps(s.to_dict(), allow_nan=False)
    assert s.metrics["hardware_flops"] == 0 and s.metrics["core_count"] == 0
    assert s.metrics["achieved_tflops"] is None and "empty" in s.unavailable["achieved_tflops"]
    assert Hierarchy(t).rows().empty and recommend(t) == []
    assert diff(t, t).ops.empty


def test_rows_on_a_track_the_tracks_table_lacks_are_a_user_error(tmp_path):
    tables = at.basic_tables()
    tables["instructions"]["track_id"][-1] = 42
    path = at.write(tmp_path / "orphan.trnx", tables)
    with pytest.raises(UserError, match="'instructions' refers to track 42, which the tracks table lacks"):
        open_trace(path)  # validation refuses it, so `trnx validate` and the summary agree
    with pytest.raises(UserError, match="instructions table refers to track 42"):
        summarize(open_trace(path, validate=False))  # and an unvalidated open still fails cleanly


def test_mfu_against_the_dtypes_peak_differs_where_the_bf16_weight_is_not_the_peak_ratio(tmp_path):
    """A runtime that counts MX FLOPs as half a BF16 FLOP (not a quarter) reads MXFP8 kernels at half
    the peak they reach; MFU against the dtype's own peak is what the kernel achieved of its roof."""
    import copy

    hw = copy.deepcopy(at.TRN3_LIKE)
    hw["tensor"]["bf16_flop_weight"]["mxfp8"] = 0.5
    hw["tensor"]["bf16_flop_weight"]["fp8"] = 0.25
    t = open_trace(at.write(tmp_path / "w.trnx", hardware=hw))
    m = summarize(t).metrics
    at_peak_ns = (4_110_000 - 100_000) / 79e3 + 8_000_000 / 315e3 + 4_000_000 / 158e3
    assert m["mfu_percent"] == pytest.approx(100 * at_peak_ns / (10_000 * 3))
    bf16 = 4_110_000 + 8_000_000 * 0.5 + 4_000_000 * 0.25 - 100_000
    assert m["mfu_estimated_percent"] == pytest.approx(100 * bf16 / (PEAK_CORE * 10_000e-9 * 3))
    assert m["mfu_percent"] != pytest.approx(m["mfu_estimated_percent"], rel=0.05)
