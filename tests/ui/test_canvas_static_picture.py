"""The timeline keeps its grid and rows as one picture between repaints that only change overlays.

A click or the hover line repaints the canvas without computing its rows again (at 28M events
the rows cost ~12 ms a repaint); anything the rows show (zoom, pan, colour mode, folding)
paints them afresh, so what is on screen is always what a fresh paint would show.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest


def _counting_rows(canvas) -> list[int]:
    rows = canvas.layers[1]
    calls = [0]
    paint = rows.paint

    def counted(p, f) -> None:
        calls[0] += 1
        paint(p, f)

    rows.paint = counted
    return calls


def _fresh(canvas):
    """What a paint from nothing shows (the picture dropped first)."""
    canvas.relayout()
    return canvas.grab().toImage()


def test_hover_and_click_repaint_the_overlays_only(window, qtbot):
    canvas = window.timeline.canvas
    canvas.setFocus()
    QTest.keyClick(canvas, Qt.Key_W)  # zoom in once: the rows are drawn for the new view
    canvas.grab()
    calls = _counting_rows(canvas)
    y = next(g for g in canvas.visible_geoms()[1] if g.track_id == 0).y + 5
    for x in (400, 500, 600):
        QTest.mouseMove(canvas, QPoint(x, y))
        canvas.grab()
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, QPoint(500, y))
    shown = canvas.grab().toImage()
    assert window.timeline.selected is not None and calls == [0]
    assert shown == _fresh(canvas)  # the kept picture is the one a fresh paint makes


def test_zoom_pan_colours_and_folding_repaint_the_rows(window, qtbot):
    canvas = window.timeline.canvas
    canvas.setFocus()
    canvas.grab()
    calls = _counting_rows(canvas)
    for key in (Qt.Key_W, Qt.Key_D):
        QTest.keyClick(canvas, key)
        shown = canvas.grab().toImage()
        assert shown == _fresh(canvas)
    window.colour_combo.setCurrentText("kernel")
    shown = canvas.grab().toImage()
    assert shown == _fresh(canvas)
    group = next(g for g in canvas.visible_geoms()[1] if g.row.node.is_group)
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, QPoint(30, group.y + group.h // 2))  # fold it
    shown = canvas.grab().toImage()
    assert shown == _fresh(canvas)
    assert calls[0] >= 4


def test_the_compiled_pixel_loops_paint_what_numpy_painted(window, qtbot, monkeypatch):
    """Coverage, colours, counter bins and lines from lod_kernels: the same pixels as the numpy formulas."""
    from explorer.model.timeline import counter_bins, lod
    from explorer.ui import canvas_layers

    lod.wait_for_compiled_loops()  # the window loads them beside its trace
    if not lod.compiled_loops():
        return
    tl = window.timeline
    vp = tl.viewport
    for t0, t1 in ((vp.lo, vp.hi), (vp.lo + 0.3 * (vp.hi - vp.lo), vp.lo + 0.31 * (vp.hi - vp.lo)), (1234.5, 1290.25)):
        vp.set_range(t0, t1)
        shots = []
        for compiled in (True, False):
            with monkeypatch.context() as m:
                m.setattr(canvas_layers, "HAVE_NUMBA", compiled)
                m.setattr(lod, "HAVE_NUMBA", compiled)
                m.setattr(counter_bins, "HAVE_NUMBA", compiled)
                shots.append([_fresh(c) for c in (tl.canvas, tl.counter_canvas)])
        assert shots[0] == shots[1]


def test_the_rows_colour_codes_are_each_lanes_own_looked_up_at_once(window):
    """The colours under each pixel of all rows come from one lookup per table: the codes a lookup
    per row gives, whatever order the rows are shown in (reversed here) and for empty lanes."""
    import numpy as np

    from explorer.ui.canvas_layers import RowsLayer

    index = window.loaded.index
    colours = window.timeline.state.colour_codes
    lanes = list(index.lanes.values())[::-1]
    rng = np.random.default_rng(3)
    last = np.sort(rng.integers(-3, max(ln.count for ln in lanes) + 3, size=(len(lanes), 257)), axis=1)
    got = RowsLayer._lane_codes(lanes, last, colours)
    for i, lane in enumerate(lanes):
        want = colours.codes[lane.events.name][lane.lo + np.clip(last[i], 0, lane.count - 1)] if lane.count else 0
        assert np.array_equal(got[i], want), lane.track.name
    assert {ln.events.name for ln in lanes} >= {"instructions", "dma"}


def _counter_shots(window, monkeypatch, positions=(0.1, 0.37), zooms=12) -> list[tuple]:
    """The counter canvas with its lines as images and as Qt's lines, over a zoom walk."""
    from explorer.ui import canvas_layers

    tl = window.timeline
    vp, canvas = tl.viewport, tl.counter_canvas
    lo, hi = vp.lo, vp.hi
    drawn = [0]
    images = canvas_layers.RowsLayer._paint_counter_images

    def counted(*args) -> None:
        drawn[0] += 1
        images(*args)

    monkeypatch.setattr(canvas_layers.RowsLayer, "_paint_counter_images", staticmethod(counted))
    canvas_layers._PEAK_LINES.clear()  # (the dashed 100%-of-peak line's image is made again below)
    shots = []
    for pos in positions:
        for k in range(zooms):
            width = (hi - lo) * 0.6 ** k
            t0 = lo + (hi - lo) * pos - width / 2
            vp.set_range(t0, t0 + width)
            pair = []
            for as_images in (True, False):
                monkeypatch.setattr(canvas_layers, "COUNTER_IMAGES", as_images)
                pair.append(_fresh(canvas))
            shots.append(pair)
    assert drawn[0] >= len(shots)  # the images were drawn (one call a counter row on screen)
    return shots


def test_counter_rows_drawn_as_images_are_the_lines_qt_drew(window, qtbot, monkeypatch):
    """A counter row's min..max envelope and mean, drawn as two blended images a row (the rows each
    line lights, in the pen's premultiplied colour), are pixel for pixel the translucent lines Qt drew."""
    import pytest

    from explorer.model.timeline import lod

    lod.wait_for_compiled_loops()
    if not lod.compiled_loops():
        pytest.skip("the images are drawn by the compiled loops (numba)")
    for images, lines in _counter_shots(window, monkeypatch):
        assert images == lines


def test_counter_images_on_a_capture_with_flat_counters(qtbot, monkeypatch):
    """The bundled straggler capture: counters whose min and max differ by 1e-12 somewhere (a line
    Qt draws as a point) and bandwidth rows with their dashed line at the hardware peak, in both themes."""
    from pathlib import Path

    import pytest

    from explorer.model.timeline import lod
    from explorer.ui import open_window

    w = open_window(Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-70b-tp16-straggler.trnx")
    qtbot.addWidget(w)
    w.resize(1700, 1000)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    lod.wait_for_compiled_loops()
    if not lod.compiled_loops():
        pytest.skip("the images are drawn by the compiled loops (numba)")
    from explorer.ui import canvas_layers

    for theme in ("dark", "light"):
        w.extras.set_theme(theme, save=False)
        for images, lines in _counter_shots(w, monkeypatch, positions=(0.1,), zooms=6):
            assert images == lines
        assert canvas_layers._PEAK_LINES  # its bandwidth rows' dashed line at the hardware peak was drawn as an image
