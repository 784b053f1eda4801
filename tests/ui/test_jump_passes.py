"""A jump's parts come in separate passes of the event loop: the timeline repaints first, the
operator tree follows, the Kernel details panel's header keeps its height, and a table behind a
tab is fitted when it is shown. Each part's repaint costs 10-30 ms of the GUI thread at 28M
events; done in one pass they froze the window for their sum (bench/gui_passes.py)."""

from __future__ import annotations

import time

import pandas as pd
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QLabel, QTabWidget

from ui.analysis_helpers import ready

from explorer.ui import frame_table as F


class _Painted(QObject):
    """Appends `word` to `log` at each paint of the widget it filters."""

    def __init__(self, log: list[str], word: str = "timeline painted") -> None:
        super().__init__()
        self.log, self.word = log, word

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if event.type() == QEvent.Paint:
            self.log.append(self.word)
        return False


def test_after_a_deep_link_the_timeline_repaints_before_the_tree_follows(window, qtbot):
    p = ready(window, qtbot)
    ops, canvas = p.operators, window.timeline.canvas
    qtbot.wait(200)  # the analyses' own repaints done
    log: list[str] = []
    painted = _Painted(log)
    canvas.installEventFilter(painted)
    ops.view.selectionModel().currentRowChanged.connect(lambda cur, _prev: log.append(f"tree {ops.current_node()}"))
    window.tools.go_to_link("kernel:1")
    assert log == []  # nothing drawn or moved inside the call
    qtbot.waitUntil(lambda: ops.current_node() == "kernel:1")
    canvas.removeEventFilter(painted)
    assert "timeline painted" in log and log.index("timeline painted") < log.index("tree kernel:1")


def test_the_kernel_header_keeps_its_height_while_the_next_kernel_is_computed(window, qtbot):
    """A shorter header ("computing...", or a kernel with fewer notes) would move and resize the
    tables and plot under it: the header keeps the tallest height it has had."""
    p = ready(window, qtbot)
    kd = p.kernel_details
    window.tools.go_to_link("kernel:0")
    qtbot.waitUntil(lambda: kd.details is not None and kd.roofline.roofline is not None, timeout=30_000)
    qtbot.wait(50)
    tabs_at = kd.tabs.geometry()
    full = kd.header.height()
    window.tools.go_to_link("kernel:1")
    assert "computing" in kd.header.text()  # one line where the full header has several
    plain = QLabel(kd.header.text())  # what the text alone needs at that width
    plain.setWordWrap(True)
    assert plain.heightForWidth(kd.header.width()) < full
    for _ in range(5):
        QApplication.processEvents()
    assert kd.tabs.geometry() == tabs_at and kd.header.height() == full
    qtbot.waitUntil(lambda: kd.details is not None and int(kd.details.kernel["kernel_id"]) == 1, timeout=30_000)


def test_a_table_behind_a_tab_is_fitted_when_it_is_shown(qtbot):
    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    front = F.make_table(F.FrameTableModel([F.Column("a", "a")]), "front")
    model = F.FrameTableModel([F.Column("name", "name"), F.Column("n", "count", F.count), F.Column("x", "x")])
    back = F.make_table(model, "back")
    tabs.addTab(front, "front")
    tabs.addTab(back, "back")
    tabs.resize(900, 300)
    tabs.show()
    qtbot.waitExposed(tabs)
    before = back.columnWidth(0)
    long = "a much longer event name than a column's default width " * 2
    model.set_frame(pd.DataFrame({"name": [long], "n": [3_000_000], "x": [""]}))
    qtbot.wait(100)
    assert back.columnWidth(0) == before  # hidden: not measured (Qt would measure every row)
    tabs.setCurrentWidget(back)
    qtbot.waitUntil(lambda: back.columnWidth(0) >= back.fontMetrics().horizontalAdvance(long))
    assert back.columnWidth(1) == max(back.sizeHintForColumn(1), back.horizontalHeader().sectionSizeHint(1))


