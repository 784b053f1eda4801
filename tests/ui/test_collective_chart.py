"""The collective duration chart through the real window: its points, outliers, and a click that goes there."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

TP16 = Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-70b-tp16-straggler.trnx"


def test_points_outliers_and_click(qtbot):
    from explorer.ui import open_window

    w = open_window(TP16)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=30_000)
    w.panels["Collective durations"].raise_()
    chart = w.findChild(QWidget, "collective-chart")
    qtbot.waitUntil(lambda: len(chart.frame) == 10, timeout=20_000)
    assert chart.status.text().startswith("10 collectives; 3 outliers")
    qtbot.wait(50)
    x, y = chart.point_of(5)
    vb = chart.plot.getPlotItem().vb
    pos = chart.plot.mapFromScene(vb.mapViewToScene(QPointF(x, y)))
    QTest.mouseClick(chart.plot.viewport(), Qt.LeftButton, pos=pos)
    ref = w.view.selected
    assert ref is not None and ref.table == "collectives"
    assert int(w.view.index.tables["collectives"].value("collective_id", ref.row)) == 5
    vp = w.view.viewport
    assert vp.t0 <= 620_659 and 620_659 + 61_525 <= vp.t1
