"""The operator tree (objectName `operators`) driven with real keys and clicks.

The tiny-llm trace (tests/model/timeline_traces.py): tiny-llm -> layer 0 ->
attention.qkv_proj -> matmul_qkv (kernel 0: 50 MultiplyMoving, 500 TensorTensor,
5 DMA transfers) and layer 1 -> attention.softmax -> softmax (kernel 1).
"""

from __future__ import annotations


import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from ui.analysis_helpers import SAMPLES, click_row, open_ready, ready, row_of
from explorer.model.timeline.trace_index import EventRef
from explorer.ui.operators_view import CHUNK, COLUMN_KEYS


def test_drill_from_a_layer_down_to_an_instruction_and_back_up(window, qtbot):
    p = ready(window, qtbot)
    ops = window.findChild(QWidget, "operators")
    assert ops is p.operators
    view, model = ops.view, ops.model
    layer0 = row_of(model, "op:1")
    assert model.data(layer0) == "layer 0" and model.data(layer0.siblingAtColumn(COLUMN_KEYS.index("dur_ns"))) == "50 us"
    click_row(view, layer0)
    assert ops.current_node() == "op:1"
    seen = []
    for _ in range(3):  # layer -> op -> kernel -> first instruction
        QTest.keyClick(view, Qt.Key_Right)  # expand
        QTest.keyClick(view, Qt.Key_Down)  # first child
        seen.append(ops.current_node())
    assert seen == ["op:2", "kernel:0", "instruction:0"]
    assert p.session.node == "instruction:0"
    # the details follow the tree: the instruction's kernel, its dependencies
    assert p.kernel_details.kernel_id == 0
    qtbot.waitUntil(lambda: "matmul_qkv" in p.kernel_details.header.text(), timeout=30_000)
    assert p.dependencies.node == "instruction:0"
    # back up with Left: from a leaf Left goes to the parent, from an expanded node it collapses
    QTest.keyClick(view, Qt.Key_Left)
    assert ops.current_node() == "kernel:0"
    QTest.keyClick(view, Qt.Key_Left)  # collapse the kernel
    QTest.keyClick(view, Qt.Key_Left)  # to its op
    QTest.keyClick(view, Qt.Key_Left)  # collapse the op
    QTest.keyClick(view, Qt.Key_Left)  # to the layer
    assert ops.current_node() == "op:1"
    assert not view.isExpanded(row_of(model, "op:2"))


def test_a_kernel_with_many_events_is_fetched_in_chunks(qtbot):
    w, p = open_ready(qtbot, SAMPLES / "gemm-4096-bf16.trnx")
    view, model = p.operators.view, p.operators.model
    total = 14_720 + 2_176  # the GEMM kernel's instructions and DMA transfers
    assert p.operators.select_node("kernel:0")  # as a click on the timeline's Kernels row does
    kernel = view.currentIndex()
    assert model.canFetchMore(kernel) and model.rowCount(kernel) == 0  # nothing loaded before it is opened
    QTest.keyClick(view, Qt.Key_Right)
    qtbot.waitUntil(lambda: model.rowCount(kernel) > 0)
    first = model.rowCount(kernel)
    assert first % CHUNK == 0 and first < total and model.canFetchMore(kernel)
    QTest.keyClick(view, Qt.Key_Down)
    QTest.keyClick(view, Qt.Key_End)  # scrolling to the end asks for the next chunk
    qtbot.waitUntil(lambda: model.rowCount(kernel) > first)
    assert model.rowCount(kernel) < total


