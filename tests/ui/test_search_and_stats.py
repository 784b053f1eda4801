"""Field search, "/" and hit outlines, and the statistics panel, through the real widgets."""

from __future__ import annotations

import math

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QCheckBox, QComboBox, QLabel, QLineEdit, QTableView, QWidget

from explorer.model.timeline.selection import area_scope
from explorer.ui import search_bar
from explorer.ui.tools.search_hits_layer import HIT
from simcore.trace import open_trace


def search(window, qtbot, text: str) -> str:
    edit = window.findChild(QLineEdit, "search")
    edit.clear()
    QTest.keyClicks(edit, text)
    QTest.keyClick(edit, Qt.Key_Return)
    status = window.findChild(QLabel, "search-status")
    qtbot.waitUntil(lambda: status.text() not in ("", "searching\u2026"), timeout=10_000)
    return status.text()


def hit_pixels(window, track_key: str) -> int:
    canvas = window.timeline.canvas
    img = canvas.grab().toImage()
    pinned, rows = canvas.visible_geoms()
    g = next(g for g in pinned + rows if g.row.key == track_key)
    n = 0
    for x in range(240, img.width(), 2):
        for y in (g.y + 1, g.y + g.h - 2):
            n += img.pixelColor(x, y) == HIT
    return n


def test_field_search_counts_outlines_and_steps(window, qtbot):
    window.view.viewport.set_range(0, 10_000)
    assert search(window, qtbot, "opcode:MultiplyMoving dur>500ns") == "1 / 99"
    ref = window.view.selected
    assert window.view.index.event_name(ref) == "MultiplyMoving"
    window.view.viewport.set_range(0, 10_000)
    window.timeline.render_frame()
    assert hit_pixels(window, "track:0") > 0  # the tensor row's hits are outlined
    assert hit_pixels(window, "track:1") == 0  # the vector row has none
    QTest.keyClick(window.findChild(QLineEdit, "search"), Qt.Key_Return)
    assert window.findChild(QLabel, "search-status").text() == "2 / 99"
    window.findChild(QLineEdit, "search").clear()  # clearing the search removes the outlines
    window.timeline.render_frame()
    assert hit_pixels(window, "track:0") == 0


def test_bad_field_says_so_in_one_sentence(window, qtbot):
    assert search(window, qtbot, "colour:red") == "bad search"
    tip = window.findChild(QLabel, "search-status").toolTip()
    assert tip.startswith("unknown search field 'colour'") and "\n" not in tip


def test_big_traces_are_searched_off_the_gui_thread(window, qtbot, monkeypatch):
    monkeypatch.setattr(search_bar, "SYNC_EVENTS", 0)
    edit = window.findChild(QLineEdit, "search")
    QTest.keyClicks(edit, "kernel:softmax opcode:TensorTensor")
    QTest.keyClick(edit, Qt.Key_Return)
    status = window.findChild(QLabel, "search-status")
    assert status.text() == "searching\u2026"
    qtbot.waitUntil(lambda: status.text() == "1 / 500", timeout=10_000)
    assert window.view.index.interval(window.view.selected) == (50_000, 50_020)


def test_slash_focuses_the_search(window, qtbot):
    canvas = window.timeline.canvas
    canvas.setFocus()
    qtbot.waitUntil(canvas.hasFocus)
    QTest.keyClick(canvas, Qt.Key_Slash)
    assert QApplication.focusWidget() is window.findChild(QLineEdit, "search")


def stats_panel(window, qtbot):
    window.panels["Statistics"].raise_()
    panel = window.findChild(QWidget, "statistics")
    qtbot.waitUntil(lambda: not panel.busy and panel.model.rowCount() > 0, timeout=10_000)
    return panel


def rows(panel) -> dict[str, dict]:
    return {r["name"]: r for r in panel.model.records}


def test_statistics_still_computing_when_the_trace_closes_are_dropped(window, qtbot, monkeypatch):
    """A result that arrives after its trace was closed neither fills the panel nor starts a
    histogram query on no trace (which raised in the worker)."""
    from explorer.ui.tools import stats_view

    futures = []
    real = stats_view.run_tool
    monkeypatch.setattr(stats_view, "run_tool", lambda fn, cb: futures.append(real(fn, cb)) or futures[-1])
    panel = window.findChild(QWidget, "statistics")
    panel.refresh()
    panel.set_trace(None)  # what closing the trace does
    qtbot.waitUntil(lambda: all(f.done() for f in futures), timeout=10_000)
    qtbot.wait(100)  # the callbacks' turn on the GUI thread
    assert len(futures) == 1 and futures[0].exception() is None  # no histogram was asked of a closed trace
    assert panel.model.rowCount() == 0 and not panel.busy and panel.histogram is None


def test_statistics_per_opcode_and_kernel_equal_pandas(window, qtbot, trace_path):
    panel = stats_panel(window, qtbot)
    got = rows(panel)
    df = open_trace(trace_path).to_pandas("instructions").astype({"opcode": str})
    for name, g in df.groupby("opcode")["dur_ns"]:
        assert (got[name]["count"], got[name]["total_ns"], got[name]["max_ns"]) == (len(g), g.sum(), g.max())
    assert got["DMA hbm\u2192sbuf"]["count"] == 10
    assert panel.findChild(QTableView, "stats-table").model().cell_text(0, "name") == "MultiplyMoving"  # most time first
    panel.findChild(QComboBox, "stats-grouping").setCurrentText("kernel")
    qtbot.waitUntil(lambda: not panel.busy and set(rows(panel)) == {"matmul_qkv", "softmax"}, timeout=10_000)
    assert rows(panel)["softmax"]["p50_ns"] == 50_000


