"""Kernel details: engine breakdown, instruction mix, DMA queues and roofline."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from model import analysis_traces as at

from explorer.model.analysis.kernel_details import kernel_details
from simcore.errors import UserError
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return open_trace(at.write(tmp_path_factory.mktemp("k") / "basic.trnx"))


def test_engine_breakdown_and_mix_match_pandas(trace):
    d = kernel_details(trace, 100)
    eng = d.engines.set_index("engine")
    assert eng.loc["tensor", "busy_ns"] == 2200 and eng.loc["tensor", "instruction_count"] == 5
    assert eng.loc["tensor", "busy_percent"] == pytest.approx(100.0)
    assert eng.loc["vector", "busy_ns"] == 500 and eng.loc["gpsimd", "busy_ns"] == 0
    assert eng.loc["dma", "busy_ns"] == 600 and eng.loc["dma", "instruction_count"] == 3
    ins = pd.read_feather(trace.path / "instructions.arrow")
    ref = ins[ins.kernel_id == 100].groupby("opcode", observed=True).dur_ns.agg(["size", "sum"])
    mix = d.instruction_mix.set_index("opcode")
    for op, r in ref.iterrows():
        assert (mix.loc[op, "count"], mix.loc[op, "time_ns"]) == (r["size"], r["sum"])
    assert mix["time_percent"].sum() == pytest.approx(100.0)
    assert d.instruction_mix["opcode"].iloc[0] == "MultiplyMoving"  # biggest time first
    q = d.dma_queues.set_index("name")
    assert q.loc["qSyncIO0", "transfers"] == 2 and q.loc["qSyncIO0", "small_transfers"] == 1
    assert q.loc["qSyncIO1", "average_bytes_per_partition"] == 512


def test_roofline_of_the_kernels_dtype(trace):
    r = kernel_details(trace, 103).roofline  # fp8 kernel
    assert r.peak_tflops == 158 and r.bandwidth_gbps == 4900
    assert r.ridge_intensity == pytest.approx(158e3 / 4900)
    assert r.point_intensity == pytest.approx(4_000_000 / 2_500_000)
    assert r.point_tflops == pytest.approx(4_000_000 / 5000 / 1e3)
    attainable = 1.6 * 4900 / 1e3
    assert r.attainable_tflops(1.6) == pytest.approx(attainable)
    assert r.efficiency_percent == pytest.approx(100 * 0.8 / attainable)
    assert r.other_peaks["mxfp8"] == 315 and "fp8" not in r.other_peaks
    assert np.allclose(r.attainable_tflops(np.array([1.0, 1e6])), [4.9, 158])


def test_kernel_level_only_and_bad_id(trace):
    d = kernel_details(trace, 102)
    assert d.instruction_mix.empty and d.notes
    json.dumps(d.to_dict())  # plain data all the way down
    with pytest.raises(UserError, match="kernel 5"):
        kernel_details(trace, 5)


def test_no_hardware_means_no_roofs(tmp_path):
    t = open_trace(at.write(tmp_path / "nohw.trnx", hardware=None))
    r = kernel_details(t, 100).roofline
    assert r.peak_tflops is None and r.ridge_intensity is None and r.efficiency_percent is None


def test_roofline_uses_the_cores_share_of_hbm_and_shows_the_chip_beside_it(trace):
    # kernel 100 (chip 0 core 0, [0, 2200)) runs beside kernel 102 (chip 0 core 1, [0, 4000)): two
    # cores stream from chip 0's HBM, so each gets half of its 4900 GB/s
    r = kernel_details(trace, 100).roofline
    assert r.hbm_sharing == pytest.approx(2.0)
    assert r.bandwidth_gbps == pytest.approx(2450) and r.chip_bandwidth_gbps == 4900
    assert r.ridge_intensity == pytest.approx(79e3 / 2450) and r.chip_ridge_intensity == pytest.approx(79e3 / 4900)
    ai = 4_100_000 / 665_536
    achieved = 4_100_000 / 2200 / 1e3
    assert r.efficiency_percent == pytest.approx(100 * achieved / (ai * 2450 / 1e3))
    assert r.chip_efficiency_percent == pytest.approx(100 * achieved / (ai * 4900 / 1e3))
    assert r.chip_hbm_percent == pytest.approx(100 * 100 / 4900)  # chip 0's HBM Read counter holds 100 GB/s
    assert kernel_details(trace, 103).roofline.chip_hbm_percent is None  # chip 1 has no HBM counter


def test_a_decode_matmul_is_near_its_share_of_hbm_not_11_percent_of_the_chip(tmp_path):
    """The issue's case: 8 cores streaming weights share one HBM; each kernel is near its share."""
    from pathlib import Path

    sample = Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-8b-decode.trnx"
    t = open_trace(sample)
    from explorer.model.analysis.hierarchy import Hierarchy

    k = Hierarchy(t).kernels
    # the fused MLP kernel (gate/up projections, SwiGLU, down projection) streams the layer's largest weights
    mlp = int(k.loc[(k["name"] == "fused_mlp") & (k["core"] == 0), "kernel_id"].iloc[0])
    r = kernel_details(t, mlp).roofline
    assert r.hbm_sharing == pytest.approx(8.0, abs=0.5)
    assert r.efficiency_percent > 60 and r.chip_efficiency_percent < 15
    assert abs(r.chip_hbm_percent - r.efficiency_percent) < 15  # the chip's HBM is as busy as the core's share says


