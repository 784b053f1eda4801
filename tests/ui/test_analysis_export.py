"""File > Export: the operator table and selections to CSV, the view to PNG, atomically;
failures show an error dialog and the window stays up."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.feather as feather
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog, QMessageBox

from ui.analysis_helpers import ready

from explorer.model.analysis.hierarchy import ROW_COLUMNS


def export_action(w, name: str):
    return next(a for a in w.analysis.export_menu.actions() if a.objectName() == name)


def save_to(monkeypatch, path: Path) -> None:
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(path), "")))


def no_temp_files(directory: Path) -> bool:
    return not [p for p in directory.iterdir() if p.name.startswith(".")]


def test_operator_table_to_csv_whole_and_filtered(window, qtbot, tmp_path, monkeypatch):
    p = ready(window, qtbot)
    out = tmp_path / "ops.csv"
    save_to(monkeypatch, out)
    export_action(window, "action-export-operators").trigger()
    got = pd.read_csv(out, keep_default_na=False)
    assert list(got.columns) == list(ROW_COLUMNS)
    assert got["node"].tolist() == ["op:0", "op:1", "op:3", "op:2", "op:4", "kernel:0", "kernel:1"]
    kernels = feather.read_table(window.loaded.path / "kernels.arrow").to_pandas()
    k = got[got["level"] == "kernel"].set_index("id")
    assert (k.loc[kernels["kernel_id"], "flops"].to_numpy() == kernels["flops"].to_numpy()).all()
    # with a filter, what the tree shows
    QTest.keyClicks(p.operators.filter, "softmax")
    QTest.keyClick(p.operators.filter, Qt.Key_Return)
    export_action(window, "action-export-operators").trigger()
    got = pd.read_csv(out, keep_default_na=False)
    assert got["node"].tolist() == ["op:0", "op:3", "op:4", "kernel:1"]
    assert no_temp_files(tmp_path)


def test_an_area_selection_and_tree_rows_to_csv(window, qtbot, tmp_path, monkeypatch):
    p = ready(window, qtbot)
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(lambda parent, title, text: shown.append(text)))
    out = tmp_path / "sel.csv"
    save_to(monkeypatch, out)
    export_action(window, "action-export-selection").trigger()  # nothing selected yet
    assert shown and "nothing is selected" in shown[-1] and not out.exists()
    # Shift+drag over the TensorMatrix and Vector rows, 0..10 us
    canvas = window.timeline.canvas
    g0 = next(g for g in canvas.visible_geoms()[1] if g.track_id == 0)
    g1 = next(g for g in canvas.visible_geoms()[1] if g.track_id == 1)
    xa, xb = int(canvas.x_of(0)) + 1, int(canvas.x_of(10_000))
    QTest.mousePress(canvas, Qt.LeftButton, Qt.ShiftModifier, QPoint(xa, g0.y + 3))
    QTest.mouseMove(canvas, QPoint(xa + 20, g1.y + 3))
    QTest.mouseMove(canvas, QPoint(xb, g1.y + 3))
    QTest.mouseRelease(canvas, Qt.LeftButton, Qt.ShiftModifier, QPoint(xb, g1.y + 3))
    area = window.timeline.area
    assert set(area.track_ids) == {0, 1}
    export_action(window, "action-export-selection").trigger()
    got = pd.read_csv(out)
    ins = feather.read_table(window.loaded.path / "instructions.arrow").to_pandas()
    end = ins["start_ns"] + ins["dur_ns"]
    want = ins[ins["track_id"].isin([0, 1]) & (ins["start_ns"] < area.t1) & (end > area.t0)]
    assert sorted(got["id"]) == sorted(want["id"]) and set(got["table"]) == {"instructions"}
    assert got["start_ns"].is_monotonic_increasing
    # no area: the rows selected in the operator tree
    window.timeline.set_area(None)
    assert p.operators.select_node("kernel:1")
    export_action(window, "action-export-selection").trigger()
    got = pd.read_csv(out)
    assert got["node"].tolist() == ["kernel:1"] and got.loc[0, "name"] == "softmax"
    assert no_temp_files(tmp_path)


def test_the_view_to_png_and_a_failed_export_keeps_the_app_up(window, qtbot, tmp_path, monkeypatch):
    ready(window, qtbot)
    out = tmp_path / "timeline.png"
    save_to(monkeypatch, out)
    export_action(window, "action-export-timeline-png").trigger()
    img = QImage(str(out))
    assert not img.isNull() and (img.width(), img.height()) == (window.timeline.width(), window.timeline.height())
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    save_to(monkeypatch, tmp_path / "window.png")
    export_action(window, "action-export-window-png").trigger()
    assert QImage(str(tmp_path / "window.png")).width() == window.width()
    assert no_temp_files(tmp_path)
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(lambda parent, title, text: shown.append(text)))
    save_to(monkeypatch, tmp_path / "no-such-dir" / "x.png")
    export_action(window, "action-export-window-png").trigger()
    assert shown and "does not exist" in shown[-1] and window.isVisible()
    save_to(monkeypatch, tmp_path / "summary.csv")
    export_action(window, "action-export-summary").trigger()
    summary = pd.read_csv(tmp_path / "summary.csv", keep_default_na=False).set_index("metric")
    assert summary.loc["kernel_count", "value"] == "2" and summary.loc["total_time_ns", "unit"] == "ns"
