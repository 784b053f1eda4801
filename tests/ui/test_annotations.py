"""Annotations through the real widgets: M at the pointer (snapped), ranges, notes, deltas,
the file they are saved in, and the Chrome/Perfetto exports that carry them."""

from __future__ import annotations

import json

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QTableView, QToolButton, QWidget

from explorer.cli.main import main
from explorer.model import annotations as A
from explorer.model.timeline.selection import area_scope
from explorer.ui.tools.annotations_view import MARKER


def row_y(canvas, key: str) -> int:
    pinned, rows = canvas.visible_geoms()
    g = next(g for g in pinned + rows if g.row.key == key)
    return g.y + g.h // 2


def test_m_drops_a_snapped_marker_that_is_saved_and_drawn(window, qtbot, trace_path):
    canvas = window.timeline.canvas
    window.view.viewport.set_range(0, 10_000)
    y = row_y(canvas, "track:0")  # TensorMatrix: MultiplyMoving at k*1000 .. k*1000 + 800
    x = int(canvas.x_of(3_010))  # 10 ns right of an instruction's start: within the snap distance
    QTest.mouseMove(canvas, QPoint(x, y))
    qtbot.waitUntil(lambda: window.view.hover_t is not None)
    QTest.keyClick(canvas, Qt.Key_M)
    panel = window.findChild(QWidget, "annotations")
    (a,) = panel.items
    assert (a.kind, a.t0, a.track_id) == ("marker", 3_000, 0)
    saved = json.loads((trace_path / "annotations.json").read_text())
    assert saved["format"] == "trnx-annotations" and saved["version"] == 1 and saved["annotations"][0]["t0"] == 3_000
    assert not [p for p in trace_path.iterdir() if ".tmp-" in p.name]  # written through a temporary sibling
    window.view.set_hover(None)  # the pointer leaves: its hover line no longer covers the marker's
    img = canvas.grab().toImage()
    xm = int(canvas.x_of(3_000))
    assert sum(img.pixelColor(xm + dx, yy) == MARKER for dx in (-1, 0, 1) for yy in range(img.height())) > img.height() // 4


def test_m_takes_the_row_the_hover_line_was_drawn_for_not_the_global_cursor(window, qtbot):
    """The marker's row comes from the pointer's last move over the canvas, as its time does: the
    global cursor can disagree (a window moved under it, a platform that reports it late), and then
    the marker lost its row (a flaky landing run had track_id None)."""
    canvas = window.timeline.canvas
    window.view.viewport.set_range(0, 10_000)
    x, y = int(canvas.x_of(3_010)), row_y(canvas, "track:0")
    QTest.mouseMove(canvas, QPoint(x + 40, y))  # Qt drops a move to where the pointer already is
    QTest.mouseMove(canvas, QPoint(x, y))
    qtbot.waitUntil(lambda: window.view.hover_t is not None and abs(window.view.hover_t - 3_010) < 20)
    QCursor.setPos(canvas.mapToGlobal(QPoint(x, canvas.height() + 500)))  # the global cursor elsewhere
    QTest.keyClick(canvas, Qt.Key_M)
    (a,) = window.findChild(QWidget, "annotations").items
    assert (a.t0, a.track_id) == (3_000, 0)


def test_m_without_a_trace_is_an_ordinary_key_not_an_error_dialog(qtbot, monkeypatch):
    """Typing an M anywhere while no trace is open (a path in the capture dialog, say) must not
    raise a modal "open a trace first" error: the shortcut is off until a trace is on screen."""
    from PySide6.QtWidgets import QMessageBox

    from explorer.ui import open_window

    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: shown.append(a))
    w = open_window()
    qtbot.addWidget(w)
    qtbot.waitExposed(w)
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5000)
    QTest.keyClick(w, Qt.Key_M)
    qtbot.wait(50)
    assert shown == [] and not w.findChild(QWidget, "annotations").items


