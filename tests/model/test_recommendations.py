"""Each rule fires on a trace built to trigger it, links into the trace, and stays silent otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model import analysis_traces as at

from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.analysis.recommendations import RULES, recommend
from simcore.trace import open_trace


def _rules(path: Path, tables=None) -> dict:
    recs = recommend(open_trace(at.write(path, tables)))
    json.dumps([r.to_dict() for r in recs])  # plain data for the CLI and the GUI
    return {r.rule: r for r in recs}


def clean_tables() -> dict:
    """The basic trace with every problem removed."""
    t = at.basic_tables()
    t["dma"]["bytes"] = [128 * 4096, 128 * 4096, 128 * 8192]
    t["flows"] = {"src_id": [3, 6], "dst_id": [6, 8], "kind": ["data", "data"]}
    t["counters"]["value"] = [100.0, 100.0, 100.0, 100.0]
    t["collectives"]["arrive_ns"] = [6000, 6000]
    t["collectives"]["wait_ns"] = [0, 0]
    return t


def test_clean_trace_gets_no_recommendations(tmp_path):
    assert _rules(tmp_path / "clean.trnx", clean_tables()) == {}


def test_basic_trace_problems_fire_with_evidence_and_links(tmp_path):
    found = _rules(tmp_path / "basic.trnx")
    # the critical path: kernel 103 (chip 1, [0, 5000)), a 1000 ns gap, collective 1 ([6000, 8000))
    small = found["small_dma_transfers"]
    assert small.evidence["small_transfers"] == 2 and small.evidence["transfers"] == 3
    assert small.evidence["small_transfer_time_ns"] == 400  # 200 + 200 ns of small transfers
    # in flight [300, 600) of kernel 100's 2200 ns; kernel 103 (same op, no detail) is taken to match
    assert small.impact_ns == round(5000 * 300 / 2200) and small.evidence["critical_path_ns"] == small.impact_ns
    assert small.links[0].node == "kernel:100" and small.links[0].track_ids == (at.T_K00,)
    wait = found["tensor_waiting_on_dma"]
    # LoadStationary 2 could start at 1000 (kernel running, Tensor row free since 100) but DMA 20 ended at 400
    assert wait.evidence["wait_ns"] == 300 and wait.links[-1].node == "instruction:2"
    assert wait.impact_ns == round(5000 * 300 / 2200)
    thr = found["throttling"]
    assert thr.evidence["throttled_time_ns"] == 2000
    assert thr.evidence["capacity_lost_ns"] == 1000 * 50 // 100 + 1000 * 20 // 100
    assert thr.impact_ns == 0  # the throttled core (chip 0 core 0) is not on the critical path
    assert (thr.links[0].t0, thr.links[0].t1, thr.links[0].track_ids) == (0, 1000, (at.T_THR00,))
    st = found["collective_straggler"]
    assert st.evidence["chip"] == 1 and st.evidence["wait_caused_ns"] == 1000
    assert st.impact_ns == 1000 and st.impact_percent == pytest.approx(10.0)  # chip 1 arrived 1000 ns after chip 0
    # first the late chip's own work (chip 1's kernel row and its CC row, until it arrived), then the collective
    assert st.links[0].track_ids == (at.T_K10, at.T_CC1) and (st.links[0].t0, st.links[0].t1) == (0, 6000)
    assert st.links[1].node == "collective:1" and st.links[1].track_ids == (at.T_CC0, at.T_CC1)
    assert "hbm_bound_low_intensity" not in found and "mxfp8_for_bf16_matmul" not in found
    recs = recommend(open_trace(tmp_path / "basic.trnx"))
    assert [r.rule for r in recs][0] == "collective_straggler"  # the most wall-clock time on the critical path
    impacts = [r.impact_ns for r in recs]
    assert impacts == sorted(impacts, reverse=True) and all(0 <= i <= 10_000 for i in impacts)


@pytest.mark.parametrize("shuffle", ["flows", "instructions", "both", "compiled"])
def test_tensor_waits_do_not_depend_on_row_or_flow_order(tmp_path, shuffle, monkeypatch):
    from explorer.model.analysis import dma_waits

    t = at.basic_tables()
    # flows in destination order (as writers store them): a second DMA flow into instruction 2 and one into 4
    t["flows"] = {"src_id": [20, 21, 2, 22, 3, 6], "dst_id": [2, 2, 4, 4, 6, 8],
                  "kind": ["semaphore", "semaphore", "data", "semaphore", "data", "data"]}
    ordered = _rules(tmp_path / "a.trnx", t)["tensor_waiting_on_dma"]
    if shuffle == "compiled":  # the compiled passes (big traces) on the same flows, tracks split over batches
        monkeypatch.setattr(dma_waits, "COMPILED_MIN_FLOWS", 0)
        other = recommend(open_trace(at.write(tmp_path / "batches.trnx", t, batch_rows=2)))
        other = {r.rule: r for r in other}["tensor_waiting_on_dma"]
        assert other.evidence == ordered.evidence and other.links == ordered.links
    if shuffle in ("flows", "both"):  # destinations out of order: gathered, then sorted once
        t["flows"] = {c: v[::-1] for c, v in t["flows"].items()}
    if shuffle in ("instructions", "both"):  # tracks interleaved: the previous row is not the row before
        order = [8, 2, 5, 0, 3, 6, 1, 4, 7]
        t["instructions"] = {c: [v[i] for i in order] for c, v in t["instructions"].items()}
    other = _rules(tmp_path / "b.trnx", t)["tensor_waiting_on_dma"]
    assert other.evidence == ordered.evidence and other.links == ordered.links
    # 2: Tensor row free from 100, DMA 21 ends at 600 (after DMA 20 at 400): it binds, 500 ns;
    # 4: TensorMatrix free from 1050, DMA 22 ended at 500: no wait
    assert ordered.evidence["wait_ns"] == 500 and ordered.evidence["instructions_waiting"] == 1


def test_hbm_bound_low_intensity(tmp_path):
    t = clean_tables()
    t["kernels"]["hbm_read_bytes"][3] = 20_000_000  # fp8 kernel: 4.2 us of HBM time in 5 us, AI 0.2
    rec = _rules(tmp_path / "hbm.trnx", t)["hbm_bound_low_intensity"]
    assert rec.evidence["kernels"] == 1 and rec.links[0].node == "kernel:103"
    assert rec.evidence["mean_arithmetic_intensity"] == pytest.approx(4_000_000 / 20_500_000)
    assert rec.impact_ns == 5000


def test_mxfp8_for_compute_bound_bf16(tmp_path):
    t = clean_tables()
    t["kernels"]["dtype"][2] = "bf16"
    t["kernels"]["flops"][2] = 250_000_000  # 3165 ns at 79 TFLOPS in a 4000 ns kernel: compute bound
    rec = _rules(tmp_path / "mx.trnx", t)["mxfp8_for_bf16_matmul"]
    # kernel 102's tensor time shrinks by 1 - 79/315; kernels 100 and 101 would gain < 10% and are left out
    tc = 250_000_000 / 79e12 * 1e9
    assert rec.evidence["estimated_saving_ns"] == int(tc * (1 - 79 / 315))
    assert rec.evidence["kernels"] == 1
    assert rec.links[0].node == "kernel:102"
    assert rec.impact_ns == 0  # chip 1's kernel 103 ends later: kernel 102 is off the critical path
    t["kernels"]["dur_ns"][3] = 1000  # now kernel 102 is the last to finish before the collective
    on_path = _rules(tmp_path / "mx-path.trnx", t)["mxfp8_for_bf16_matmul"]
    assert on_path.impact_ns == round(tc * (1 - 79 / 315))
    # the same kernel in MXFP8 already: nothing to recommend
    t["kernels"]["dtype"][2] = "mxfp8"
    assert "mxfp8_for_bf16_matmul" not in _rules(tmp_path / "mx2.trnx", t)


def test_one_straggler_rank(tmp_path):
    t = at.collective_tables("all_reduce", [1000, 1100, 1200, 5000], [1_000_000] * 4, "all_reduce")
    found = _rules(tmp_path / "strag.trnx", t)
    rec = found["collective_straggler"]
    assert rec.evidence["chip"] == 3 and rec.evidence["wait_caused_ns"] == 3 * 3800
    assert rec.impact_ns == 3800  # wall-clock: the collective started 3800 ns after the next-to-last rank arrived
    assert rec.links[1].t0 == 1000 and rec.links[1].t1 == 6000
    assert "alltoall_routing_skew" not in found


def test_skewed_expert_parallel_all_to_all(tmp_path):
    t = at.collective_tables("all_to_all", [1000, 2500, 3500, 4000], [1_000_000, 2_000_000, 1_000_000, 4_000_000],
                             "moe_dispatch")
    found = _rules(tmp_path / "a2a.trnx", t)
    rec = found["alltoall_routing_skew"]
    assert rec.evidence["expert_parallel"] is True and rec.evidence["max_bytes_over_mean"] == pytest.approx(2.0)
    assert rec.evidence["wait_ns"] == 3000 + 1500 + 500
    # the last rank came 1250 ns after the mean arrival, and the transfer took 2x the mean bytes' time
    assert rec.impact_ns == 1250 + 500
    assert "expert-parallel" in rec.title
    assert "collective_straggler" not in found
    balanced = at.collective_tables("all_to_all", [4000] * 4, [1_000_000] * 4, "moe_dispatch")
    assert _rules(tmp_path / "even.trnx", balanced) == {}


def test_every_rule_is_exercised():
    assert set(RULES) == {
        "hbm_bound_low_intensity", "small_dma_transfers", "tensor_waiting_on_dma", "throttling",
        "collective_straggler", "alltoall_routing_skew", "mxfp8_for_bf16_matmul",
    }


def test_hierarchy_can_be_shared(tmp_path):
    t = open_trace(at.write(tmp_path / "b.trnx"))
    h = Hierarchy(t)
    assert [r.rule for r in recommend(t, hierarchy=h)] == [r.rule for r in recommend(t)]


def test_mild_throttling_is_not_worth_a_recommendation(tmp_path):
    t = clean_tables()
    t["counters"]["value"] = [99.0, 99.0, 99.0, 100.0]  # throttled all along, but only 1% of capacity lost
    assert "throttling" not in _rules(tmp_path / "mild.trnx", t)
    t["counters"]["value"] = [50.0, 100.0, 100.0, 100.0]  # half rate for the first 1000 ns: 5% lost
    rec = _rules(tmp_path / "burst.trnx", t)["throttling"]
    assert rec.evidence["capacity_lost_ns"] == 500 and rec.impact_ns == 0  # chip 1 set the pace, not core 0
    t["kernels"]["dur_ns"][2] = t["kernels"]["dur_ns"][3] = 1000  # now chip 0 core 0's kernels are the path
    rec = _rules(tmp_path / "burst-on-path.trnx", t)["throttling"]
    assert rec.impact_ns == 500 and rec.impact_percent == pytest.approx(5.0)


def test_every_evidence_item_has_a_unit_and_reads_with_it(tmp_path):
    from explorer.model.analysis.recommendations import EVIDENCE_UNITS

    found = _rules(tmp_path / "basic.trnx")
    t = clean_tables()
    t["kernels"]["hbm_read_bytes"][3] = 20_000_000
    t["kernels"]["dtype"][2], t["kernels"]["flops"][2] = "bf16", 250_000_000
    found.update(_rules(tmp_path / "more.trnx", t))
    found.update(_rules(tmp_path / "a2a.trnx", at.collective_tables(
        "all_to_all", [1000, 2500, 3500, 4000], [1_000_000, 2_000_000, 1_000_000, 4_000_000], "moe_dispatch")))
    assert set(found) == set(RULES)
    for rec in found.values():
        assert set(rec.evidence) <= set(EVIDENCE_UNITS), rec.rule
        assert rec.to_dict()["evidence_units"] == {k: EVIDENCE_UNITS[k] for k in rec.evidence}
    rows = dict(found["small_dma_transfers"].evidence_rows())
    assert rows["small transfer time"] == "400 ns" and rows["small"] == "66.67 %"
    assert rows["mean small bytes per partition"].endswith(" B")
    rows = dict(found["hbm_bound_low_intensity"].evidence_rows())
    assert rows["achieved hbm"].endswith("B/s") and rows["mean arithmetic intensity"].endswith("FLOP/B")
    assert dict(found["collective_straggler"].evidence_rows())["chip"] == "1"


def test_each_rule_says_where_its_evidence_is_as_bands(tmp_path):
    found = _rules(tmp_path / "basic.trnx")

    def bands(rule):
        b = found[rule].bands
        return list(zip(b.track_id.tolist(), b.t0.tolist(), b.t1.tolist()))

    assert bands("small_dma_transfers") == [(at.T_Q1, 300, 500), (at.T_Q0, 400, 600)]
    assert bands("tensor_waiting_on_dma") == [(at.T_TENSOR, 700, 1000)]  # instruction 2 waited 300 ns
    assert bands("throttling") == [(at.T_THR00, 0, 1000), (at.T_THR00, 9000, 10_000)]
    assert bands("collective_straggler") == [(at.T_CC1, 5000, 6000)]  # chip 1's lead over chip 0
    assert "bands" not in found["throttling"].to_dict()  # plain data only; bands are for the timeline
