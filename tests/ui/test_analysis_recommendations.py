"""Recommendations panel: see a recommendation, read its evidence, follow its links (timeline jumps).

The tiny-llm trace fires two rules: `collective_straggler` (rank 1 arrives last at all-reduce 1,
10 us after the next-to-last) and `small_dma_transfers` (64 KiB over 128 partitions = 512 B each).
"""

from __future__ import annotations

import re

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from ui.analysis_helpers import SAMPLES, open_ready, ready
from model.timeline_traces import DMA_ID0

from explorer.model.analysis.recommendations import recommend
from explorer.model.timeline.trace_index import EventRef


def click_item(widget, row: int) -> None:
    item = widget.item(row)
    widget.scrollToItem(item)
    QTest.mouseClick(widget.viewport(), Qt.LeftButton, Qt.NoModifier, widget.visualItemRect(item).center())


def test_see_a_recommendation_and_follow_its_links(window, qtbot):
    p = ready(window, qtbot)
    panel = window.findChild(QWidget, "recommendations")
    assert panel is p.recommendations
    want = recommend(window.loaded.index.trace)
    assert [r.rule for r in panel.recommendations] == [r.rule for r in want]
    assert panel.list.count() == 2
    window.panels["Recommendations"].raise_()
    qtbot.waitUntil(panel.list.isVisible)
    row = [r.rule for r in panel.recommendations].index("small_dma_transfers")
    click_item(panel.list, row)
    text = panel.text.toPlainText()
    assert "10 of 10 DMA transfers move under 2 KiB per partition" in text
    assert "mean small bytes per partition\n512 B" in text  # the evidence, with its unit
    assert "small transfer time\n10 us" in text and "of the trace's critical path" in text
    labels = [panel.links.item(i).text() for i in range(panel.links.count())]
    assert labels == ["\u2192 most small transfers: kernel matmul_qkv #0 (chip 0 core 0)",
                      f"\u2192 longest small transfer dma:{DMA_ID0}"]
    tl = window.timeline
    click_item(panel.links, 1)  # the transfer [0, 1000)
    assert tl.selected == EventRef("dma", 0)
    assert tl.viewport.t0 <= 0 and 1000 <= tl.viewport.t1 < 3000
    qtbot.waitUntil(lambda: p.operators.current_node() == f"dma:{DMA_ID0}", timeout=30_000)
    click_item(panel.links, 0)  # the kernel [0, 50 us)
    assert tl.selected == EventRef("kernels", 0)
    assert tl.viewport.t0 <= 0 and 50_000 <= tl.viewport.t1 < 60_000
    qtbot.waitUntil(lambda: p.operators.current_node() == "kernel:0")  # in a pass after the timeline's repaint
    assert panel.list.isVisible() and panel.links.isVisible()  # following a link keeps the list in view
    # the straggler's links: first the late chip's own rows up to its arrival, then the collective's ranks
    click_item(panel.list, [r.rule for r in panel.recommendations].index("collective_straggler"))
    assert "Chip 1 arrived last" in panel.text.toPlainText()
    window._fold(True)  # every chip folded: following the link unfolds what the evidence is on
    assert tl.canvas.geom_for_track(5) is None
    click_item(panel.links, 0)
    assert tl.area is not None and tl.area.track_ids == (5,) and (tl.area.t0, tl.area.t1) == (25_000, 70_000)
    assert tl.canvas.geom_for_track(5) is not None
    assert panel.list.isVisible()
    window._fold(True)
    click_item(panel.links, 1)
    assert tl.area is not None and tl.area.track_ids == (4, 5, 6) and (tl.area.t0, tl.area.t1) == (60_000, 72_000)
    assert tl.viewport.t0 <= 60_000 and 72_000 <= tl.viewport.t1 < 80_000
    assert all(tl.canvas.geom_for_track(t) is not None for t in (4, 5, 6))


def test_mxfp8_advice_on_the_bf16_gemm_links_to_its_kernel(qtbot):
    w, p = open_ready(qtbot, SAMPLES / "gemm-4096-bf16.trnx")
    panel = p.recommendations
    rules = [r.rule for r in panel.recommendations]
    assert rules[0] == "mxfp8_for_bf16_matmul"  # the biggest impact first
    speedup = float(re.search(r"would run about ([0-9.]+)x faster in MXFP8", panel.list.item(0).text()).group(1))
    assert 2.0 < speedup <= 4.0  # never above the preset's MXFP8 / BF16 peak ratio (4x on trn3)
    w.panels["Recommendations"].raise_()
    qtbot.waitUntil(panel.links.isVisible)
    w.timeline.zoom_to(0, 1000)
    click_item(panel.links, 0)
    assert w.timeline.selected == EventRef("kernels", 0)
    assert p.kernel_details.kernel_id == 0
    qtbot.waitUntil(lambda: "matmul_gemm" in p.kernel_details.header.text(), timeout=30_000)
    assert w.timeline.viewport.width > 1_800_000  # the whole 1.86 ms kernel is in view


def test_the_shown_recommendations_evidence_is_drawn_as_warning_bands_and_can_be_hidden(window, qtbot):
    p = ready(window, qtbot)
    panel = p.recommendations
    window.panels["Recommendations"].raise_()
    qtbot.waitUntil(panel.list.isVisible)
    assert not p.bands[0].isVisible()  # nothing is drawn until a recommendation is chosen
    click_item(panel.list, [r.rule for r in panel.recommendations].index("small_dma_transfers"))
    rec = panel.current()
    assert len(rec.bands) == 10 and set(rec.bands.track_id.tolist()) == {2}  # the 10 small transfers on qSyncIO0
    bands = p.bands[0]
    assert bands.isVisible() and bands.bands is rec.bands
    tl, canvas = window.timeline, window.timeline.canvas
    tl.zoom_to(9_000, 12_000)  # transfer 1: [10 us, 11 us)
    canvas.repaint()
    image = canvas.grab().toImage()
    g = canvas.geom_for_track(2)
    inside = image.pixelColor(int(canvas.x_of(10_500)), g.y + g.h // 2)
    outside = image.pixelColor(int(canvas.x_of(9_300)), g.y + g.h // 2)
    assert inside.red() > inside.blue() + 60 and outside.name() != inside.name()  # amber over the transfer only
    other = canvas.geom_for_track(1)  # another row at the same time: the faint full-height band
    faint = image.pixelColor(int(canvas.x_of(10_500)), other.y + 1)
    assert faint.name() != image.pixelColor(int(canvas.x_of(9_300)), other.y + 1).name()
    box = panel.show_evidence
    on_box = QPoint(8, box.height() // 2)  # the tick box itself
    QTest.mouseClick(box, Qt.LeftButton, Qt.NoModifier, on_box)  # off
    assert not box.isChecked() and not bands.isVisible()
    QTest.mouseClick(box, Qt.LeftButton, Qt.NoModifier, on_box)
    assert bands.isVisible()
    click_item(panel.list, [r.rule for r in panel.recommendations].index("collective_straggler"))
    assert bands.bands is panel.current().bands and bands.bands.track_id.tolist() == [5]  # chip 1 came last once