def test_range_note_delta_and_reopen(window, qtbot, trace_path):
    panel = window.findChild(QWidget, "annotations")
    panel.add_marker(10_000, note="a")
    window.view.set_area(area_scope([0, 1], 20_000, 30_000))
    QTest.mouseClick(panel.findChild(QToolButton, "annotate-range"), Qt.LeftButton)
    assert [(a.kind, a.t0, a.t1) for a in panel.items] == [("marker", 10_000, 10_000), ("range", 20_000, 30_000)]
    panel.set_note(2, "the slow part")
    table = panel.findChild(QTableView, "annotations-table")
    assert table.model().cell_text(1, "note") == "the slow part"
    panel.add_marker(30_000)
    table.selectRow(0)
    QTest.mouseClick(table.viewport(), Qt.LeftButton, Qt.ControlModifier, table.visualRect(table.model().index(2, 0)).center())
    label = panel.findChild(QLabel, "annotations-delta")
    qtbot.waitUntil(lambda: "instructions" in label.text(), timeout=10_000)
    assert label.text().startswith("\u0394 20 us between #1 and #3")
    assert panel.delta.instructions == 20 + 200  # 20 MultiplyMoving and 200 TensorTensor start in [10 us, 30 us)
    window.close_trace()
    window.open_path(trace_path)
    qtbot.waitUntil(lambda: window.loaded is not None and len(panel.items) == 3, timeout=20_000)
    assert panel.items[1].note == "the slow part"


def test_exports_carry_the_annotations(window, qtbot, trace_path, tmp_path, capsys):
    store = A.AnnotationSet(trace_path)
    store.add_marker(5_000, "here")
    store.add_range(60_000, 70_000, "straggler")
    out = tmp_path / "t.json"
    try:
        main(["export", str(trace_path), "--format", "chrome-json", "-o", str(out)])
    except SystemExit as exc:
        assert not exc.code
    events = json.loads(out.read_text())["traceEvents"]
    notes = {e["name"]: e for e in events if e.get("cat") == "annotation"}
    assert notes["here"]["ph"] == "i" and notes["here"]["ts"] == 5.0
    assert notes["straggler"]["ph"] == "X" and (notes["straggler"]["ts"], notes["straggler"]["dur"]) == (60.0, 10.0)
    pf = tmp_path / "t.pftrace"
    try:
        main(["export", str(trace_path), "--format", "perfetto", "-o", str(pf)])
    except SystemExit as exc:
        assert not exc.code
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    trace.ParseFromString(pf.read_bytes())
    uuid = next(p.track_descriptor.uuid for p in trace.packet if p.track_descriptor.name == "Annotations")
    evs = [(p.track_event.type, p.timestamp, p.track_event.name) for p in trace.packet
           if p.HasField("track_event") and p.track_event.track_uuid == uuid]
    assert evs == [(pb.TrackEvent.TYPE_INSTANT, 5_000, "here"), (pb.TrackEvent.TYPE_SLICE_BEGIN, 60_000, "straggler"),
                   (pb.TrackEvent.TYPE_SLICE_END, 70_000, "")]


def test_a_damaged_file_is_one_sentence(window, qtbot, trace_path):
    (trace_path / "annotations.json").write_text("{not json")
    window.show_error_dialogs = False
    window.close_trace()
    window.open_path(trace_path)
    qtbot.waitUntil(lambda: window.loaded is not None, timeout=20_000)
    damaged = f"{trace_path / 'annotations.json'} is damaged (it is not JSON): it is left as it is; move it aside to annotate afresh."
    assert window.statusBar().currentMessage() == f"annotations: {damaged}"
    panel = window.findChild(QWidget, "annotations")
    window.panels["Annotations"].raise_()
    assert panel.findChild(QLabel, "annotations-delta").text() == damaged  # the panel says why it is empty
    window.statusBar().clearMessage()
    QTest.mouseClick(panel.findChild(QToolButton, "annotate-marker"), Qt.LeftButton)  # annotating anyway
    assert window.statusBar().currentMessage() == f"annotations: {damaged}"  # not "open a trace first"
    assert panel.items == []
    assert (trace_path / "annotations.json").read_text() == "{not json"  # never overwritten
    window.close_trace()
    assert panel.findChild(QLabel, "annotations-delta").text() == ""


def test_overwrite_refuses_a_trace_holding_annotations(trace_path):
    """annotations.json is the user's work: the explorer may write it into the trace, but
    --overwrite (simcore.trace.target) then refuses the trace and leaves the file alone."""
    from simcore.errors import UserError
    from simcore.trace.target import check_target

    check_target(trace_path, overwrite=True)  # a trace of ours: --overwrite may replace it
    A.AnnotationSet(trace_path).add_marker(1000, "mine")
    try:
        check_target(trace_path, overwrite=True)
    except UserError as exc:
        assert "annotations.json" in str(exc)
    else:
        raise AssertionError("--overwrite would replace the user's annotations")
    assert A.load(trace_path)[0].note == "mine"
