"""The main window and timeline driven through real Qt input events (pytest-qt).

Keys, clicks, drags and the wheel go through Qt's event delivery to the real
widgets; the assertions read what a user would see: the visible range, the
details panel, the search status, the selection summary, the pixels drawn.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QWidget

from explorer.model.timeline.trace_index import EventRef
from explorer.ui.canvas_layers import GUTTER, PIN_W
from model.timeline_traces import DMA_ID0


def canvas_of(w):
    return w.timeline.canvas


def geom(canvas, key):
    pinned, rows = canvas.visible_geoms()
    return next(g for g in pinned + rows if g.row.key == key)


def test_open_window_shows_the_trace(window, trace_path):
    tl = window.findChild(QWidget, "timeline")
    assert tl is window.timeline
    assert "tiny-llm" in window.windowTitle()
    assert not window.progress.isVisible()
    rows = [r.node.label for r in tl.canvas.tree.rows()]
    assert rows[:4] == ["Chip 0", "CC", "Core 0", "Kernels"] and "TensorMatrix" in rows and "Vector" in rows
    assert (tl.viewport.t0, tl.viewport.t1) == (0.0, 100_000.0)
    assert window.recent.paths()[0] == str(trace_path.resolve())
    assert window.timeline.render_frame() > 0
    assert [r.node.label for r in tl.counter_canvas.tree.rows()][:2] == ["Chip 0", "HBM Read Bandwidth"]


def test_wasd_zoom_at_the_cursor_and_pan(window, qtbot):
    tl, canvas = window.timeline, canvas_of(window)
    vp = tl.viewport
    pos = QPoint(GUTTER + 300, geom(canvas, "track:1").y + 5)
    QTest.mouseMove(canvas, pos)
    under = canvas.t_of(pos.x())
    # on a real X server the pointer's move arrives asynchronously: W zooms where the window knows it is
    qtbot.waitUntil(lambda: window.view.hover_t == pytest.approx(under), timeout=5000)
    w0 = vp.width
    QTest.keyClick(tl, Qt.Key_W)
    QTest.keyClick(tl, Qt.Key_W)
    assert vp.width == pytest.approx(w0 * 0.64)
    assert canvas.t_of(pos.x()) == pytest.approx(under)  # the time under the cursor stays put
    QTest.keyClick(tl, Qt.Key_S)
    assert vp.width == pytest.approx(w0 * 0.8)
    t0 = vp.t0
    QTest.keyClick(tl, Qt.Key_D)
    assert vp.t0 == pytest.approx(t0 + 0.15 * vp.width)
    QTest.keyClick(tl, Qt.Key_A)
    QTest.keyClick(tl, Qt.Key_A)
    assert vp.t0 == pytest.approx(t0 - 0.15 * vp.width)
    qtbot.wait(100)  # the utilisation view follows the visible range (debounced)
    assert window.utilisation.range == (vp.t0, vp.t1)


def test_wheel_zooms_at_the_cursor_and_drag_pans(window):
    canvas = canvas_of(window)
    vp = window.timeline.viewport
    pos = QPointF(GUTTER + 500, geom(canvas, "track:0").y + 5)
    under = canvas.t_of(pos.x())
    w0 = vp.width
    ev = QWheelEvent(pos, canvas.mapToGlobal(pos), QPoint(0, 0), QPoint(0, 240), Qt.NoButton, Qt.NoModifier,
                     Qt.NoScrollPhase, False)
    QApplication.sendEvent(canvas, ev)
    assert vp.width == pytest.approx(w0 * 0.64)
    assert canvas.t_of(pos.x()) == pytest.approx(under)
    t0 = vp.t0
    px = vp.width / canvas.track_width
    a, b = QPoint(GUTTER + 400, 200), QPoint(GUTTER + 600, 200)
    QTest.mousePress(canvas, Qt.LeftButton, Qt.NoModifier, a)
    QTest.mouseMove(canvas, QPoint(GUTTER + 500, 200))
    QTest.mouseMove(canvas, b)
    QTest.mouseRelease(canvas, Qt.LeftButton, Qt.NoModifier, b)
    assert vp.t0 == pytest.approx(t0 - 200 * px)  # dragged right by 200 px: earlier times come in


def test_zoom_to_range_drag_and_fit(window):
    canvas = canvas_of(window)
    vp = window.timeline.viewport
    xa, xb = GUTTER + 100, GUTTER + 400
    ta, tb = canvas.t_of(xa), canvas.t_of(xb)
    y = geom(canvas, "track:1").y + 5
    QTest.mousePress(canvas, Qt.LeftButton, Qt.ControlModifier, QPoint(xa, y))
    QTest.mouseMove(canvas, QPoint(xa + 50, y))
    QTest.mouseMove(canvas, QPoint(xb, y))
    QTest.mouseRelease(canvas, Qt.LeftButton, Qt.ControlModifier, QPoint(xb, y))
    assert (vp.t0, vp.t1) == (pytest.approx(ta), pytest.approx(tb))
    QTest.keyClick(window.timeline, Qt.Key_F)  # nothing selected: fit the whole trace
    assert (vp.t0, vp.t1) == (0.0, 100_000.0)


def test_click_selects_an_instruction_and_the_details_panel_jumps_to_its_dependency(window, qtbot):
    tl, canvas = window.timeline, canvas_of(window)
    ref = window.loaded.index.find_id(1)  # MultiplyMoving [1000, 1800), waits for DMA 0
    tl.zoom_to(0, 5000)
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, canvas.point_for(ref))
    assert tl.selected == ref
    d = window.details
    assert d.title.text() == "MultiplyMoving"
    assert d.field("start") == "1 us" and d.field("duration") == "800 ns"
    assert d.field("kernel") == "matmul_qkv" and d.field("op") == "attention.qkv_proj" and d.field("layer") == "layer 0"
    assert d.field("dtype") == "bf16" and "FLOP" in d.field("flops") and d.field("bytes").startswith("64 KiB")
    qtbot.waitUntil(lambda: d.deps.count() == 1, timeout=30_000)  # found on the selection's worker, off the GUI thread
    assert "waits for (semaphore): DMA hbm" in d.deps.item(0).text()
    assert d.deps_label.text().startswith("Dependencies: waits for 1, unblocks")
    assert [x.ref for x in tl.state.selected_dependencies] == [EventRef("dma", 0)]  # the arrows drawn
    qtbot.waitUntil(lambda: d.deps.isVisible())
    item_pos = d.deps.visualItemRect(d.deps.item(0)).center()
    QTest.mouseClick(d.deps.viewport(), Qt.LeftButton, Qt.NoModifier, item_pos)
    assert tl.selected == EventRef("dma", 0)
    assert tl.viewport.t0 <= 0 < 1000 <= tl.viewport.t1
    assert d.field("id") == str(DMA_ID0)
    QTest.keyClick(tl, Qt.Key_F)  # fit the selected transfer
    assert tl.viewport.t0 < 0 and 1000 < tl.viewport.t1 < 1500
    QTest.keyClick(tl, Qt.Key_Escape)
    assert tl.selected is None


def test_hover_shows_a_tooltip_for_events_and_counters(window):
    tl, canvas = window.timeline, canvas_of(window)
    tl.zoom_to(0, 5000)
    ref = window.loaded.index.find_id(2)
    QTest.mouseMove(canvas, canvas.point_for(ref))
    assert canvas.hover_text.startswith("MultiplyMoving on TensorMatrix (chip 0 core 0) at 2 us")
    assert "duration 800 ns" in canvas.hover_text and "this pixel" not in canvas.hover_text
    tl.zoom_to(0, 100_000)  # over 100 ns per pixel: the Vector row folds events into pixels
    g = geom(canvas, "track:1")
    for x in range(GUTTER + 200, GUTTER + 240):
        QTest.mouseMove(canvas, QPoint(x, g.y + g.h // 2))
        if "this pixel: 2 events" in canvas.hover_text:
            break
    from explorer.model.units import format_ns

    assert f"this pixel: 2 events over {format_ns(1 / canvas.px_per_ns())}" in canvas.hover_text
    counters = tl.counter_canvas
    tl.zoom_to(0, 100_000)
    g = geom(counters, "track:7")  # HBM Read: 300 GB/s from 50 us
    QTest.mouseMove(counters, QPoint(int(counters.x_of(75_000)), g.y + g.h // 2))
    assert counters.hover_text.startswith("HBM Read Bandwidth: 300 GB/s")
    assert "6.1% of the hardware peak (4.9 TB/s)" in counters.hover_text


def test_search_box_steps_through_hits_in_time_order(window):
    edit = window.search.edit
    QTest.keyClicks(edit, "multiply")
    QTest.keyClick(edit, Qt.Key_Return)
    index = window.loaded.index
    tl = window.timeline
    assert window.search.status.text() == "1 / 99"
    assert index.interval(tl.selected) == (0, 800)
    QTest.keyClick(edit, Qt.Key_Return)
    assert window.search.status.text() == "2 / 99"
    assert index.interval(tl.selected) == (1000, 1800)
    assert tl.viewport.t0 <= 1000 and 1800 <= tl.viewport.t1
    QTest.keyClick(edit, Qt.Key_Return, Qt.ShiftModifier)
    assert window.search.status.text() == "1 / 99"
    edit.clear()
    QTest.keyClicks(edit, "nothing-like-this")
    QTest.keyClick(edit, Qt.Key_Return)
    assert window.search.status.text() == "no match"


def test_shift_drag_selects_an_area_and_the_summary_shows_it(window):
    canvas = canvas_of(window)
    tl = window.timeline
    g_mm, g_vec = geom(canvas, "track:0"), geom(canvas, "track:1")
    xa, xb = int(np.ceil(canvas.x_of(0))), int(canvas.x_of(50_000))
    QTest.mousePress(canvas, Qt.LeftButton, Qt.ShiftModifier, QPoint(xa, g_mm.y + 3))
    QTest.mouseMove(canvas, QPoint(xa + 30, g_vec.y + 3))
    QTest.mouseMove(canvas, QPoint(xb, g_vec.y + 3))
    QTest.mouseRelease(canvas, Qt.LeftButton, Qt.ShiftModifier, QPoint(xb, g_vec.y + 3))
    area = tl.area
    assert set(area.track_ids) == {0, 1}
    assert area.t0 == pytest.approx(0, abs=200) and area.t1 == pytest.approx(50_000, abs=200)
    s = window.selection_summary.summary
    assert s.busy_percent[1] == pytest.approx(20.0, abs=0.5) and s.busy_percent[0] == pytest.approx(80.0, abs=2)
    text = window.selection_summary.text.toPlainText()
    assert "2 rows" in text and "Vector (c0.0)" in text and "TensorTensor" in text and "MultiplyMoving" in text
    assert "average HBM read" in text and "100 GB/s" in text
    QTest.keyClick(tl, Qt.Key_F)  # F fits the area
    assert (tl.viewport.t0, tl.viewport.t1) == (pytest.approx(area.t0), pytest.approx(area.t1))


def pixel_blend(image, x_range, y, colour, bg):
    """Per pixel, how far the colour is from the background towards `colour` (0..1)."""
    px = np.array([[image.pixelColor(x, y).red(), image.pixelColor(x, y).green(), image.pixelColor(x, y).blue()]
                   for x in x_range], dtype=float)
    c = np.array([colour.red(), colour.green(), colour.blue()], dtype=float)
    b = np.array([bg.red(), bg.green(), bg.blue()], dtype=float)
    return ((px - b) @ (c - b)) / ((c - b) @ (c - b))


def test_a_20_percent_busy_row_looks_20_percent_busy_at_every_zoom(window):
    from explorer.ui import palette as P

    tl, canvas = window.timeline, canvas_of(window)
    names = window.view.colour_codes.names
    for presses in (0, 1, 3):
        tl.viewport.fit()
        for _ in range(presses):
            QTest.keyClick(tl, Qt.Key_W)
        image = canvas.grab().toImage()
        xs = range(int(max(canvas.x_of(0), GUTTER)) + 1, int(min(canvas.x_of(100_000), canvas.width())) - 1)
        for track, opcode, busy in ((1, "TensorTensor", 0.2), (0, "MultiplyMoving", 0.8)):
            g = geom(canvas, f"track:{track}")
            f = pixel_blend(image, xs, g.y + g.h // 2, tl.colours.colours[names.index(opcode)], P.BACKGROUND)
            assert f.mean() == pytest.approx(busy, abs=0.03), (presses, track)


def test_rows_fold_pin_and_reorder_with_the_mouse(window):
    canvas = canvas_of(window)
    tree = canvas.tree
    core = geom(canvas, "chip:0/core:0")
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, QPoint(40, core.y + core.h // 2))
    assert tree.node("chip:0/core:0").collapsed
    assert "track:1" not in [r.key for r in tree.rows()]
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, QPoint(40, core.y + core.h // 2))
    assert not tree.node("chip:0/core:0").collapsed
    vec = geom(canvas, "track:1")
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, QPoint(GUTTER - PIN_W // 2 - 2, vec.y + vec.h // 2))
    assert tree.pinned == ["track:1"]
    assert geom(canvas, "track:1").y == 0  # pinned rows sit on top
    dma, kernels = geom(canvas, "track:2"), geom(canvas, "track:3")
    QTest.mousePress(canvas, Qt.LeftButton, Qt.NoModifier, QPoint(60, dma.y + 4))
    QTest.mouseMove(canvas, QPoint(60, dma.y - 6))
    QTest.mouseMove(canvas, QPoint(60, kernels.y + 4))
    QTest.mouseRelease(canvas, Qt.LeftButton, Qt.NoModifier, QPoint(60, kernels.y + 4))
    core_rows = [r.node.label for r in tree.rows() if r.node.depth == 2]
    assert core_rows.index("qSyncIO0") < core_rows.index("Kernels")


def test_colour_by_kernel_changes_the_legend(window):
    assert "TensorTensor" in window.legend.names()
    window.colour_combo.setCurrentText("kernel")
    assert window.timeline.colour_mode == "kernel"
    assert set(window.legend.names()) == {"matmul_qkv", "softmax", "(none)"}
    texts = [window.legend.list.item(i).text() for i in range(window.legend.list.count())]
    shares = [float(t.rsplit("(", 1)[1].rstrip("%)")) for t in texts]  # the percentages the user reads
    assert sum(shares) == pytest.approx(100, abs=0.2) and all(s > 0 for s in shares)
    window.colour_combo.setCurrentText("layer")
    assert set(window.legend.names()) == {"layer 0", "layer 1", "(none)"}


def test_utilisation_and_collective_waits_follow_the_view_and_jump(window, qtbot):
    tl = window.timeline
    tl.viewport.fit()
    window.utilisation.refresh()
    assert window.utilisation.totals["Vector"] == pytest.approx(20.0)
    table = window.utilisation.table
    rows = {table.item(i, 0).text(): table.item(i, 1).text() for i in range(table.rowCount())}
    assert rows["TensorMatrix"] == "80.0%" and rows["Vector"] == "20.0%"
    window.panels["Collective waits"].raise_()
    cw = window.collective_waits
    qtbot.waitUntil(lambda: cw.plot.isVisible())
    cw.refresh()
    assert cw.waits.wait_ns.shape == (3, 2)
    assert list(cw.waits.slowest_rank) == [2, 1]
    assert "Slowest rank most often" in cw.summary.text()
    qtbot.wait(50)
    QTest.mouseClick(cw.plot.viewport(), Qt.LeftButton, Qt.NoModifier, cw.cell_center(0, 1))
    assert tl.selected == cw.waits.ref(0, 1)
    s, e = window.loaded.index.interval(tl.selected)
    assert (s, e) == (60_000, 72_000)
    assert tl.viewport.t0 <= s and e <= tl.viewport.t1 and tl.viewport.width < 100_000


def test_collective_waits_keep_one_colour_scale_label_collectives_and_say_when_there_are_none(window, qtbot):
    window.panels["Collective waits"].raise_()
    cw = window.collective_waits
    tl = window.timeline
    tl.viewport.fit()
    cw.refresh()
    assert cw.plot.isVisible()
    full = tuple(cw.image.getLevels())
    assert full == (0.0, 10.0)  # the longest wait in the trace: chip 0 waited 10 us at collective 0
    assert tuple(cw.colour_bar.levels()) == (0.0, 10.0)
    ticks = cw.plot.getAxis("bottom")._tickLevels[0]
    assert [label for _, label in ticks] == ["#0", "#1"]  # ids, not fractional positions
    assert cw.waits.labels[1].startswith("#1 all_reduce 8 MiB")
    tl.zoom_to(55_000, 75_000)  # only collective 1 (waits up to 10 us, scale unchanged)
    cw.refresh()
    assert cw.waits.wait_ns.shape[1] == 1 and tuple(cw.image.getLevels()) == full
    tl.zoom_to(30_000, 50_000)  # no collective here: a sentence, not an empty +-400 axis
    cw.refresh()
    assert not cw.plot.isVisible() and "No collectives in the visible range" in cw.summary.text()


def test_broken_trace_shows_an_error_dialog_and_the_app_stays_up(window, qtbot, trace_path, tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(lambda parent, title, text: shown.append((title, text))))
    broken = tmp_path / "broken.trnx"
    shutil.copytree(trace_path, broken)
    data = (broken / "instructions.arrow").read_bytes()
    (broken / "instructions.arrow").write_bytes(data[: len(data) // 2])
    window.open_path(broken)
    qtbot.waitUntil(lambda: bool(shown), timeout=10_000)
    title, text = shown[0]
    assert title == "Cannot open trace" and "instructions.arrow is truncated" in text
    assert window.loaded is not None and window.loaded.path == trace_path  # the old trace is still shown
    window.open_path(tmp_path / "does-not-exist.trnx")
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=10_000)
    assert "does not exist" in shown[1][1]
    assert window.isVisible()
    QTest.keyClick(window.timeline, Qt.Key_W)  # still responsive
    assert window.timeline.viewport.width == pytest.approx(80_000)


def test_file_open_drag_and_drop_and_recent_files(qtbot, trace_path, monkeypatch):
    from explorer.ui import open_window

    w = open_window()
    qtbot.addWidget(w)
    assert w.loaded is None
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(trace_path)))
    open_action = next(a for a in w.menuBar().actions()[0].menu().actions() if a.text().startswith("&Open trace"))
    open_action.trigger()
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    w.close_trace()
    assert w.loaded is None

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(trace_path))])
    enter = QDragEnterEvent(QPointF(300, 300), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(w, enter)
    assert enter.isAccepted()
    QApplication.sendEvent(w, QDropEvent(QPointF(300, 300), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    w.close_trace()

    w._fill_recent()
    recent = w.recent_menu.actions()
    assert recent[0].text() == str(trace_path.resolve())
    recent[0].trigger()
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    assert w.loaded.path == trace_path.resolve()


def test_loading_runs_in_a_worker_thread_with_progress_and_cancel(qtbot, tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from synth_trace import write_synthetic_trace

    from explorer.ui import open_window

    big = write_synthetic_trace(tmp_path / "synthetic.trnx", 300_000, chips=1, cores=2)
    w = open_window()
    qtbot.addWidget(w)
    progress = []
    w.open_path(big)
    assert w.loader.isRunning()  # the GUI thread is free while the trace loads
    assert w.progress.isVisible() and w.cancel_button.isVisible()
    w.loader.progressed.connect(lambda f, m: progress.append(f))
    QTest.mouseClick(w.cancel_button, Qt.LeftButton)
    assert not w.progress.isVisible() and w.loader is None
    qtbot.wait(300)
    assert w.loaded is None  # cancelled: nothing shown
    w.open_path(big)
    w.loader.progressed.connect(lambda f, m: progress.append(f))
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=30_000)
    assert progress and progress == sorted(progress)
    assert not w.progress.isVisible()
    canvas = w.timeline.canvas
    canvas.setFocus()
    QTest.keyClick(canvas, Qt.Key_W)  # keys typed on the rows reach the timeline
    assert w.timeline.viewport.width == pytest.approx(0.8 * (w.timeline.viewport.hi - w.timeline.viewport.lo))


def test_reopening_a_trace_uses_the_index_saved_by_the_first_open(qtbot, trace_path, monkeypatch):
    from explorer.model.timeline import index_cache, trace_index
    from explorer.ui import open_window

    monkeypatch.setattr(trace_index, "SAVE_MIN_EVENTS", 0)  # the test trace is small
    first = open_window(trace_path)
    qtbot.addWidget(first)
    qtbot.waitUntil(lambda: first.loaded is not None and (trace_path / index_cache.CACHE_FILE).is_file(),
                    timeout=20_000)
    saved = first.loaded.index.saved
    assert saved is None or not saved.persisted  # found from the tables (not mapped from a file)
    second = open_window(trace_path)
    qtbot.addWidget(second)
    qtbot.waitUntil(lambda: second.loaded is not None, timeout=20_000)
    index = second.loaded.index
    assert index.saved is not None and index.validated  # mapped, no pass over the tables, no re-validation
    assert second.timeline.render_frame() > 0
    assert [r.node.label for r in second.timeline.canvas.tree.rows()] == [
        r.node.label for r in first.timeline.canvas.tree.rows()]


def test_utilisation_follows_a_zoom_by_itself(window, qtbot):
    """After a zoom the utilisation panel catches up on its own (computed off the GUI thread)."""
    tl = window.timeline
    tl.viewport.fit()
    window.utilisation.refresh()
    whole = dict(window.utilisation.totals)
    lo, _ = window.loaded.index.span
    tl.zoom_to(lo + 60_000, lo + 72_000)
    qtbot.waitUntil(lambda: window.utilisation.totals != whole, timeout=5000)
    table = window.utilisation.table
    rows = {table.item(i, 0).text(): table.item(i, 1).text() for i in range(table.rowCount())}
    assert rows == {name: f"{pct:.1f}%" for name, pct in window.utilisation.totals.items()}
    assert window.utilisation.totals == window.utilisation.model.totals(lo + 60_000, lo + 72_000)


def test_a_failed_utilisation_refresh_says_so_until_the_next_one_works(window, qtbot, monkeypatch):
    """A range whose utilisation cannot be computed keeps the old curves and tells the user in one
    sentence (no traceback); the next range that works clears it, and the window stays up."""
    tl, panel = window.timeline, window.utilisation
    tl.viewport.fit()
    panel.refresh()
    whole = dict(panel.totals)
    assert panel.error.isHidden()
    model = panel.model

    def unreadable(*args, **kwargs):
        raise OSError(5, "Input/output error", "/traces/gone.trnx/events.parquet")

    monkeypatch.setattr(model, "series", unreadable)
    tl.setFocus()
    QTest.keyClick(tl, Qt.Key_W)
    qtbot.waitUntil(lambda: not panel.error.isHidden(), timeout=5000)
    text = panel.error.text()
    assert text == ("Still showing the previous range: cannot access /traces/gone.trnx/events.parquet: "
                    "Input/output error.")
    assert "Traceback" not in text and "\n" not in text
    assert panel.totals == whole  # the last range that worked stays on screen
    monkeypatch.undo()
    QTest.keyClick(tl, Qt.Key_W)
    qtbot.waitUntil(lambda: panel.error.isHidden(), timeout=5000)
    assert panel.error.text() == ""
    assert panel.totals != whole
    assert window.isVisible()
