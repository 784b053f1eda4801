"""The summary panel (objectName `summary`) shows what `trnx summary --json` prints, for the
whole trace, per chip and for the selection (visible range or area), compared programmatically."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from model import analysis_traces as at
from ui.analysis_helpers import SAMPLES, open_ready

from explorer.model.analysis.metrics import METRICS, format_metric
from explorer.model.analysis.summary import summarize


def trnx_json(*args) -> dict:
    proc = subprocess.run([sys.executable, "-m", "explorer.cli.main", *map(str, args), "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def shown(panel, column: str) -> dict[str, str]:
    return {m.name: panel.value_text(m.name, column) for m in METRICS}


def expected(metrics: dict) -> dict[str, str]:
    return {m.name: format_metric(metrics[m.name], m.unit) for m in METRICS}


def test_whole_trace_and_each_chip_match_trnx_summary_json(qtbot, tmp_path):
    path = at.write(tmp_path / "basic.trnx")  # 2 chips, throttling, collectives, kernel-only core
    report = trnx_json("summary", path, "--per-chip", "--no-recommendations")
    w, p = open_ready(qtbot, path)
    panel = w.findChild(QWidget, "summary")
    assert panel is p.summary
    assert shown(panel, "trace") == expected(report["metrics"])
    assert shown(panel, "chip") == expected(report["per_chip"]["0"])
    assert not panel.tree.isColumnHidden(2) and panel.chip_combo.isVisible()
    panel.chip_combo.setFocus()
    QTest.keyClick(panel.chip_combo, Qt.Key_Down)  # chip 1
    assert panel.tree.headerItem().text(2) == "chip 1"
    assert shown(panel, "chip") == expected(report["per_chip"]["1"])
    # tooltips: the definition from METRICS, and why a value is n/a
    item = panel._items["mfu_estimated_percent"]
    assert "hardware_flops_bf16 - transpose_flops_bf16" in item.toolTip(1)
    assert "MFU" in panel.headline.text() and "<b>" in panel.headline.text()


def test_the_selection_column_follows_the_visible_range_and_the_area(qtbot):
    path = SAMPLES / "gemm-4096-bf16.trnx"
    w, p = open_ready(qtbot, path)
    panel = p.summary
    assert panel.tree.isColumnHidden(2)  # one chip: the chip column would repeat the whole trace
    report = trnx_json("summary", path, "--no-recommendations")
    assert shown(panel, "trace") == expected(report["metrics"])
    # zoom in with the keyboard: the selection column becomes `trnx summary --range` of the view
    tl = w.timeline
    tl.canvas.setFocus()
    before = panel.selection_scope
    for _ in range(4):
        QTest.keyClick(tl, Qt.Key_W)
    qtbot.waitUntil(lambda: panel.selection_scope != before and panel.summaries["selection"] is not None
                    and panel.summaries["selection"].scope["t1_ns"] == panel.selection_scope.t1, timeout=20_000)
    t0, t1, tracks = panel.selection_scope.t0, panel.selection_scope.t1, panel.selection_scope.track_ids
    assert tracks is None and t1 - t0 < 0.5 * (tl.index.span[1] - tl.index.span[0])
    ranged = trnx_json("summary", path, "--range", f"{t0}:{t1}", "--no-recommendations")
    assert shown(panel, "selection") == expected(ranged["metrics"])
    assert "visible range" in panel.scope_label.text()
    # the column fits its new texts (fitted once after the fill, not per row)
    header = panel.tree.header()
    qtbot.waitUntil(lambda: header.sectionSize(3) == max(panel.tree.sizeHintForColumn(3), header.sectionSizeHint(3)))
    # Shift+drag an area over two engine rows: the selection column is that area's summary
    canvas = tl.canvas
    geoms = [g for g in canvas.visible_geoms()[1] if g.track_id is not None
             and tl.index.tracks[g.track_id].kind in ("tensor_matrix", "vector")]
    ga, gb = geoms[0], geoms[-1]
    xa, xb = canvas.x_of(t0 + (t1 - t0) * 0.2), canvas.x_of(t0 + (t1 - t0) * 0.7)
    QTest.mousePress(canvas, Qt.LeftButton, Qt.ShiftModifier, QPoint(int(xa), ga.y + 3))
    QTest.mouseMove(canvas, QPoint(int(xa) + 20, gb.y + 3))
    QTest.mouseMove(canvas, QPoint(int(xb), gb.y + 3))
    QTest.mouseRelease(canvas, Qt.LeftButton, Qt.ShiftModifier, QPoint(int(xb), gb.y + 3))
    area = tl.area
    assert area is not None and len(area.track_ids) >= 2
    qtbot.waitUntil(lambda: panel.selection_scope.track_ids is not None and panel.summaries["selection"] is not None
                    and panel.summaries["selection"].scope.get("track_ids") is not None, timeout=20_000)
    want = summarize(tl.index.trace, time_range=(int(area.t0), int(area.t1)), track_ids=area.track_ids)
    assert shown(panel, "selection") == expected(json.loads(json.dumps(want.metrics)))
    assert f"area of {len(area.track_ids)} rows" in panel.scope_label.text()


def test_closing_the_trace_clears_the_panels_and_an_imported_trace_says_what_is_missing(window, qtbot, tmp_path):
    from ui.analysis_helpers import ready

    p = ready(window, qtbot)
    assert p.summary.value_text("kernel_count") == "2"
    file_menu = window.menuBar().actions()[0].menu()
    next(a for a in file_menu.actions() if a.text() == "&Close trace").trigger()
    assert p.session.analysis is None and p.operators.model.rowCount() == 0
    assert p.summary.value_text("kernel_count") == "" and p.recommendations.list.count() == 0
    assert "Open a trace" in p.summary.headline.text()
    # a PyTorch-profiler import has no Trainium hardware keys: MFU is n/a and the tooltip says why
    from interop.kineto_samples import write_ranks

    from explorer.interop import import_kineto

    out = tmp_path / "run.trnx"
    import_kineto(write_ranks(tmp_path), out)
    window.open_path(out)
    qtbot.waitUntil(lambda: p.session.analysis is not None, timeout=30_000)
    assert Path(p.session.analysis.trace.path).resolve() == out.resolve()
    assert p.summary.value_text("mfu_estimated_percent") == "n/a"
    assert "n/a: the trace's hardware lacks tensor.rows" in p.summary._items["mfu_estimated_percent"].toolTip(1)
    p.session.go_to_node("kernel:0")
    qtbot.waitUntil(lambda: "the roofline has no roofs" in p.kernel_details.header.text(), timeout=30_000)
    qtbot.wait(50)  # (the plot is drawn in a pass of its own)
    assert p.kernel_details.roofline.point() is None


def test_the_step_breakdown_shows_what_trnx_summary_prints(qtbot):
    """The panel's 'where the step's time goes' rows are `trnx summary --json`'s step_breakdown, formatted."""
    from explorer.model.units import format_ns

    path = SAMPLES / "llama3.1-8b-decode.trnx"
    report = trnx_json("summary", path, "--no-recommendations")["step_breakdown"]
    w, p = open_ready(qtbot, path)
    panel = p.summary
    assert not panel.breakdown_group.isHidden() and f"chip {report['chip']}" in panel.breakdown_group.text(0)
    for part in report["parts"]:
        want = f"{part['label']}: {format_ns(part['ns'])} ({part['percent']:.1f}%)" if part["percent"] >= 0.05 else ""
        assert panel.breakdown_text(part["category"]) == want, part["category"]
    assert any(panel.breakdown_text(c) for c in ("hbm", "dma_latency", "compute"))