def test_histogram_range_selects_events_and_double_click_goes_to_the_slowest(window, qtbot):
    panel = stats_panel(window, qtbot)
    table = panel.findChild(QTableView, "stats-table")
    row = panel.model.find("name", "TensorTensor")
    table.selectRow(row)
    qtbot.waitUntil(lambda: panel.histogram is not None and panel.histogram.name == "TensorTensor", timeout=10_000)
    assert panel.histogram.total == 1000
    panel.region.setRegion((math.log2(10), math.log2(30)))  # as dragging the histogram's region over the 20 ns bin does
    status = window.findChild(QLabel, "search-status")
    qtbot.waitUntil(lambda: status.text() == "1 / 1,000", timeout=10_000)
    row = panel.model.find("name", "MultiplyMoving")
    rect = table.visualRect(table.model().index(row, 0))
    QTest.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    QTest.mouseDClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    ref = window.view.selected
    t0, t1 = window.view.index.interval(ref)
    assert window.view.index.event_name(ref) == "MultiplyMoving" and t1 - t0 == 800


def test_statistics_of_the_selected_area(window, qtbot):
    panel = stats_panel(window, qtbot)
    window.view.set_area(area_scope([1], 0, 10_000))  # the Vector row's first 10 us
    panel.findChild(QCheckBox, "stats-in-area").setChecked(True)
    qtbot.waitUntil(lambda: not panel.busy and set(rows(panel)) == {"TensorTensor"}, timeout=10_000)
    assert rows(panel)["TensorTensor"]["count"] == 100



def _choose(panel, qtbot, name):
    table = panel.findChild(QTableView, "stats-table")
    rect = table.visualRect(table.model().index(panel.model.find("name", name), 0))
    QTest.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: panel.histogram is not None and panel.histogram.name == name, timeout=10_000)
    return panel.histogram


def test_an_op_histograms_range_selects_the_kernels_of_those_ops(window, qtbot):
    """Per op the histogram counts ops; dragging over it selects those ops' kernels (an op has no
    row of its own), not instructions as long as an op (which selected nothing)."""
    panel = stats_panel(window, qtbot)
    panel.findChild(QComboBox, "stats-grouping").setCurrentText("op")
    qtbot.waitUntil(lambda: not panel.busy and "attention.softmax" in rows(panel), timeout=10_000)
    h = _choose(panel, qtbot, "attention.softmax")
    assert h.total == 1 and panel.plot.getPlotItem().titleLabel.text == "attention.softmax: 1 op"
    panel.region.setRegion((math.log2(h.edges[0] + 1), math.log2(h.edges[-1])))  # the whole histogram
    status = window.findChild(QLabel, "search-status")
    qtbot.waitUntil(lambda: status.text() == "1 / 1", timeout=10_000)
    ref = window.view.selected
    assert ref.table == "kernels" and window.view.index.event_name(ref) == "softmax"


def test_the_selected_areas_histogram_selects_in_the_area(window, qtbot):
    """With "Selected area only" the histogram counts the area's events, and its range selects
    those, not the name's events over the whole trace."""
    panel = stats_panel(window, qtbot)
    window.view.set_area(area_scope([1], 0, 10_000))  # the Vector row's first 10 us
    panel.findChild(QCheckBox, "stats-in-area").setChecked(True)
    qtbot.waitUntil(lambda: not panel.busy and set(rows(panel)) == {"TensorTensor"}, timeout=10_000)
    h = _choose(panel, qtbot, "TensorTensor")
    assert h.total == 100
    panel.region.setRegion((math.log2(h.edges[0] + 1), math.log2(h.edges[-1])))
    status = window.findChild(QLabel, "search-status")
    qtbot.waitUntil(lambda: status.text() == "1 / 100", timeout=10_000)
    panel.findChild(QCheckBox, "stats-in-area").setChecked(False)  # the whole trace again
    qtbot.waitUntil(lambda: not panel.busy and "TensorTensor" in rows(panel), timeout=10_000)
    h = _choose(panel, qtbot, "TensorTensor")
    panel.region.setRegion((math.log2(h.edges[0] + 1), math.log2(h.edges[-1])))
    qtbot.waitUntil(lambda: status.text() == "1 / 1,000", timeout=10_000)

def test_a_new_traces_statistics_wait_for_its_analyses(qtbot, trace_path, monkeypatch):
    """The whole-trace statistics query starts once the analysis panels are filled, not beside
    their computation (on a big trace the two fought over the cores and memory)."""
    import threading

    from explorer.model.analysis.trace_analysis import TraceAnalysis
    from explorer.ui import open_window

    gate = threading.Event()
    compute = TraceAnalysis.for_window.__func__

    def held_back(cls, index):
        gate.wait(30)
        return compute(cls, index)

    monkeypatch.setattr(TraceAnalysis, "for_window", classmethod(held_back))
    w = open_window(None)
    qtbot.addWidget(w)
    w.panels["Statistics"].raise_()
    panel = w.findChild(QWidget, "statistics")
    status = panel.findChild(QLabel, "stats-status")
    try:
        w.open_path(trace_path)
        qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
        qtbot.wait(300)
        assert w.analysis.session.computing
        assert not panel.busy and panel.model.rowCount() == 0 and status.text() == "waiting for the analyses\u2026"
    finally:
        gate.set()
    qtbot.waitUntil(lambda: w.analysis.session.analysis is not None, timeout=20_000)
    qtbot.waitUntil(lambda: not panel.busy and panel.model.rowCount() > 0, timeout=20_000)
    assert rows(panel)["MultiplyMoving"]["count"] > 0