def test_a_kernels_roofline_is_drawn_in_one_repaint(qtbot, trace_path):
    """pyqtgraph places the view's transform and labels as it paints, and what moves then asked
    for a second repaint of the plot (~10 ms at 28M events); they are placed when the kernel is shown."""
    from simcore.trace import open_trace

    from explorer.model.analysis.kernel_details import kernel_details
    from explorer.ui.roofline_plot import QtRoofline

    trace = open_trace(trace_path)
    roof = QtRoofline()
    qtbot.addWidget(roof)
    roof.resize(600, 330)
    roof.show()
    qtbot.waitExposed(roof)
    log: list[str] = []
    painted = _Painted(log, "plot painted")
    roof.plot.viewport().installEventFilter(painted)
    for kernel_id in (0, 1, 0):
        d = kernel_details(trace, kernel_id)
        roof.show_roofline(d.roofline, str(d.kernel["name"]))
        roof.caption.setMinimumHeight(200)  # (the caption's height is the panel's business)
        log.clear()
        for _ in range(6):
            QApplication.processEvents()
        assert log == ["plot painted"], kernel_id
        assert roof.point() is not None


def test_a_kernel_link_repaints_the_roofline_once(window, qtbot, monkeypatch):
    """Greying the previous kernel's plot while the next one is computed repainted it unchanged (a
    disabled pyqtgraph plot looks the same; 5-15 ms at 28M events), and a caption that grew (the
    first kernel of a trace) resized the plot after it was drawn, which drew it again: one repaint
    per kernel shown."""
    from explorer.ui import kernel_details_view

    compute = kernel_details_view.kernel_details

    def slow(*args):  # as a kernel of a big trace takes: the greying passes run meanwhile
        time.sleep(0.3)
        return compute(*args)

    monkeypatch.setattr(kernel_details_view, "kernel_details", slow)
    p = ready(window, qtbot)
    kd, roof = p.kernel_details, p.kernel_details.roofline
    window.tools.go_to_link("kernel:0")
    qtbot.waitUntil(lambda: kd.details is not None and roof.roofline is not None, timeout=30_000)
    log: list[str] = []
    painted = _Painted(log, "plot painted")
    roof.plot.viewport().installEventFilter(painted)
    for kernel in (1, 0):
        roof.caption.setMinimumHeight(0)
        roof.caption.setText("")  # a shorter caption before: the new one grows it
        qtbot.wait(200)
        log.clear()
        window.tools.go_to_link(f"kernel:{kernel}")
        qtbot.waitUntil(lambda: roof.roofline is not None and kd.details is not None
                        and int(kd.details.kernel["kernel_id"]) == kernel, timeout=30_000)
        qtbot.wait(300)
        assert roof.caption.isEnabled() and roof.caption.height() >= roof.caption.heightForWidth(roof.caption.width())
        assert log == ["plot painted"], kernel
    roof.plot.viewport().removeEventFilter(painted)


def test_following_an_event_far_down_its_kernel_lays_its_rows_out_once(qtbot):
    """Expanding the kernel to an event ~900 rows down, Qt fetched another chunk under the row it
    expanded, and rows inserted under an expanded row made it lay the whole tree out again at once:
    2,651 rows handed over and ~4,300 calls into the model (~20-35 ms at 28M events) for 1,151."""
    from ui.analysis_helpers import SAMPLES, open_ready
    from ui.call_counts import count_calls

    from explorer.ui.operators_view import CHUNK, OperatorTreeModel, kernel_table

    _w, p = open_ready(qtbot, SAMPLES / "gemm-4096-bf16.trnx")
    ops = p.operators
    h = ops.model.h
    rows = h.children("kernel:0")
    ops.model.keep_kernel_rows(h, "kernel:0", rows, kernel_table(rows, None, True))  # as the selection's worker does
    key = rows["node"].iloc[900]
    selected, calls = count_calls({OperatorTreeModel.index: "index", OperatorTreeModel.fetchMore: "fetchMore"},
                                  lambda: ops.select_node(key))
    assert selected
    assert ops.current_node() == key
    handed = ops.model.rowCount(ops.model.index_for("kernel:0"))
    assert handed == 900 + 1 + CHUNK // 2  # the rows up to it and half a chunk after, as index_for gave them
    assert calls["fetchMore"] == 0 and calls["index"] < handed + 100  # each laid out once
    ops.view.scrollToBottom()  # scrolling to the end of what is there still fetches more
    qtbot.waitUntil(lambda: ops.model.rowCount(ops.model.index_for("kernel:0")) > handed)
