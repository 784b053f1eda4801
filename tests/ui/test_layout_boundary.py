"""A change inside a panel re-lays out the panel, not the whole window: every dock's contents,
the timeline and the status bar's labels sit in a `LayoutBoundary`. Before it, a deep link made Qt
lay the main window out 6-10 times (1-2 ms each at 28M events), and the status bar's frame-time
label twice a second."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QHBoxLayout, QLabel, QWidget

from ui.analysis_helpers import ready

from explorer.ui.layout_boundary import LayoutBoundary
from explorer.ui.panes import fill


class _Layouts(QObject):
    """Counts the layout passes Qt runs for the widget it filters."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if event.type() == QEvent.LayoutRequest:
            self.count += 1
        return False


def _kernel_shown(p, kernel: int) -> bool:
    kd = p.kernel_details
    return kd.details is not None and int(kd.details.kernel["kernel_id"]) == kernel and kd.roofline.roofline is not None


def test_a_deep_link_does_not_lay_the_main_window_out(window, qtbot):
    p = ready(window, qtbot)
    window.tools.go_to_link("kernel:0")  # the panels' first fill (their sizes may grow once)
    qtbot.waitUntil(lambda: _kernel_shown(p, 0), timeout=30_000)
    qtbot.wait(300)
    layouts = _Layouts()
    window.installEventFilter(layouts)
    boundaries = window.findChildren(LayoutBoundary)
    passed = {b.objectName(): b.passed_up for b in boundaries}
    inner = p.kernel_details
    inner_layouts = _Layouts()
    inner.installEventFilter(inner_layouts)
    for link, kernel in (("kernel:1", 1), ("kernel:0", 0)):
        window.tools.go_to_link(link)
        qtbot.waitUntil(lambda k=kernel: _kernel_shown(p, k) and p.operators.current_node() == f"kernel:{k}",
                        timeout=30_000)
        qtbot.wait(600)  # the status bar's frame time changes meanwhile too
    window.removeEventFilter(layouts)
    inner.removeEventFilter(inner_layouts)
    assert inner_layouts.count > 0  # the panel laid its new contents out...
    passed = {b.objectName(): b.passed_up - passed[b.objectName()] for b in boundaries if b.passed_up > passed[b.objectName()]}
    assert layouts.count == 0, passed  # ...and the window around it was left alone


def test_a_label_that_outgrows_its_room_still_gets_it(qtbot):
    label = QLabel("view 1 ms")
    row = QWidget()
    lay = QHBoxLayout(row)
    lay.addWidget(LayoutBoundary(label))
    lay.addWidget(QLabel("a neighbour"), 1)
    qtbot.addWidget(row)
    row.resize(600, 40)
    row.show()
    qtbot.waitExposed(row)
    room = label.width()
    label.setText("view 1.234567 ms \u2013 2.345678 ms (1.111111 ms), a text wider than before")
    qtbot.waitUntil(lambda: label.width() >= label.sizeHint().width() > room)


def test_the_frame_time_changes_no_layout(window, qtbot):
    """The status bar's frame time (twice a second) is a fixed-size label with room for any time."""
    label = window.frame_label
    assert label.minimumSize() == label.maximumSize()
    for text in ("frame 0.1 ms", "frame 9999.9 ms"):
        label.setText(text)
        assert label.sizeHint().width() <= label.width()


def test_contents_that_need_more_room_than_their_dock_widen_it(window, qtbot):
    dock = window.panels["Details"]
    need = dock.width() + 120
    window.details.setMinimumWidth(need)
    qtbot.waitUntil(lambda: window.details.width() >= need)


def test_a_boundary_stands_for_its_contents_in_a_layout(qtbot):
    """Inside a layout, a boundary takes the room its contents would have taken."""
    def panel() -> QWidget:
        w = QWidget()
        fill(w, QLabel("a label of some width"), QLabel("another"))
        return w

    direct, bounded = QWidget(), QWidget()
    fill(direct, panel(), QLabel("below"))
    fill(bounded, LayoutBoundary(panel()), QLabel("below"))
    for w in (direct, bounded):
        qtbot.addWidget(w)
        w.resize(300, 200)
        w.show()
    qtbot.waitExposed(bounded)
    QApplication.processEvents()
    a = direct.layout().itemAt(0).widget()
    b = bounded.layout().itemAt(0).widget()
    assert b.geometry() == a.geometry() and b.inner.geometry().size() == a.size()
    assert [c.geometry() for c in b.inner.findChildren(QLabel)] == [c.geometry() for c in a.findChildren(QLabel)]
