"""Area selection, utilisation, collective waits, search, event details, row tree:
the timeline's analyses against the hand-built trace's known answers."""

from __future__ import annotations


import numpy as np
import pytest

from model.timeline_traces import DMA_ID0, MM_FLOPS, write_timeline_trace

from explorer.model.timeline.collective_waits import collective_waits
from explorer.model.timeline.event_details import event_details
from explorer.model.timeline.search import search
from explorer.model.timeline.selection import area_scope, summarize_area
from explorer.model.timeline.trace_index import EventRef, TraceIndex
from explorer.model.timeline.track_tree import TrackTree
from explorer.model.timeline.utilisation import Utilisation
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return TraceIndex.build(open_trace(write_timeline_trace(tmp_path_factory.mktemp("a") / "t.trnx")))


def test_area_selection_summary(index):
    s = summarize_area(index, area_scope((0, 1, 2, 4, 5, 6), 0, 50_000))
    assert s.busy_ns[1] == 10_000 and s.busy_percent[1] == pytest.approx(20.0)
    assert s.busy_ns[0] == 40_000 and s.busy_percent[0] == pytest.approx(80.0)
    assert s.opcode_counts == {"TensorTensor": 500, "MultiplyMoving": 50}  # the Transpose starts at 50 us
    assert s.instructions == 550
    assert s.flops == 50 * MM_FLOPS + 500 * 128 * 64
    assert s.dma_bytes == 5 * 65536 and s.dma_transfers == 5
    assert s.dma_gbps == pytest.approx(5 * 65536 / 50_000)
    assert s.hbm_read_gbps == pytest.approx(100.0) and s.hbm_write_gbps == pytest.approx(50.0)
    # collective 0 waits: 10 us (rank 0) + 8 us (rank 1) + 0 (rank 2); collective 1 is outside
    assert s.collective_wait_ns == 18_000 and s.collectives == 3


def test_partial_overlap_is_prorated(index):
    s = summarize_area(index, area_scope((2,), 500, 10_500))  # half of DMA 0 and half of DMA 1
    assert s.dma_bytes == pytest.approx(65536.0)
    s = summarize_area(index, area_scope((7,), 0, 100_000))  # a counter row: averages only
    assert s.hbm_read_gbps == pytest.approx(200.0) and s.instructions == 0


def test_utilisation_totals_and_series(index):
    u = Utilisation(index)
    assert u.engines == ["TensorMatrix", "Vector", "DMA", "CC"]
    tot = u.totals(0, 100_000)
    assert tot["TensorMatrix"] == pytest.approx(80.0)
    assert tot["Vector"] == pytest.approx(20.0)
    assert tot["DMA"] == pytest.approx(10.0)
    series = u.series(0, 100_000, 10)
    np.testing.assert_allclose(series.percent["Vector"], 20.0)
    np.testing.assert_allclose(series.percent["DMA"], 10.0)
    # CC rows are busy (wait + transfer) from arrival to end: rank 0 of #0 is 15 us of 100
    assert Utilisation(index, chips={0}).totals(0, 100_000)["CC"] == pytest.approx((15_000 + 12_000) / 1000)


def test_collective_waits_matrix_and_slowest_rank(index):
    w = collective_waits(index, 0, 100_000)
    assert w.rank_tracks == [4, 5, 6]
    assert w.wait_ns.shape == (3, 2)
    np.testing.assert_allclose(w.wait_ns[:, 0], [10_000, 8_000, 0])
    np.testing.assert_allclose(w.wait_ns[:, 1], [10_000, 0, 9_000])
    np.testing.assert_allclose(w.transfer_ns[:, 0], 5_000)
    assert list(w.slowest_rank) == [2, 1]
    assert w.most_often_slowest() == (1, 1)  # ranks 1 and 2 were last once each: the first of them
    assert w.total_wait_ns == 37_000
    assert w.labels[0].startswith("#0 all_reduce 8 MiB")
    ref = w.ref(2, 0)
    assert index.interval(ref) == (20_000, 25_000)
    only_second = collective_waits(index, 40_000, 100_000)
    assert list(only_second.collective_ids) == [1]


def test_search_and_stepping_in_time_order(index):
    hits = search(index, "multiply")
    assert hits.count == 99
    ref, rank = hits.step(None)
    assert rank == 0 and index.interval(ref) == (0, 800)
    ref2, rank2 = hits.step((0, 0))
    assert rank2 == 1 and index.interval(ref2) == (1000, 1800)
    prev, prank = hits.step((0, 0), -1)  # before the first: wraps to the last
    assert prank == 98 and index.interval(prev) == (99_000, 99_800)
    kern = search(index, "softmax")  # kernel name (and op name): the kernel, not what runs inside it
    assert kern.count == 1 and kern.step(None)[0] == EventRef("kernels", 1)
    assert search(index, "layer 0").count == 1  # kernels by layer
    by_id = search(index, f"#{DMA_ID0 + 2}")
    assert by_id.count == 1 and by_id.step(None)[0] == EventRef("dma", 2)
    assert search(index, "no-such-opcode").count == 0


def test_event_details_and_dependencies(index):
    mm = index.find_id(1)  # MultiplyMoving at 1 us, unblocked by DMA 0 (ends at 1 us)
    d = event_details(index, mm)
    assert d.title == "MultiplyMoving"
    assert d.field("start") == "1 us" and d.field("duration") == "800 ns"
    assert d.field("kernel") == "matmul_qkv" and d.field("op") == "attention.qkv_proj" and d.field("layer") == "layer 0"
    assert d.field("dtype") == "bf16" and "16.78 MFLOP" in d.field("flops")
    assert [(x.direction, x.kind, x.ref) for x in d.dependencies] == [("waits for", "semaphore", EventRef("dma", 0))]
    dma = event_details(index, EventRef("dma", 0))
    assert dma.field("bytes").startswith("64 KiB") and dma.field("source") == "hbm"
    assert dma.dependencies[0].direction == "unblocks" and dma.dependencies[0].ref == mm
    coll = event_details(index, w_ref := EventRef("collectives", 0))
    assert coll.field("wait") == "10 us" and coll.field("rank") == "0 of 3"
    assert index.interval(w_ref) == (10_000, 25_000)


def test_row_tree_groups_folds_pins_and_moves(index):
    tree = TrackTree(index, counters=False)
    labels = [(r.node.depth, r.node.label) for r in tree.rows()]
    assert labels[:7] == [(0, "Chip 0"), (1, "CC"), (1, "Core 0"), (2, "Kernels"), (2, "TensorMatrix"),
                          (2, "Vector"), (2, "qSyncIO0")]
    tree.toggle("chip:0/core:0")
    assert "TensorMatrix" not in [r.node.label for r in tree.rows()]
    tree.toggle("chip:0/core:0")
    tree.pin("track:1")
    assert [r.key for r in tree.pinned_rows()] == ["track:1"] and "track:1" not in [r.key for r in tree.rows()]
    assert tree.move("track:2", "track:3")  # qSyncIO0 before Kernels, inside the core
    assert [r.node.label for r in tree.rows()][3:6] == ["qSyncIO0", "Kernels", "TensorMatrix"]
    assert not tree.move("track:2", "chip:1")  # rows never leave their group
    counters = TrackTree(index, counters=True)
    assert [r.node.label for r in counters.rows()] == ["Chip 0", "HBM Read Bandwidth", "HBM Write Bandwidth",
                                                     "Core 0", "State Buffer Usage"]
