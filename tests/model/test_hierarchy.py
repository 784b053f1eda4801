"""The model -> layer -> op -> kernel -> instruction tree and its per-row metrics."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from model import analysis_traces as at

from explorer.model.analysis.bound import by_kernel_time, classify
from explorer.model.analysis.hierarchy import ROW_COLUMNS, Hierarchy
from simcore.errors import UserError
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def h(tmp_path_factory):
    return Hierarchy(open_trace(at.write(tmp_path_factory.mktemp("h") / "basic.trnx")))


def test_kernel_rows_match_pandas(h):
    k = h.kernels.set_index("kernel_id")
    ref = pd.read_feather(h.trace.path / "kernels.arrow").set_index("kernel_id")
    hbm = ref.hbm_read_bytes + ref.hbm_write_bytes
    assert (k["hbm_bytes"] == hbm).all()
    assert np.allclose(k["tflops"], ref.flops / ref.dur_ns / 1e3)
    assert np.allclose(k["gbps"], hbm / ref.dur_ns)
    assert k.loc[100, "arithmetic_intensity"] == pytest.approx(4_100_000 / 665_536)
    assert np.isnan(k.loc[101, "arithmetic_intensity"])  # no HBM bytes: intensity undefined, not infinite
    assert k.loc[100, "share_percent"] == pytest.approx(22.0)
    # kernel 100's busiest engine row is TensorMatrix (2100 ns); its DMA queues cover 600 ns
    assert (k.loc[100, "engine_busy_ns"], k.loc[100, "dma_busy_ns"], k.loc[100, "instruction_count"]) == (2100, 600, 8)
    assert np.isnan(k.loc[102, "engine_busy_ns"])  # kernel-level detail only
    assert k.loc[100, "t_compute_ns"] == pytest.approx(4_100_000 / 79e12 * 1e9)
    assert k.loc[103, "t_compute_ns"] == pytest.approx(4_000_000 / 158e12 * 1e9)
    assert k.loc[103, "t_hbm_ns"] == pytest.approx(2_500_000 / 4900e9 * 1e9)  # alone on chip 1
    # kernel 100 (chip 0 core 0, 0..2200) shares HBM with kernel 102 (core 1, 0..4000) all along;
    # 102 shares it with 100 for 2200 ns and with 101 (3000..3100) for 100 ns
    assert k.loc[100, "hbm_sharing"] == 2.0 and k.loc[102, "hbm_sharing"] == pytest.approx((2200 * 2 + 100 * 2 + 1700) / 4000)
    assert k.loc[100, "t_hbm_ns"] == pytest.approx(2 * 665_536 / 4900e9 * 1e9)
    assert k["bound"].to_dict() == {100: "compute", 101: "compute", 102: "dma_latency", 103: "dma_latency"}


def test_ops_aggregate_their_subtree(h):
    o = h.ops.set_index("op_id")
    k = pd.read_feather(h.trace.path / "kernels.arrow")
    assert o.loc[12, "flops"] == k[k.op_id == 12].flops.sum() == 16_100_000
    assert o.loc[11, "flops"] == o.loc[10, "flops"] == k.flops.sum()
    assert o.loc[10, "hbm_bytes"] == (k.hbm_read_bytes + k.hbm_write_bytes).sum()
    assert (o.loc[12, "cores"], o.loc[12, "chips"], o.loc[12, "kernel_count"]) == (3, 2, 3)
    assert o.loc[12, "tflops"] == pytest.approx(16_100_000 / 5000 / 1e3)
    assert o.loc[14, "bound"] == "collective"
    # an op reads what its kernels' time says: 9000 ns of dma_latency kernels (102, 103) beat the
    # 2200 ns compute-bound kernel 100, though the rule on op 12's own span would say compute
    assert o.loc[12, "bound"] == "dma_latency"
    assert o.loc[13, "bound"] == "compute"  # its one kernel, 101
    assert o.loc[11, "bound"] == o.loc[10, "bound"] == "dma_latency"  # 9000 ns beat 2300 ns
    assert o.loc[10, "share_percent"] == pytest.approx(80.0)


def test_a_tie_in_kernel_time_goes_to_the_first_bound_and_unknown_kernels_do_not_count():
    bound = np.array(["hbm", "compute", "unknown", "unknown"], dtype=object)
    dur = np.array([10.0, 10.0, 99.0, 5.0])
    item, row = np.array([0, 1, 2, 3]), np.array([0, 0, 0, 1])
    assert by_kernel_time(bound, dur, item, row, 3).tolist() == ["compute", "unknown", "unknown"]


def test_rows_children_and_ancestors_link_back_into_the_trace(h):
    rows = h.rows()
    assert list(rows.columns) == list(ROW_COLUMNS)
    assert rows["node"].iloc[0] == "op:10"  # parents first
    assert set(rows.loc[rows.level == "kernel", "parent"]) == {"op:12", "op:13"}
    assert list(h.children("op:11")["node"]) == ["op:12", "op:13", "op:14"]
    assert list(h.children("")["node"]) == ["op:10"]
    assert h.children("op:14").empty  # a collective op without kernels
    assert h.rows() is h.rows()  # built once
    ev = h.children("kernel:100")
    assert ev["node"].tolist() == [
        "instruction:1", "instruction:9", "dma:20", "instruction:3", "dma:22", "dma:21",
        "instruction:2", "instruction:6", "instruction:4", "instruction:8", "instruction:5",
    ]
    assert ev.loc[ev.node == "dma:21", "name"].item() == "DMA hbm->sbuf"
    assert h.ancestors("instruction:6") == ["op:10", "op:11", "op:12", "kernel:100", "instruction:6"]
    assert h.ancestors("kernel:101") == ["op:10", "op:11", "op:13", "kernel:101"]
    assert h.time_range("op:12") == (0, 5000)
    assert h.time_range("dma:21") == (400, 600)
    assert h.track_ids("op:12") == [at.T_K00, at.T_K01, at.T_K10]
    assert h.track_ids("instruction:3") == [at.T_MATRIX]


def test_bad_nodes_are_user_errors(h):
    with pytest.raises(UserError, match="op:999"):
        h.children("op:999")
    for node in ("kernel:999", "op:999", "instruction:999", "bogus"):
        with pytest.raises(UserError):
            h.ancestors(node) if node != "op:999" else h.time_range(node)


def test_bound_rule_near_each_roof():
    dur = np.array([100.0, 100, 100, 100, 100, 100])
    tc = np.array([80.0, 10, 10, 10, 10, np.nan])
    tm = np.array([10.0, 70, 20, 5, 20, np.nan])
    eng = np.array([np.nan, np.nan, 30, 60, np.nan, np.nan])
    dma = np.array([np.nan, np.nan, 90, 20, np.nan, np.nan])
    cc = np.array([False, False, False, False, False, False])
    assert classify(dur, tc, tm, eng, dma, cc).tolist() == [
        "compute", "hbm", "dma_latency", "compute", "dma_latency", "unknown",
    ]
    assert classify(dur[:1], tc[:1], tm[:1], eng[:1], dma[:1], np.array([True])).tolist() == ["collective"]


def test_near_roof_kernels_are_compute_or_hbm(tmp_path):
    tables = at.basic_tables()
    tables["kernels"]["flops"][2] = 1_000_000_000  # mxfp8: 3175 ns of a 4000 ns kernel at 315 TFLOPS
    tables["kernels"]["hbm_read_bytes"][3] = 20_000_000  # 4.2 us of HBM time in a 5 us kernel
    k = Hierarchy(open_trace(at.write(tmp_path / "roof.trnx", tables))).kernels.set_index("kernel_id")
    assert k.loc[102, "bound"] == "compute" and k.loc[103, "bound"] == "hbm"


def test_a_kernel_spending_its_time_issuing_dma_is_dma_latency_bound(tmp_path):
    """The Sync engine's DmaTrigger time is DMA issue cost, not compute: a kernel whose Sync row
    is busier than its compute engines and its queues is limited by its transfers' fixed cost."""
    tables = at.basic_tables()
    ins = tables["instructions"]
    tables["kernels"]["dur_ns"][1] = 400  # softmax 101: 3000..3400, Vector Exponential busy 100 ns
    for iid, start in ((10, 3000), (11, 3150)):
        for col, v in zip(("id", "track_id", "start_ns", "dur_ns", "opcode", "kernel_id", "flops", "bytes", "dtype"),
                          (iid, at.T_SYNC, start, 150, "DmaTrigger", 101, 0, 0, "bf16")):
            ins[col].append(v)
    k = Hierarchy(open_trace(at.write(tmp_path / "issue.trnx", tables))).kernels.set_index("kernel_id")
    assert (k.loc[101, "engine_busy_ns"], k.loc[101, "dma_busy_ns"]) == (100, 300)
    assert k.loc[101, "bound"] == "dma_latency"
    assert k.loc[100, "bound"] == "compute"  # its 10 ns SemaphoreWait on Sync changes nothing


