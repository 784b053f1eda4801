"""TraceIndex: per-track sorted arrays, visible slices, hit tests, ids, colours."""

from __future__ import annotations


import numpy as np
import pytest

from model.timeline_traces import DMA_ID0, write_timeline_trace

from explorer.model.timeline.trace_index import EventRef, TraceIndex
from simcore.trace import open_trace


@pytest.fixture(scope="module", params=[False, True], ids=["grouped", "interleaved"])
def index(request, tmp_path_factory):
    path = write_timeline_trace(tmp_path_factory.mktemp("t") / "t.trnx", interleave=request.param)
    return TraceIndex.build(open_trace(path))


def test_tracks_and_lanes(index):
    assert index.span == (0, 100_000)
    assert {tid: lane.count for tid, lane in index.lanes.items()} == {0: 100, 1: 1000, 2: 10, 3: 2, 4: 2, 5: 2, 6: 2}
    assert set(index.counters) == {7, 8, 9}
    assert index.lanes[1].track.name == "Vector" and index.lanes[1].disjoint
    assert index.lanes[1].coverage.total == 20_000


def test_visible_slice_is_exactly_the_overlapping_intervals(index):
    lane = index.lanes[0]  # [k*1000, k*1000 + 800)
    assert lane.visible(0, 1000) == (0, 1)
    assert lane.visible(799, 1001) == (0, 2)
    assert lane.visible(800, 1000) == (1, 1)  # the gap between two matmuls
    assert lane.visible(-500, 10**9) == (0, 100)


def test_hit_test_and_refs_round_trip(index):
    lane = index.lanes[1]
    k = lane.at(1210.0)  # inside instruction 12 of the Vector row
    ref = index.ref(lane, k)
    assert ref.table == "instructions"
    assert index.interval(ref) == (1200, 1220)
    assert index.locate(ref) == (lane, 12)
    assert lane.at(1250.0) is None
    assert lane.at(1250.0, slack_ns=40) == 12


def test_event_ids(index):
    ref = index.find_id(DMA_ID0 + 3)
    assert ref == EventRef("dma", 3)
    assert index.interval(ref) == (30_000, 31_000)
    assert index.event_name(ref) == "DMA hbm\u2192sbuf"
    assert index.find_id(999_999) is None
    mm = index.find_id(50)
    assert index.event_name(mm) == "Transpose"


def test_colours_by_opcode_kernel_op_layer(index):
    by_op = index.colours("opcode")
    assert {"MultiplyMoving", "Transpose", "TensorTensor", "DMA hbm\u2192sbuf", "matmul_qkv", "softmax", "all_reduce"} == set(by_op.names)
    lane = index.lanes[1]
    codes = by_op.codes["instructions"][lane.lo:lane.hi]
    assert {by_op.names[c] for c in codes} == {"TensorTensor"}
    for mode, want in (("kernel", {"matmul_qkv", "softmax"}), ("op", {"attention.qkv_proj", "attention.softmax"}),
                       ("layer", {"layer 0", "layer 1"})):
        cc = index.colours(mode)
        codes = cc.codes["instructions"][lane.lo:lane.hi]
        assert {cc.names[c] for c in codes} == want
        first, last = cc.names[codes[0]], cc.names[codes[-1]]
        assert first != last  # the row moves from the first kernel to the second at 50 us
    total = index.category_time("kernel")
    names = index.colours("kernel").names
    assert total[names.index("matmul_qkv")] == 50 * 20 * 10 + 50 * 800 + 50_000 + 5 * 1000
    share = index.category_share("kernel")  # the legend's percentages: each category's part of all event time
    assert share[names.index("matmul_qkv")] == total[names.index("matmul_qkv")] / total.sum()
    assert abs(share.sum() - 1.0) < 1e-12


def test_counter_peak_reference(index):
    assert index.counter_reference(7) == 4900.0
    assert index.counter_reference(9) is None  # no SBUF capacity in this hardware spec
    assert index.share_of_peak(7, 980.0) == (0.2, 4900.0)
    assert index.share_of_peak(9, 1.0) is None
