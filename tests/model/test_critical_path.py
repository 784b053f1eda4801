"""The kernel/collective-level critical path: what set the trace's end, in wall-clock segments."""

from __future__ import annotations

from pathlib import Path

from model import analysis_traces as at

from explorer.model.analysis.critical_path import critical_path
from explorer.model.analysis.recommendations import recommend
from simcore.trace import open_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def test_basic_trace_path_runs_through_the_last_chip_into_the_collective(tmp_path):
    cp = critical_path(open_trace(at.write(tmp_path / "b.trnx")))
    seg = cp.segments
    # kernel 103 on chip 1 ends last (5000) before the all-reduce [6000, 8000); the 1000 ns between is a gap
    assert seg[["kind", "ref", "start_ns", "end_ns"]].values.tolist() == [
        ["kernel", 103, 0, 5000], ["gap", -1, 5000, 6000], ["collective", 1, 6000, 8000]]
    assert cp.length_ns == 8000 and cp.time_of("gap") == 1000 and cp.kernel_ids().tolist() == [103]


def test_a_straggler_chip_carries_the_path_and_no_impact_exceeds_the_trace():
    t = open_trace(SAMPLES / "llama3.1-70b-tp16-straggler.trnx")
    cp = critical_path(t)
    kernels = cp.segments[cp.segments["kind"] == "kernel"]
    assert set(kernels["chip"]) == {5}  # the slow chip sets every step of the way
    assert cp.length_ns <= t.duration_ns and cp.time_of("collective") > 0
    recs = recommend(t)
    assert recs and all(0 <= r.impact_ns <= t.duration_ns for r in recs)
    by_rule = {r.rule: r for r in recs}
    # kernels' impacts are path time in kernels (chip 5's, the only chip on it), never the 16 chips' sum
    for rule in ("hbm_bound_low_intensity", "small_dma_transfers", "tensor_waiting_on_dma"):
        if rule in by_rule:
            assert by_rule[rule].impact_ns <= cp.time_of("kernel")
    assert all(r.impact_percent <= 100 for r in recs)  # wall-clock shares of the trace, not summed core time
    straggler = by_rule["collective_straggler"]
    assert straggler.evidence["chip"] == 5
    assert straggler.impact_ns == straggler.evidence["critical_path_ns"] < straggler.evidence["wait_caused_ns"]


def test_no_kernels_no_path(tmp_path):
    tables = at.basic_tables()
    for name in ("kernels", "collectives"):
        tables[name] = {c: [] for c in tables[name]}
    tables["instructions"]["kernel_id"] = [-1] * len(tables["instructions"]["kernel_id"])
    tables["dma"]["kernel_id"] = [-1] * len(tables["dma"]["kernel_id"])
    cp = critical_path(open_trace(at.write(tmp_path / "none.trnx", tables)))
    assert cp.segments.empty and cp.length_ns == 0
