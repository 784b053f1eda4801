"""File > Compare with...: the BF16 GEMM sample (A) against the MXFP8 one (B) -- read the deltas,
line the two timelines up on an op, zoom one and watch the other follow."""

from __future__ import annotations


import pyarrow.feather as feather
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog, QMessageBox

from ui.analysis_helpers import SAMPLES, open_ready

from explorer.model.units import format_ns
from simcore.trace import open_trace

BF16, MXFP8 = SAMPLES / "gemm-4096-bf16.trnx", SAMPLES / "gemm-4096-mxfp8.trnx"


def compare_action(w):
    file_menu = w.menuBar().actions()[0].menu()
    return next(a for a in file_menu.actions() if a.objectName() == "action-compare")


def test_compare_two_traces_read_deltas_and_linked_zoom(qtbot, monkeypatch):
    w, p = open_ready(qtbot, BF16)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(MXFP8)))
    compare_action(w).trigger()
    assert len(p.compare_windows) == 1
    view = p.compare_windows[0]
    qtbot.addWidget(view)
    assert view.objectName() == "compare" and view.isVisible()
    qtbot.waitUntil(lambda: view.diff is not None, timeout=60_000)
    # the deltas, against an independent reading of the two traces
    a, b = open_trace(BF16), open_trace(MXFP8)
    ta, tb = a.span_ns[1] - a.span_ns[0], b.span_ns[1] - b.span_ns[0]
    assert view.delta_text("total_time_ns") == format_ns(tb - ta)
    row = view.metrics.find("metric", "total_time_ns")
    assert view.metrics.cell_text(row, "ratio") == f"{tb / ta:.3g}x"
    assert view.metrics.record(row)["better"] == "b"
    ka = feather.read_table(BF16 / "kernels.arrow").to_pandas()
    kb = feather.read_table(MXFP8 / "kernels.arrow").to_pandas()
    krow = view.kernels.find("name", "matmul_gemm")
    assert view.kernels.record(krow)["delta_ns"] == kb["dur_ns"].sum() - ka["dur_ns"].sum()
    assert view.kernels.record(krow)["status"] == "matched"
    orow = view.ops.find("path", "GEMM 4096x4096x4096 bf16 / benchmark / gemm")
    assert view.ops.cell_text(orow, "delta_ns") == format_ns(tb - ta)
    ins_a = feather.read_table(BF16 / "instructions.arrow").to_pandas()
    assert view.engines.record(view.engines.find("engine", "tensor"))["a_active_ns"] > 0.9 * ta
    assert len(ins_a) == 14_720 + 1  # the GEMM's engine instructions and its kernel launch (the Runtime row)
    assert "total time ns" in view.headline.text() and f"({tb / ta:.3g}x)" in view.headline.text()
    assert "3 of 3 ops matched" in view.headline.text()  # the GEMM, its benchmark and its kernel's op in both
    # opened at one time scale: B (MXFP8, ~4x faster) is visibly shorter, not stretched to A's width
    va, vb = view.side_a.timeline.viewport, view.side_b.timeline.viewport
    assert va.width == pytest.approx(vb.width) and va.t1 > ta and vb.t1 > tb
    # the flags reason about what each metric divides: B's shorter run raises its engine percentages
    # and it moves fewer HBM bytes, so neither is "better" or "worse"
    for name in ("tensor_engine_active_time_percent", "hbm_bandwidth_gbps"):
        r = view.metrics.find("metric", name)
        assert view.metrics.record(r)["better"] == ""
        tip = view.metrics.data(view.metrics.index(r, 4), Qt.ToolTipRole)
        assert "B's run is" in tip or "x A's HBM bytes" in tip
    assert "lower is better" in view.metrics.data(view.metrics.index(row, 4), Qt.ToolTipRole)
    # click the op row: both timelines show that op from its start, at one time scale
    view.tabs.setCurrentIndex(2)
    table = view.views["compare-ops"]
    qtbot.waitUntil(table.isVisible)
    idx = table.model().index(orow, 0)
    QTest.mouseClick(table.viewport(), Qt.LeftButton, Qt.NoModifier, table.visualRect(idx).center())
    assert va.t0 < 0 and va.t1 > ta and vb.t0 < 0 and vb.t1 > tb
    assert (vb.t1 - vb.t0) / (va.t1 - va.t0) == pytest.approx(1.0, rel=0.01)
    assert "same time scale" in view.align_label.text()
    # zoom A with the keyboard: B follows, still aligned on the op
    QTest.keyClick(view.side_a.timeline, Qt.Key_W)
    QTest.keyClick(view.side_a.timeline, Qt.Key_D)
    off, scale = view.map
    assert (vb.t0, vb.t1) == (pytest.approx(off + scale * va.t0), pytest.approx(off + scale * va.t1))
    QTest.mouseClick(view.stretch_button, Qt.LeftButton)  # B's whole trace as wide as A's, on request
    assert (vb.t1 - vb.t0) / (va.t1 - va.t0) == pytest.approx(tb / ta, rel=0.01)
    QTest.mouseClick(view.align_button, Qt.LeftButton)  # same times in both again
    view.side_a.timeline.zoom_to(100_000, 200_000)
    assert (vb.t0, vb.t1) == (pytest.approx(100_000), pytest.approx(200_000))
    view.close()


def test_compare_without_a_trace_or_with_a_broken_one_says_why(qtbot, monkeypatch, tmp_path):
    from explorer.ui import open_window

    w = open_window()
    qtbot.addWidget(w)
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(lambda parent, title, text: shown.append(text)))
    compare_action(w).trigger()
    assert shown and "open a trace first" in shown[-1]
    w2, p = open_ready(qtbot, BF16)
    w2.show_error_dialogs = True
    broken = tmp_path / "broken.trnx"
    broken.mkdir()
    view = p.open_compare(broken)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=20_000)
    assert "meta.json" in shown[-1] and "Cannot compare" in view.headline.text()
    assert w2.isVisible()
