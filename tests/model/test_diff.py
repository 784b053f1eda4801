"""Comparing two traces: metric, engine, op and kernel deltas with matching by hierarchy position."""

from __future__ import annotations

import json

import numpy as np
import pytest

from model import analysis_traces as at

from explorer.model.analysis.diff import diff
from explorer.model.analysis.metrics import METRIC_NAMES
from explorer.model.analysis.summary import summarize
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    a = open_trace(at.write(d / "a.trnx"))
    t = at.basic_tables()
    # B: the qkv matmul on chip 1 runs in MXFP8 and takes 2000 ns instead of 5000; vector work halves
    t["kernels"]["dtype"][3] = "mxfp8"
    t["kernels"]["dur_ns"][3] = 2000
    t["instructions"]["dur_ns"][5] = 250  # TensorTensor on Vector: 500 -> 250 ns
    t["ops"]["dur_ns"][2] = 4000
    # and B has an extra op (a residual add) with a kernel
    t["ops"] = {c: v + [x] for (c, v), x in zip(t["ops"].items(), (15, 11, "op", "residual_add", "add", 3100, 50))}
    k = t["kernels"]
    for c, x in zip(k, (104, at.T_K00, 0, 0, 15, "add", 3100, 50, 1000, 1000, 2000, 2000, "bf16")):
        k[c].append(x)
    b = open_trace(at.write(d / "b.trnx", t))
    return a, b


def test_metric_deltas_are_b_minus_a_of_the_summaries(pair):
    a, b = pair
    d = diff(a, b)
    assert d.metrics["metric"].tolist() == list(METRIC_NAMES)
    sa, sb = summarize(a).metrics, summarize(b).metrics
    m = d.metrics.set_index("metric")
    for name in ("hardware_flops", "vector_engine_active_time_ns", "mfu_estimated_percent", "kernel_count"):
        assert m.loc[name, "delta"] == pytest.approx(sb[name] - sa[name])
    assert m.loc["vector_engine_active_time_ns", "delta"] == -250
    assert m.loc["vector_engine_active_time_ns", "better"] == ""
    assert m.loc["mfu_estimated_percent", "better"] == "a"  # B normalises 4 MFLOP of fp8 to mxfp8: less BF16 work
    e = d.engines.set_index("engine")
    assert e.loc["vector", "delta_ns"] == -250 and e.loc["tensor", "delta_ns"] == 0
    assert e.loc["vector", "delta_percent"] == pytest.approx(-2.5)


def test_ops_match_by_path_and_occurrence(pair):
    d = diff(*pair)
    ops = d.ops.set_index("key")
    qkv = ops.loc["* / layer 0 / attention.qkv_proj #0"]
    assert (qkv["a_op_id"], qkv["b_op_id"], qkv["delta_ns"], qkv["status"]) == (12, 12, -1000, "matched")
    assert qkv["ratio"] == pytest.approx(0.8)
    extra = ops.loc["* / layer 0 / residual_add #0"]
    assert extra["status"] == "only_b" and extra["a_op_id"] == -1 and np.isnan(extra["a_dur_ns"])
    change = (d.ops["b_dur_ns"].fillna(0) - d.ops["a_dur_ns"].fillna(0)).abs()
    assert change.is_monotonic_decreasing  # largest absolute change first (qkv_proj: 1000 ns)
    assert d.ops["key"].iloc[0] == "* / layer 0 / attention.qkv_proj #0"


def test_kernels_compare_per_op_and_name(pair):
    d = diff(*pair)
    k = d.kernels.set_index(["op_key", "name"])
    q = k.loc[("* / layer 0 / attention.qkv_proj #0", "matmul_qkv")]
    assert (q["a_count"], q["b_count"]) == (3, 3)
    assert (q["a_time_ns"], q["b_time_ns"], q["delta_ns"]) == (11_200, 8_200, -3000)
    assert (q["a_max_ns"], q["b_max_ns"]) == (5000, 4000)
    add = k.loc[("* / layer 0 / residual_add #0", "add")]
    assert add["status"] == "only_b" and add["delta_ns"] == 50


def test_same_trace_has_no_deltas_and_json_is_plain(pair):
    a, _ = pair
    d = diff(a, a)
    assert (d.ops["delta_ns"] == 0).all() and (d.kernels["delta_ns"] == 0).all()
    assert (d.metrics["delta"].dropna() == 0).all()
    out = d.to_dict(top=2)
    assert len(out["ops"]) == 2
    json.dumps(out)


def test_models_named_after_their_dtype_still_match(tmp_path):
    a = open_trace(at.write(tmp_path / "a.trnx"))
    t = at.basic_tables()
    t["ops"]["name"][0] = "TestNet mxfp8"
    d = diff(a, open_trace(at.write(tmp_path / "b.trnx", t)))
    assert (d.ops["status"] == "matched").all()
    root = d.ops.set_index("key").loc["* #0"]
    assert root["path"] == "TestNet" and root["a_op_id"] == root["b_op_id"] == 10


def test_repeated_layers_match_in_order(tmp_path):
    t = at.basic_tables()
    # a second layer with the same op names: occurrence keys keep them apart
    extra = {"op_id": [20, 21], "parent_id": [10, 20], "level": ["layer", "op"],
             "name": ["layer 1", "attention.qkv_proj"], "kind": ["layer", "matmul"],
             "start_ns": [8000, 8000], "dur_ns": [1000, 1000]}
    t["ops"] = {c: v + extra[c] for c, v in t["ops"].items()}
    a = open_trace(at.write(tmp_path / "a.trnx", t))
    t["ops"]["dur_ns"][-1] = 700
    b = open_trace(at.write(tmp_path / "b.trnx", t))
    ops = diff(a, b).ops.set_index("key")
    assert ops.loc["* / layer 1 / attention.qkv_proj #0", "delta_ns"] == -300
    assert ops.loc["* / layer 0 / attention.qkv_proj #0", "delta_ns"] == 0


def test_ops_sort_by_absolute_change_then_in_natural_order(tmp_path):
    import pandas as pd

    from explorer.model.analysis.diff import by_change

    frame = pd.DataFrame({"key": ["layer 10", "layer 2", "layer 1", "only b"], "a": [5.0, 5.0, 5.0, np.nan],
                          "b": [5.0, 5.0, 1.0, 2.0]})
    assert by_change(frame, "key", "a", "b")["key"].tolist() == ["layer 1", "only b", "layer 2", "layer 10"]


def test_flags_reason_about_what_each_metric_divides(pair):
    from explorer.model.analysis.diff import judge
    from explorer.model.analysis.summary import Summary

    def summary(**m):
        return Summary({}, m)

    a = summary(total_time_ns=1000, vector_engine_active_time_percent=20.0, hbm_read_bytes=1000, hbm_write_bytes=0,
                hbm_bandwidth_gbps=1.0)
    b = summary(total_time_ns=500, vector_engine_active_time_percent=40.0, hbm_read_bytes=500, hbm_write_bytes=0,
                hbm_bandwidth_gbps=1.0 * 0.9)
    better, why = judge("vector_engine_active_time_percent", a, b)  # same busy time in half the run
    assert better == "" and "0.5x" in why
    better, why = judge("hbm_bandwidth_gbps", a, b)  # lower bandwidth, but half the bytes
    assert better == "" and "0.5x A's HBM bytes" in why
    b.metrics["hbm_read_bytes"] = 1000
    assert judge("hbm_bandwidth_gbps", a, b) == ("a", "higher is better at the same work")
    assert judge("total_time_ns", a, b) == ("b", "lower is better")