def test_double_click_zooms_the_timeline_to_the_row_and_highlights_it(window, qtbot):
    p = ready(window, qtbot)
    view, model = p.operators.view, p.operators.model
    tl = window.timeline
    assert p.operators.select_node("kernel:1")  # softmax, [50 us, 100 us)
    click_row(view, view.currentIndex(), double=True)
    vp = tl.viewport
    assert vp.t0 <= 50_000 and vp.t1 >= 100_000 and vp.width < 60_000
    assert tl.selected == EventRef("kernels", 1)
    # an instruction: MultiplyMoving id 2, [2000, 2800)
    assert p.operators.select_node("instruction:2")
    click_row(view, view.currentIndex(), double=True)
    assert vp.t0 <= 2000 and vp.t1 >= 2800 and vp.width < 1500
    assert tl.selected == window.loaded.index.find_id(2)
    # an op has no single event: everything under it is area-selected, every row of the cores it ran on
    click_row(view, model.index_for("op:3"), double=True)  # layer 1
    assert tl.area is not None and tl.area.track_ids == (0, 1, 2, 3) and (tl.area.t0, tl.area.t1) == (50_000, 100_000)
    assert vp.t0 <= 50_000 and vp.t1 >= 100_000
    summary = window.selection_summary.summary  # the layer's instructions and bytes, not just its kernel row
    assert summary.instructions == 50 + 500 and summary.dma_transfers == 5 and summary.dma_bytes == 5 * 65536


def test_a_timeline_click_selects_the_row_in_the_tree(window, qtbot):
    p = ready(window, qtbot)
    tl, canvas = window.timeline, window.timeline.canvas
    ref = window.loaded.index.find_id(1003)  # TensorTensor #903 on Vector, at 90.3 us: softmax (kernel 1)
    s, e = window.loaded.index.interval(ref)
    assert (s, e) == (90_300, 90_320)
    tl.zoom_to(s - 200, e + 200)
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, canvas.point_for(ref))
    assert tl.selected == ref
    ops = p.operators
    qtbot.waitUntil(lambda: ops.current_node() == "instruction:1003", timeout=30_000)  # its kernel's rows read off the GUI thread
    idx = ops.view.currentIndex()
    assert ops.model.data(idx.parent(), Qt.UserRole) == "kernel:1"
    assert ops.view.isExpanded(idx.parent()) and ops.view.isExpanded(idx.parent().parent())
    # a kernel on the Kernels row selects the kernel's row
    kref = EventRef("kernels", 0)
    tl.zoom_to(0, 100_000)
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, canvas.point_for(kref))
    qtbot.waitUntil(lambda: ops.current_node() == "kernel:0")  # in a pass after the timeline's repaint


def test_a_slow_answer_for_a_left_selection_does_not_overwrite_the_newer_one(window, qtbot, monkeypatch):
    """Jump to an event of kernel 1 and, while its answers are still being computed, to kernel 0:
    the tree, the kernel details and the Details panel end on kernel 0, whatever comes back late."""
    import threading

    from explorer.model.analysis import kernel_details as KD

    p = ready(window, qtbot)
    tl, ops, kd = window.timeline, p.operators, p.kernel_details
    h = p.session.analysis.hierarchy
    real_children, real_details = type(h).children, KD.kernel_details
    rows_gate, details_gate, details_started = threading.Event(), threading.Event(), threading.Event()

    def held_children(self, node):
        if node == "kernel:1":
            rows_gate.wait(10)
        return real_children(self, node)

    def held_details(trace, kernel_id, hierarchy=None):
        if kernel_id == 1:
            details_started.set()
            details_gate.wait(10)
        return real_details(trace, kernel_id, hierarchy)

    monkeypatch.setattr(type(h), "children", held_children)
    monkeypatch.setattr("explorer.ui.kernel_details_view.kernel_details", held_details)
    kernel0 = EventRef("kernels", 0)
    # 1. the tree: kernel 1's rows (never read yet) come back after the jump to kernel 0
    tl.highlight(window.loaded.index.find_id(1003))  # TensorTensor #903 of kernel 1 (softmax)
    assert kd.kernel_id == 1 and "computing" in kd.header.text()
    assert window.details.title.text() == "TensorTensor"  # the event's own fields show at once
    qtbot.waitUntil(lambda: ops._rows.pending is not None)  # the tree has asked for kernel 1's rows
    qtbot.wait(50)
    assert ops.current_node() != "instruction:1003"  # and waits for them
    tl.highlight(kernel0)
    qtbot.waitUntil(lambda: ops.current_node() == "kernel:0")
    rows_gate.set()
    qtbot.waitUntil(lambda: kd.details is not None, timeout=30_000)
    qtbot.wait(100)
    assert ops.current_node() == "kernel:0" and int(kd.details.kernel["kernel_id"]) == 0
    # 2. the kernel details: kernel 1's are being computed when the jump to kernel 0 comes
    tl.highlight(window.loaded.index.find_id(1003))
    qtbot.waitUntil(details_started.is_set, timeout=30_000)
    tl.highlight(kernel0)
    details_gate.set()
    qtbot.waitUntil(lambda: kd.details is not None, timeout=30_000)
    qtbot.wait(100)  # kernel 1's details came back by now, and were dropped
    assert tl.selected == kernel0 and ops.current_node() == "kernel:0"
    assert kd.kernel_id == 0 and int(kd.details.kernel["kernel_id"]) == 0 and "matmul_qkv" in kd.header.text()
    assert window.details.title.text() == "matmul_qkv"


