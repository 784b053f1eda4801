"""The analyses on real simulator captures: the physics the issues promise shows up in our numbers."""

from __future__ import annotations

import pytest

from explorer.model.analysis.diff import diff
from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.analysis.recommendations import recommend
from explorer.model.analysis.summary import summarize
from simcore.capture import capture
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    d = tmp_path_factory.mktemp("cap")
    out = {}
    for name, opts in {
        "gemm_bf16": dict(workload="gemm", shape="4096,4096,4096", dtype="bf16", detail="instruction"),
        "gemm_mxfp8": dict(workload="gemm", shape="4096,4096,4096", dtype="mxfp8", detail="instruction"),
        "decode": dict(workload="llama3.1-8b", phase="decode", batch=8, context=4096, layers=1, detail="instruction"),
    }.items():
        out[name] = open_trace(capture(out_path=d / f"{name}.trnx", **opts))
    return out


def test_bf16_gemm_is_compute_bound_near_peak_and_gets_mxfp8_advice(captures):
    t = captures["gemm_bf16"]
    m = summarize(t).metrics
    assert m["core_count"] == 1
    assert 80 <= m["mfu_estimated_percent"] <= 100
    assert m["tensor_engine_active_time_percent"] > 90
    k = Hierarchy(t).kernels
    assert (k["bound"] == "compute").all()
    assert "mxfp8_for_bf16_matmul" in {r.rule for r in recommend(t)}


def test_mxfp8_gemm_diff_shows_the_speedup(captures):
    d = diff(captures["gemm_bf16"], captures["gemm_mxfp8"])
    total = d.metrics.set_index("metric").loc["total_time_ns"]
    assert 0.2 <= total["ratio"] <= 0.4  # MXFP8 runs ~3-4x BF16 on Trn3
    assert (d.ops["status"] == "matched").all()
    assert (d.kernels["status"] == "matched").all() and (d.kernels["delta_ns"] < 0).all()


def test_decode_is_hbm_bound_with_low_intensity(captures):
    t = captures["decode"]
    m = summarize(t).metrics
    assert m["mbu_estimated_percent"] > 40 and m["mfu_estimated_percent"] < 20
    k = Hierarchy(t).kernels
    matmuls = k[k["name"].str.startswith(("matmul", "fused"))]   # the fused QKV and MLP kernels hold matmuls
    assert (matmuls["bound"] == "hbm").mean() >= 0.75
    assert "hbm_bound_low_intensity" in {r.rule for r in recommend(t)}
