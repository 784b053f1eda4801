"""The query console through its real widgets: typed SQL, Ctrl+Enter, results, errors,
pinned query tracks clicked on the timeline, saved queries kept in the user's settings."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QPushButton, QTableView, QWidget

from explorer.ui.canvas_layers import GUTTER
from explorer.ui.tools.query_console import QtQueryConsole
from simcore.trace import open_trace


def console(window):
    window.panels["Query"].raise_()
    return window.findChild(QWidget, "query-console")


def type_and_run(qtbot, window, sql: str) -> QtQueryConsole:
    c = console(window)
    editor = c.findChild(QPlainTextEdit, "query-editor")
    editor.clear()
    editor.setFocus()
    QTest.keyClicks(editor, sql)
    QTest.keyClick(editor, Qt.Key_Return, Qt.ControlModifier)
    qtbot.waitUntil(lambda: c.run_button.isEnabled(), timeout=10_000)
    return c


def test_typed_query_shows_the_pandas_answer(window, qtbot, trace_path):
    c = type_and_run(qtbot, window, "SELECT opcode, count(*) AS n, sum(dur_ns) AS total FROM instructions GROUP BY 1 ORDER BY 1")
    df = open_trace(trace_path).to_pandas("instructions").astype({"opcode": str})
    want = df.groupby("opcode")["dur_ns"].agg(["count", "sum"]).sort_index()
    m = c.findChild(QTableView, "query-results").model()
    assert m.rowCount() == len(want) == 3
    assert [m.index(i, 0).data() for i in range(3)] == list(want.index)
    assert [int(m.index(i, 1).data()) for i in range(3)] == want["count"].tolist()
    assert [int(m.index(i, 2).data()) for i in range(3)] == want["sum"].tolist()
    assert c.findChild(QLabel, "query-status").text().startswith("3 rows in")
    assert not c.findChild(QPushButton, "query-pin").isEnabled()  # no start/duration columns


def test_bad_sql_is_one_sentence_in_the_console(window, qtbot):
    c = type_and_run(qtbot, window, "SELECT nope FROM kernels")
    status = c.findChild(QLabel, "query-status").text()
    assert status.startswith("the query failed:") and "nope" in status and "\n" not in status
    c = type_and_run(qtbot, window, "DROP VIEW kernels")
    assert "read-only" in c.status.text()
    c = type_and_run(qtbot, window, "SELECT count(*) AS n FROM kernels")  # the views are still there
    assert c.model.rowCount() == 1 and int(c.model.index(0, 0).data()) == 2


def test_pinned_query_track_lines_up_and_zooms_on_click(window, qtbot):
    c = type_and_run(qtbot, window, "SELECT name, start_ns, dur_ns FROM kernels WHERE name = 'softmax'")
    pin = c.findChild(QPushButton, "query-pin")
    assert pin.isEnabled()
    QTest.mouseClick(pin, Qt.LeftButton)
    tracks = window.findChild(QWidget, "query-tracks")
    qtbot.waitUntil(tracks.isVisible)
    (track,) = tracks.tracks
    assert len(track) == 1 and (track.starts[0], track.ends[0]) == (50_000, 100_000)
    window.view.viewport.set_range(0, 100_000)
    canvas = window.timeline.canvas
    assert abs(tracks.x_of(50_000) - canvas.x_of(50_000)) < 1  # same time axis as the rows under it
    img = tracks.grab().toImage()
    y = 9
    left = img.pixelColor(int(canvas.x_of(25_000)), y)  # matmul_qkv's half: nothing pinned there
    right = img.pixelColor(int(canvas.x_of(75_000)), y)  # softmax: the bar
    assert left != right
    QTest.mouseClick(tracks, Qt.LeftButton, pos=QPoint(int(canvas.x_of(75_000)), y))
    vp = window.view.viewport
    assert vp.t0 < 50_000 and 100_000 < vp.t1 and vp.t1 - vp.t0 < 100_000 * 1.6
    QTest.mouseClick(tracks, Qt.LeftButton, pos=QPoint(8, y))  # the cross unpins it
    assert not tracks.isVisible() and tracks.tracks == []


def test_double_click_on_an_id_goes_to_the_event(window, qtbot):
    c = type_and_run(qtbot, window, "SELECT id, opcode FROM instructions WHERE opcode = 'Transpose'")
    table = c.findChild(QTableView, "query-results")
    rect = table.visualRect(table.model().index(0, 0))
    QTest.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())  # a real double click's first press
    QTest.mouseDClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    ref = window.view.selected
    assert ref is not None and window.view.index.find_id(50) == ref


def test_saved_queries_are_kept_per_user(window, qtbot):
    c = console(window)
    c.editor.setPlainText("SELECT * FROM dma")
    c.save_as("my dma")
    again = QtQueryConsole(c.settings)  # a new window's console reads the same settings
    qtbot.addWidget(again)
    assert "my dma" in again.saved_names() and "Slowest kernels" in again.saved_names()
    again.saved.setCurrentText("my dma")
    again._load_saved()
    assert again.editor.toPlainText() == "SELECT * FROM dma"
    again.delete_current()
    assert "my dma" not in again.saved_names()


def test_saving_a_query_under_a_taken_name_asks_first(window, qtbot):
    from PySide6.QtWidgets import QMessageBox

    from ui.dialogs import answering, click, type_name

    c = console(window)
    c.editor.setPlainText("SELECT * FROM dma")
    assert answering(c.save_button.click, type_name("mine")) == []  # a new name: no question
    c.editor.setPlainText("SELECT * FROM kernels")
    said = []
    assert answering(c.save_button.click, type_name("mine"), click(QMessageBox.No, said)) == []
    assert said == ["There is already a saved query named 'mine'. Replace it?"]
    assert c._saved_sql()["mine"] == "SELECT * FROM dma"
    assert answering(c.save_button.click, type_name("mine"), click(QMessageBox.Yes)) == []
    assert c._saved_sql()["mine"] == "SELECT * FROM kernels"


def test_run_returns_at_once_on_a_big_trace(qtbot, tmp_path):
    """The query runs on the tools' worker: the GUI thread only starts it and shows the result."""
    from pathlib import Path

    big = Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-70b-tp16-straggler.trnx"
    c = QtQueryConsole()
    qtbot.addWidget(c)
    c.set_trace(open_trace(big, validate=False))
    c.editor.setPlainText("SELECT i.opcode, k.name, count(*) n, sum(i.dur_ns) FROM instructions i "
                          "JOIN kernels k USING (kernel_id) GROUP BY ALL ORDER BY 4 DESC")
    c.run()
    assert c.result is None and not c.run_button.isEnabled()  # returned at once: the query runs on the worker
    qtbot.waitUntil(lambda: c.run_button.isEnabled(), timeout=20_000)
    assert c.result is not None and c.result.num_rows > 10