def test_sort_by_a_header_click_and_filter(window, qtbot):
    p = ready(window, qtbot)
    ops = p.operators
    view, model = ops.view, ops.model
    assert ops.select_node("kernel:0")
    kernel = view.currentIndex()
    QTest.keyClick(view, Qt.Key_Right)
    qtbot.waitUntil(lambda: model.rowCount(kernel) > 0)
    header = view.header()
    col = COLUMN_KEYS.index("dur_ns")
    x = header.sectionViewportPosition(col) + header.sectionSize(col) // 2
    QTest.mouseClick(header.viewport(), Qt.LeftButton, Qt.NoModifier, header.rect().center().__class__(x, 5))
    first = [model.index(r, 0, kernel).internalPointer().values["dur_ns"] for r in range(model.rowCount(kernel))]
    order = "asc" if header.sortIndicatorOrder() == Qt.AscendingOrder else "desc"
    assert first == sorted(first, reverse=order == "desc")
    # the sort holds over the whole child table, not only the loaded chunk
    durs = p.session.analysis.hierarchy.children("kernel:0")["dur_ns"].to_numpy()
    assert first[0] == (durs.min() if order == "asc" else durs.max())
    assert view.isExpanded(model.index_for("kernel:0"))  # expansion survives the sort
    QTest.keyClicks(ops.filter, "softmax")
    QTest.keyClick(ops.filter, Qt.Key_Return)
    top = model.index(0, 0)
    names = [model.data(model.index(r, 0, top)) for r in range(model.rowCount(top))]
    assert names == ["layer 1"] and ops.status.text() == "2 match"  # the op and its kernel
    assert view.isExpanded(model.index_for("op:4"))  # the match is revealed
    ops.filter.clear()
    QTest.keyClick(ops.filter, Qt.Key_Return)
    assert model.rowCount(model.index(0, 0)) == 2


def test_header_tooltips_explain_the_columns(window, qtbot):
    p = ready(window, qtbot)
    model = p.operators.model
    tip = model.headerData(COLUMN_KEYS.index("arithmetic_intensity"), Qt.Horizontal, Qt.ToolTipRole)
    assert "flops / hbm_bytes" in tip
    k = model.index_for("kernel:0")
    row = {key: model.data(k.siblingAtColumn(i)) for i, key in enumerate(COLUMN_KEYS)}
    assert row["name"] == "matmul_qkv" and row["level"] == "kernel" and row["where"] == "0.0"
    assert row["flops"] == "838.9 MFLOP" and row["hbm_bytes"] == "320 KiB" and row["share_percent"] == "50 %"
    assert row["tflops"] == "16.8" and row["arithmetic_intensity"] == "2,560 FLOP/B" and row["bound"] == "compute"
    assert np.isclose(838_860_800 / 327_680, 2560)
    assert pytest.approx(838_860_800 / 50_000 / 1e3, rel=1e-3) == 16.777


