"""File > Open sweep through the real widgets: the results table sorts, the Pareto plot follows
the chosen columns and colours, and clicking a point opens its trace -- captured off the GUI
thread when it was not kept."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox

from explorer.sweep.opened import open_sweep
from explorer.sweep.run import run_sweep
from explorer.ui.palette import category_colours
from explorer.ui.sweep_window import QtSweep

FIXED = {"hardware": "trn3-ultraserver-gen1", "workload": "llama3.1-70b", "layers": 1}
GRID = ["tp=4,8,3", "batch=1,16"]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("gui-sweep") / "sweep"
    run_sweep(out, FIXED, GRID, workers=1)   # traces not kept: opening one captures it
    return out


@pytest.fixture
def opened(qtbot, window, sweep_dir, monkeypatch):
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(sweep_dir))
    window.findChild(type(window.sweeps.action), "action-open-sweep").trigger()
    w = window.sweeps.windows[-1]
    qtbot.addWidget(w)
    w.show_error_dialogs = False
    qtbot.waitExposed(w)
    return w


def click_point(qtbot, w: QtSweep, config: int) -> None:
    """A user's click on configuration `config`'s point (activating the window first, as a click does)."""
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow)
    x, y = w.point_position(config)
    pos = w.plot.mapFromScene(w.plot.getPlotItem().vb.mapViewToScene(QPointF(x, y)))
    qtbot.mouseClick(w.plot.viewport(), Qt.LeftButton, pos=pos)


def test_open_sweep_shows_every_row_and_the_pareto_front_of_the_defaults(opened, sweep_dir):
    w = opened
    sweep = open_sweep(sweep_dir)
    assert w.isVisible() and w.objectName() == "sweep"
    assert w.model.rowCount() == 6 and "6 of 6 configurations finished (3 ok, 3 refused)" in w.heading.text()
    assert (w.x_combo.currentText(), w.y_combo.currentText(), w.colour_combo.currentText()) == \
        ("step_time_ns", "tokens_per_s_per_chip", "tp")
    ok = sweep.results[sweep.results["status"] == "ok"]
    pts = w.scatter.data
    assert sorted(pts["data"].tolist()) == ok["config"].tolist()
    np.testing.assert_allclose(sorted(pts["x"]), sorted(ok["step_time_ns"] * 1e-9))   # drawn in seconds (SI axis)
    front = sweep.pareto("step_time_ns", "tokens_per_s_per_chip")
    xs, ys = w.front_line.getData()
    np.testing.assert_allclose(ys, front["tokens_per_s_per_chip"])
    assert "Pareto front: " + str(len(front)) + " of 3 plotted" in w.caption.text()
    assert "3 not plotted (refused" in w.caption.text()


def test_table_sorts_by_clicking_a_header(opened, qtbot):
    w = opened
    header = w.table.horizontalHeader()
    col = next(i for i, c in enumerate(w.model.columns) if c.key == "tokens_per_s_per_chip")
    pos = header.sectionViewportPosition(col) + header.sectionSize(col) // 2
    qtbot.mouseClick(header.viewport(), Qt.LeftButton, pos=QPoint(pos, 5))
    first = [r["tokens_per_s_per_chip"] for r in w.model.records]
    qtbot.mouseClick(header.viewport(), Qt.LeftButton, pos=QPoint(pos, 5))
    second = [r["tokens_per_s_per_chip"] for r in w.model.records]
    values = [v for v in first if v == v]
    assert values == sorted(values) and [v for v in second if v == v] == sorted(values, reverse=True)
    assert all(v != v for v in first[len(values):])   # refused rows (no value) last


def test_axes_and_colours_follow_the_combos(opened, sweep_dir):
    w = opened
    w.set_axes("batch", "mfu_estimated_percent")
    ok = open_sweep(sweep_dir).results.query("status == 'ok'")
    pts = w.scatter.data
    by_config = dict(zip(pts["data"].tolist(), zip(pts["x"].tolist(), pts["y"].tolist())))
    for _, r in ok.iterrows():
        assert by_config[r["config"]] == pytest.approx((r["batch"], r["mfu_estimated_percent"]))
    assert "batch" in w.plot.getAxis("bottom").labelText
    w.set_colour_key("batch")
    colours = dict(zip([1, 16], category_colours(["1", "16"])))
    for spot in w.scatter.points():
        batch = ok.loc[ok["config"] == spot.data(), "batch"].iloc[0]
        assert spot.brush().color().name() == colours[batch].name()
    assert "batch=1" in w.caption.text() and "batch=16" in w.caption.text()


def test_clicking_a_point_captures_its_trace_off_the_gui_thread_then_opens_it(opened, window, qtbot, sweep_dir):
    w = opened
    target = sweep_dir / "traces" / "0002-tp=8-batch=1.trnx"
    assert w.sweep.trace_path(2) is None
    click_point(qtbot, w, 2)
    assert w.worker is not None and w.worker.isRunning() or target.exists()   # the GUI thread is free meanwhile
    assert w.table.currentIndex().row() == w.model.find("config", 2)
    qtbot.waitUntil(lambda: w.worker is None, timeout=60_000)
    qtbot.waitUntil(lambda: window.loaded is not None and window.loaded.path == target, timeout=30_000)
    assert w.sweep.trace_path(2) == target
    window.close_trace()
    click_point(qtbot, w, 2)   # kept now: opens without capturing
    assert w.worker is None
    qtbot.waitUntil(lambda: window.loaded is not None and window.loaded.path == target, timeout=30_000)


def test_a_refused_row_says_why_and_a_bad_directory_is_one_sentence(opened, window, qtbot, tmp_path, monkeypatch):
    w = opened
    row = w.model.find("config", 4)
    w.table.doubleClicked.emit(w.model.index(row, 0))
    assert w.last_error.startswith("configuration 4 has no trace: llama3.1-70b's 64 attention heads")
    assert w.worker is None
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    assert window.sweeps.open(tmp_path) is None
    assert shown == [f"{tmp_path} holds no sweep.json; it is not a sweep directory (trnx sweep -o DIR writes one)."]
    assert window.isVisible()
