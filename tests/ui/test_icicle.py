"""The icicle view through the real window: boxes sized by time or a kernel column, a click zooms the timeline."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QComboBox, QWidget

from explorer.model.icicle import icicle
from simcore.trace import open_trace
from ui import pointer


def test_model_sums_kernels_up_the_tree(trace_path):
    boxes = icicle(open_trace(trace_path))
    by = {(b.depth, b.name): b for b in boxes}
    assert by[(0, "tiny-llm")].value == 100_000  # two 50 us kernels
    assert by[(1, "layer 1")].value == 50_000 and by[(2, "attention.softmax")].value == 50_000
    assert (by[(1, "layer 0")].x0, by[(1, "layer 0")].x1, by[(1, "layer 1")].x1) == (0.0, 0.5, 1.0)  # time order
    assert by[(1, "layer 1")].share == 0.5 and by[(0, "tiny-llm")].share == 1.0
    assert by[(3, "softmax")].node == "kernel:softmax@op:4" and (by[(3, "softmax")].t0, by[(3, "softmax")].t1) == (50_000, 100_000)
    flops = icicle(open_trace(trace_path), "flops")
    assert flops[0].value == open_trace(trace_path).to_pandas("kernels")["flops"].sum()


def test_a_trace_without_kernels_has_no_boxes_and_says_why(tmp_path):
    import numpy as np

    from explorer.model.icicle import why_empty
    from model.timeline_traces import HARDWARE, timeline_tables
    from simcore.trace import write_trace

    t = timeline_tables()
    t["kernels"] = {k: (v[:0] if isinstance(v, np.ndarray) else []) for k, v in t["kernels"].items()}
    trace = open_trace(write_trace(tmp_path / "t.trnx", t, meta={"hardware": HARDWARE, "workload": {"name": "x", "kind": "model"}}))
    assert icicle(trace) == [] and why_empty(trace, "dur_ns") == "this trace has no kernels: the icicle has nothing to show."


def test_click_zooms_the_timeline_and_selects_the_op(window, qtbot):
    window.panels["Icicle"].raise_()
    ice = window.findChild(QWidget, "icicle")
    qtbot.waitUntil(lambda: len(ice.boxes) == 7, timeout=10_000)  # model, 2 layers, 2 ops, 2 kernels
    x, y = ice.box_center("attention.softmax", 2)
    QTest.mouseClick(ice.canvas, Qt.LeftButton, pos=QPoint(x, y))
    vp = window.view.viewport
    assert vp.t0 <= 50_000 and 100_000 <= vp.t1 and vp.t1 - vp.t0 < 60_000
    assert window.view.node == "op:4"
    # hover: the box's value and its share of the model
    # (the box's centre asked again each try: the dock's size can still change as the other panels fill)
    tip = pointer.hover_until(qtbot, ice.canvas, lambda: QPoint(*ice.box_center("attention.softmax", 2)),
                              "attention.softmax: 50 us")
    assert tip == "attention.softmax: 50 us (50 % of the model)"
    ice.findChild(QComboBox, "icicle-value").setCurrentText("flops")
    qtbot.waitUntil(lambda: ice.value_column == "flops" and "FLOP" in ice.status.text(), timeout=10_000)


def test_a_hidden_icicle_computes_nothing_until_it_is_shown(qtbot, trace_path):
    from explorer.ui.tools.icicle_view import QtIcicle

    ice = QtIcicle()
    qtbot.addWidget(ice)
    ice.set_trace(open_trace(trace_path))
    qtbot.wait(200)
    assert ice.stale and ice.boxes == []   # a tab behind others costs nothing on open
    ice.show()
    qtbot.waitUntil(lambda: len(ice.boxes) == 7, timeout=10_000)
    assert not ice.stale


def test_an_empty_icicle_says_why_and_a_closed_trace_leaves_no_status(window, qtbot):
    """Sized by a column every kernel has at 0 (the tiny trace writes no HBM), there are no boxes:
    the status says so in one sentence, not ': nothing; click a box...' with no subject."""
    window.panels["Icicle"].raise_()
    ice = window.findChild(QWidget, "icicle")
    qtbot.waitUntil(lambda: len(ice.boxes) == 7, timeout=10_000)
    ice.findChild(QComboBox, "icicle-value").setCurrentText("hbm_write_bytes")
    qtbot.waitUntil(lambda: ice.boxes == [] and "computing" not in ice.status.text(), timeout=10_000)
    assert ice.status.text() == "every kernel's hbm_write_bytes is 0: nothing to size the boxes by; choose another column."
    ice.findChild(QComboBox, "icicle-value").setCurrentText("dur_ns")
    qtbot.waitUntil(lambda: ice.status.text().startswith("tiny-llm: 100 us;"), timeout=10_000)
    window.close_trace()
    assert ice.status.text() == "" and ice.boxes == []