def test_mfu_both_ways_mbu_and_roofline_per_layer_and_op(qtbot):
    """An MXFP8 GEMM: MFU against the MXFP8 peak beside the BF16-normalised figure, per row."""
    w, p = open_ready(qtbot, SAMPLES / "gemm-4096-mxfp8.trnx")
    view, model = p.operators.view, p.operators.model
    assert p.operators.select_node("kernel:0")
    kernel = view.currentIndex()
    cells = {key: model.data(kernel.siblingAtColumn(i)) for i, key in enumerate(COLUMN_KEYS)}
    k = p.session.analysis.hierarchy.kernels.iloc[0]
    assert cells["mfu_percent"] == f"{k['mfu_percent']:.1f} %" and 70 < k["mfu_percent"] <= 100
    assert cells["mfu_bf16_percent"] == f"{k['mfu_bf16_percent']:.1f} %"
    assert cells["roofline_percent"] == f"{k['roofline_percent']:.1f} %" and cells["mbu_percent"].endswith(" %")
    op = row_of(model, "op:2")  # the gemm op, one level up
    assert model.data(op.siblingAtColumn(COLUMN_KEYS.index("mfu_percent"))) == cells["mfu_percent"]
    tip = model.headerData(COLUMN_KEYS.index("mfu_percent"), Qt.Horizontal, Qt.ToolTipRole)
    assert "dtype" in tip and "peak" in tip


def test_a_single_click_on_a_row_highlights_it_on_the_timeline_without_zooming(window, qtbot):
    p = ready(window, qtbot)
    view, model = p.operators.view, p.operators.model
    tl = window.timeline
    tl.zoom_to(0, 100_000)
    before = (tl.viewport.t0, tl.viewport.t1)
    click_row(view, row_of(model, "op:1"))  # layer 0: its cores' rows over [0, 50 us)
    assert tl.area is not None and tl.area.track_ids == (0, 1, 2, 3) and (tl.area.t0, tl.area.t1) == (0, 50_000)
    assert (tl.viewport.t0, tl.viewport.t1) == before
    assert p.operators.select_node("kernel:1")  # (expands layer 1 down to it)
    click_row(view, row_of(model, "op:1"))
    click_row(view, row_of(model, "kernel:1"))  # a kernel row selects its event on the Kernels row
    assert tl.selected == EventRef("kernels", 1) and tl.area is None


def test_an_event_far_down_a_big_kernel_selects_the_kernels_row_and_says_so(window, qtbot, monkeypatch):
    """Qt lays out every tree row before the one shown (a 28k-row kernel: ~300 ms of the GUI
    thread), so an event more than MAX_ROWS_BEFORE rows down its kernel is stood in for by the
    kernel's row, with a note; one near the top is selected itself, and the note goes away."""
    from explorer.ui import operators_view

    monkeypatch.setattr(operators_view, "MAX_ROWS_BEFORE", 100)
    p = ready(window, qtbot)
    ops = p.operators
    base = ops.status.text()
    tl, canvas = window.timeline, window.timeline.canvas
    index = window.loaded.index
    ref = index.find_id(1003)  # TensorTensor #903 of softmax (kernel 1): hundreds of rows down it
    s, e = index.interval(ref)
    tl.zoom_to(s - 200, e + 200)
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, canvas.point_for(ref))
    qtbot.waitUntil(lambda: ops.current_node() == "kernel:1", timeout=30_000)
    assert ops.model.rowCount(ops.view.currentIndex()) <= CHUNK  # its rows were not all handed to the view
    assert "instruction:1003: more than 100 rows down kernel:1" in ops.status.text()
    near = EventRef("kernels", 0)
    tl.zoom_to(0, 100_000)
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, canvas.point_for(near))
    qtbot.waitUntil(lambda: ops.current_node() == "kernel:0")
    assert ops.status.text() == base