def test_mix_and_queues_equal_pandas_on_a_sample():
    """The numpy grouping (on a worker beside the GUI thread, so no pandas per-row work) gives what
    a pandas groupby of the same rows gives, in the same order."""
    from pathlib import Path

    from explorer.model.analysis.summary import SMALL_DMA_BYTES_PER_PARTITION
    from explorer.model.tracks import ENGINE_OF_KIND

    sample = open_trace(Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-8b-decode.trnx")
    ins = sample.to_pandas("instructions").astype({"opcode": str})
    dma = sample.to_pandas("dma")
    tracks = sample.to_pandas("tracks").astype({"kind": str, "name": str}).set_index("track_id")
    engine_of_track = tracks["kind"].map(lambda k: ENGINE_OF_KIND.get(k, k))
    busiest = (ins[ins.kernel_id >= 0]["kernel_id"].value_counts().index[:3].tolist()
               + dma[dma.kernel_id >= 0]["kernel_id"].value_counts().index[:2].tolist())
    for kid in busiest:
        d = kernel_details(sample, int(kid))
        mine = ins[ins.kernel_id == kid].assign(engine=lambda f: engine_of_track[f.track_id].to_numpy())
        want = (mine.groupby(["opcode", "engine"], as_index=False)
                .agg(count=("dur_ns", "size"), time_ns=("dur_ns", "sum"), flops=("flops", "sum"), bytes=("bytes", "sum"))
                .sort_values("time_ns", ascending=False, kind="stable").reset_index(drop=True))
        got = d.instruction_mix
        assert len(got) == len(want) > 0
        for c in ("opcode", "engine", "count", "time_ns", "flops", "bytes"):
            assert got[c].tolist() == want[c].tolist(), (kid, c)
        q = dma[dma.kernel_id == kid]
        parts = q["partitions"].clip(lower=1)
        want_q = (q.assign(pp=q["bytes"] / parts, small=q["bytes"] < SMALL_DMA_BYTES_PER_PARTITION * parts)
                  .groupby("track_id").agg(transfers=("bytes", "size"), bytes=("bytes", "sum"), busy_ns=("dur_ns", "sum"),
                                           avg=("pp", "mean"), small=("small", "sum")))
        got_q = d.dma_queues.set_index("track_id")
        assert got_q.index.tolist() == want_q.index.tolist()
        assert got_q["name"].tolist() == tracks.loc[want_q.index, "name"].tolist()
        for a, b in (("transfers", "transfers"), ("bytes", "bytes"), ("busy_ns", "busy_ns"), ("small_transfers", "small")):
            assert got_q[a].tolist() == want_q[b].tolist(), (kid, a)
        assert np.allclose(got_q["average_bytes_per_partition"], want_q["avg"])
