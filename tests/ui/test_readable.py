"""A first screen that reads (issue 17): display names with units, no scientific notation or
"1 chips", whole dock titles, the light theme readable, legends in order and out of the way."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QTabBar

from ui.analysis_helpers import SAMPLES, open_ready, ready, row_of

from explorer.model.analysis.metrics import METRICS, format_metric, plain
from explorer.ui.themes import THEMES, apply_theme

SCIENTIFIC = re.compile(r"\de[+-]\d")


@pytest.fixture(autouse=True)
def back_to_dark():
    yield
    apply_theme("dark")


def contrast(fg: QColor, bg: QColor) -> float:
    """WCAG contrast ratio of two colours."""
    def lum(c: QColor) -> float:
        def ch(v: float) -> float:
            v /= 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * ch(c.red()) + 0.7152 * ch(c.green()) + 0.0722 * ch(c.blue())
    a, b = sorted((lum(fg), lum(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_numbers_never_read_in_scientific_notation():
    assert plain(1.007e4) == "10,070" and format_metric(1.007e4, "TFLOPS") == "10,070 TFLOPS"
    assert format_metric(8e-06, "%") == "0.000008 %" and format_metric(4e-9, "%") == "< 0.000001 %"
    assert format_metric(0.4707, "%") == "0.4707 %" and format_metric(0, "FLOP") == "0 FLOP"


def test_summary_reads_by_display_names_with_neuron_names_in_tooltips(qtbot):
    w, p = open_ready(qtbot, SAMPLES / "llama3.1-70b-tp16-straggler.trnx", size=(1500, 950))
    panel = p.summary
    w.panels["Summary"].raise_()
    qtbot.waitUntil(panel.tree.isVisible)
    total = panel._items["total_time_ns"]
    assert total.text(0) == "Total time" and "total_time_ns (ns)" in total.toolTip(0)
    assert panel._items["mfu_percent"].text(0) == "MFU" and panel._items["mfu_estimated_percent"].text(0) == "MFU bf16"
    texts = [panel.value_text(m.name, c) for m in METRICS for c in ("trace", "chip")]
    assert not [t for t in texts if SCIENTIFIC.search(t)]  # "1.007e+04 TFLOPS" read "10,066 TFLOPS"
    assert panel.value_text("peak_bf16_tflops").endswith(" TFLOPS") and "," in panel.value_text("peak_bf16_tflops")
    assert "128 cores on 16 chips did work" in panel.headline.text()
    # names in a column of their own width: none of them elided at the default dock width
    fm = panel.tree.fontMetrics()
    name_width = panel.tree.header().sectionSize(0)
    assert all(fm.horizontalAdvance(item.text(0)) + 2 * panel.tree.indentation() <= name_width
               for item in panel._items.values())
    # several chips: trace and chip columns at the dock's width, the selection column folded until asked for
    assert not panel.tree.isColumnHidden(2) and panel.tree.isColumnHidden(3)
    QTest.mouseClick(panel.column_buttons["selection"], Qt.LeftButton)
    assert not panel.tree.isColumnHidden(3)
    for name, col in (("chip", 2), ("selection", 3)):  # both fold away
        QTest.mouseClick(panel.column_buttons[name], Qt.LeftButton)
        assert panel.tree.isColumnHidden(col)
    QTest.mouseClick(panel.column_buttons["chip"], Qt.LeftButton)
    assert not panel.tree.isColumnHidden(2)


def test_one_chip_reads_singular_and_zero_flops_reads_with_a_space(window, qtbot):
    p = ready(window, qtbot)
    assert "1 chip did work" in p.summary.headline.text()
    from explorer.model.timeline.selection import area_scope

    window.view.set_area(area_scope((2,), 0, 1000))  # the DMA queue alone: no instructions
    assert "Instructions: 0 (0 FLOP)" in window.selection_summary.text.toPlainText()


def test_dock_tabs_show_whole_titles(window, qtbot):
    ready(window, qtbot)
    bars = window.findChildren(QTabBar)
    assert bars and all(b.elideMode() == Qt.ElideNone and b.usesScrollButtons() for b in bars)
    titles = {b.tabText(i) for b in bars for i in range(b.count())}
    assert {"Recommendations", "Summary", "Details"} <= titles


def test_light_theme_operator_names_and_bounds_read_on_white(window, qtbot):
    p = ready(window, qtbot)
    model = p.operators.model
    assert p.operators.select_node("kernel:0")  # (expands layer 0 and its op)
    apply_theme("light")
    base = QColor(THEMES["light"].base)
    for key in ("op:0", "op:1", "op:2", "kernel:0"):
        idx = row_of(model, key)
        assert idx.isValid(), key
        fg = model.data(idx, Qt.ForegroundRole)
        assert contrast(fg, base) >= 4.5, (key, fg.name())  # near-white names on white read 1.1
    apply_theme("dark")
    fg = model.data(row_of(model, "op:1"), Qt.ForegroundRole)
    assert contrast(fg, QColor(THEMES["dark"].base)) >= 4.5


def test_light_theme_lanes_are_not_washed_out(window, qtbot):
    ready(window, qtbot)
    tl, canvas = window.timeline, window.timeline.canvas
    tl.viewport.fit()
    canvas.repaint()
    g = canvas.geom_for_track(1)  # the Vector row: 20 ns of every 100 ns busy
    dark_px = canvas.grab().toImage().pixelColor(canvas.width() // 2, g.y + g.h // 2)
    apply_theme("light")
    canvas.repaint()
    light_px = canvas.grab().toImage().pixelColor(canvas.width() // 2, g.y + g.h // 2)
    white = QColor(THEMES["light"].base)
    assert contrast(light_px, white) > 1.4, light_px.name()  # a part-busy row shows on white (1.2 blended linearly)
    assert dark_px.name() != light_px.name()


def test_utilisation_curves_have_distinct_colours_and_no_legend_over_them(window, qtbot):
    ready(window, qtbot)
    u = window.utilisation
    assert u.plot.getPlotItem().legend is None
    hues = {name: QColor(c).hsvHue() for name, c in u.colours.items()}
    assert len(set(u.colours.values())) == len(u.colours)
    u.refresh()
    table = {u.table.item(i, 0).text(): u.table.item(i, 0).icon().isNull() for i in range(u.table.rowCount())}
    assert table and not any(table.values())  # each row carries its curve's colour
    from explorer.ui.utilisation_view import ENGINE_COLOURS

    tm, dma = QColor(ENGINE_COLOURS["TensorMatrix"]).hsvHue(), QColor(ENGINE_COLOURS["DMA"]).hsvHue()
    assert min(abs(tm - dma), 360 - abs(tm - dma)) > 60 and hues


def test_the_layer_legend_is_in_layer_order(qtbot):
    w, p = open_ready(qtbot, SAMPLES / "llama3.1-8b-decode.trnx")
    w.colour_combo.setCurrentText("layer")
    names = w.legend.names()
    layers = [n for n in names if n.startswith("layer ")]
    assert layers[:4] == ["layer 0", "layer 1", "layer 2", "layer 3"] and layers[-1] == "layer 31"


def test_the_throttling_row_is_named_for_what_it_measures(qtbot):
    from explorer.model.timeline.counter_labels import caption

    w, _ = open_ready(qtbot, SAMPLES / "gemm-4096-bf16.trnx")
    labels = [r.node.label for r in w.timeline.counter_canvas.tree.rows()]
    assert "Tensor rate allowed (Throttling)" in labels and "Throttling" not in labels
    fmt = lambda v: f"{v:.0f} %"  # noqa: E731
    assert caption("Throttling", 100.0, 100.0, None, fmt) == "not throttled (100 % all along)"
    assert caption("Throttling", 100.0, 50.0, None, fmt) == "lowest 50 %; 100 % = full rate"
    assert caption("HBM Read Bandwidth", 4000.0, 0.0, 4900.0, fmt) == "peak 4000 % (82% of hw)"