def test_trace_without_ops_or_hardware_still_lists_kernels(tmp_path):
    tables = at.basic_tables()
    tables["ops"] = {c: [] for c in tables["ops"]}
    h = Hierarchy(open_trace(at.write(tmp_path / "bare.trnx", tables, hardware=None)))
    rows = h.rows()
    assert (rows["level"] == "kernel").all() and (rows["parent"] == "").all()
    assert rows.set_index("id").loc[102, "bound"] == "unknown"  # no roofs, no detail: not guessed
    assert rows.set_index("id").loc[100, "bound"] == "compute"  # instruction detail still decides


def test_filter_closure_keeps_matches_their_ancestors_and_their_subtrees(h):
    from explorer.model.analysis.hierarchy import filter_closure

    rows = h.rows()
    shown, matches = filter_closure(rows, "  SoftMax ")
    assert matches and all("softmax" in rows.set_index("node").loc[m, "name"].lower() for m in matches)
    for m in matches:
        assert set(h.ancestors(m)) <= shown
    under = rows[rows["parent"].isin(matches)]["node"]
    assert set(under) <= shown
    assert len(shown) < len(rows)
    assert filter_closure(rows, "no such thing") == (set(), [])


def test_mfu_both_ways_mbu_and_roofline_per_row(h):
    k = h.kernels.set_index("kernel_id")
    bf16_core = 2 * 128 * 128 * 2.4  # FLOP per ns of one core's array
    # kernel 103: fp8, 4 MFLOP of model FLOPs in 5000 ns on one core; fp8 peak 158 TFLOPS, weight 0.5
    assert k.loc[103, "mfu_percent"] == pytest.approx(100 * 4_000_000 / 158e3 / 5000)
    assert k.loc[103, "mfu_bf16_percent"] == pytest.approx(100 * 4_000_000 * 0.5 / bf16_core / 5000)
    # alone on chip 1: the whole 4900 GB/s; the roof is whichever of compute and HBM takes longer
    assert k.loc[103, "mbu_percent"] == pytest.approx(100 * 2_500_000 / 4900 / 5000)
    assert k.loc[103, "roofline_percent"] == pytest.approx(100 * max(4_000_000 / 158e3, 2_500_000 / 4900) / 5000)
    # kernel 100 shares chip 0's HBM with kernel 102: its MBU is against half of it
    assert k.loc[100, "mbu_percent"] == pytest.approx(100 * 665_536 / 2450 / 2200)
    o = h.ops.set_index("op_id")
    # op 12: kernels 100 (bf16), 102 (mxfp8), 103 (fp8) on 3 cores over its 5000 ns
    t_model = 4_000_000 / 79e3 + 8_000_000 / 315e3 + 4_000_000 / 158e3
    assert o.loc[12, "mfu_percent"] == pytest.approx(100 * t_model / 3 / 5000)
    t_bf16 = (4_000_000 + 8_000_000 * 0.25 + 4_000_000 * 0.5) / bf16_core
    assert o.loc[12, "mfu_bf16_percent"] == pytest.approx(100 * t_bf16 / 3 / 5000)
    rows = h.rows().set_index("node")
    assert {"mfu_percent", "mfu_bf16_percent", "mbu_percent", "roofline_percent"} <= set(rows.columns)
    assert rows.loc["op:12", "mfu_percent"] == pytest.approx(o.loc[12, "mfu_percent"])
    assert np.isnan(h.children("kernel:100")["mfu_percent"]).all()  # instruction rows: not a rate of the row
