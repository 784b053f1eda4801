"""The collective duration chart through the real window: its points, outliers, and a click that goes there."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from explorer.model.collective_durations import collective_durations

TP16 = Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-70b-tp16-straggler.trnx"


def test_points_outliers_and_click(qtbot):
    from explorer.ui import open_window

    w = open_window(TP16)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=30_000)
    w.panels["Collective durations"].raise_()
    chart = w.findChild(QWidget, "collective-chart")
    want = collective_durations(w.view.index.trace)
    qtbot.waitUntil(lambda: len(chart.frame) == len(want) > 0, timeout=20_000)
    n_out = int(want["outlier"].sum())
    assert chart.status.text().startswith(f"{len(want)} collectives; {n_out} outlier")
    qtbot.wait(50)
    target = want.loc[want["duration_ns"].idxmax()]  # the topmost point: no other point under it
    cid = int(target.collective_id)
    x, y = chart.point_of(cid)
    vb = chart.plot.getPlotItem().vb
    pos = chart.plot.mapFromScene(vb.mapViewToScene(QPointF(x, y)))
    QTest.mouseClick(chart.plot.viewport(), Qt.LeftButton, pos=pos)
    ref = w.view.selected
    assert ref is not None and ref.table == "collectives"
    assert int(w.view.index.tables["collectives"].value("collective_id", ref.row)) == cid
    vp = w.view.viewport
    assert vp.t0 <= target.start_ns and target.start_ns + target.duration_ns <= vp.t1