def test_double_click_on_a_null_id_does_nothing(window, qtbot):
    """An outer join's missing id (SQL NULL) is no event to go to: the double click is ignored, not
    an error raised in the event loop."""
    c = type_and_run(qtbot, window, "SELECT k.kernel_id, i.id FROM kernels k LEFT JOIN instructions i "
                                    "ON i.kernel_id = k.kernel_id AND i.opcode = 'Nope'")
    assert c.status.text().startswith("2 rows in")
    table = c.findChild(QTableView, "query-results")
    rect = table.visualRect(table.model().index(0, 1))
    before = window.view.selected
    QTest.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    QTest.mouseDClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    assert window.view.selected == before
    c = type_and_run(qtbot, window, "SELECT count(*) AS n FROM kernels WHERE name = 'softmax'")
    assert c.status.text().startswith("1 row in")


def test_a_result_of_the_previous_trace_is_not_shown_under_the_next(window, qtbot, tmp_path):
    """A query still running when another trace opens: its rows belong to the old trace, so they
    are dropped (not shown, not pinnable onto the new timeline); the console runs queries again."""
    import threading

    from explorer.ui.tools.background import run_tool
    from model.timeline_traces import write_timeline_trace

    c = console(window)
    gate = threading.Event()
    run_tool(lambda: gate.wait(20), lambda ok, v: None)  # the tools' worker is busy: the query waits
    c.editor.setPlainText("SELECT name, start_ns, dur_ns FROM kernels")
    QTest.mouseClick(c.run_button, Qt.LeftButton)
    first = window.loaded
    window.open_path(write_timeline_trace(tmp_path / "other.trnx"))
    qtbot.waitUntil(lambda: window.loaded is not None and window.loaded is not first, timeout=20_000)
    assert c.run_button.isEnabled()  # the new trace's console is not stuck "running"
    gate.set()
    qtbot.wait(300)  # the old query finishes on the worker
    assert c.model.rowCount() == 0 and c.result is None
    assert not c.findChild(QPushButton, "query-pin").isEnabled()
    c = type_and_run(qtbot, window, "SELECT name, start_ns, dur_ns FROM kernels")
    assert c.model.rowCount() == 2 and c.pin_button.isEnabled()
