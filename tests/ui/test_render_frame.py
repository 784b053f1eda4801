"""`TimelineWidget.render_frame` paints what the event loop paints after a view change.

The frame benches time `render_frame`; if it painted more than a zoom makes the event loop paint
(the scroll bars, panes and splitter around the canvases), the figures would count work a user's
zoom never costs.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QScrollBar


class _Paints(QObject):
    """The widgets that receive a paint event, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.widgets: list[QObject] = []

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt naming)
        if event.type() == QEvent.Paint:
            self.widgets.append(obj)
        return False


def test_render_frame_paints_what_a_zoom_repaints(window, qtbot):
    tl = window.timeline
    qtbot.wait(200)  # the panels settle
    paints = _Paints()
    QApplication.instance().installEventFilter(paints)
    try:
        tl.canvas.setFocus()
        QTest.keyClick(tl.canvas, Qt.Key_W)  # zoom in: the event loop repaints what the view change dirtied
        qtbot.waitUntil(lambda: tl.canvas in paints.widgets, timeout=5_000)
        qtbot.wait(50)
        by_event_loop = set(paints.widgets)
        paints.widgets.clear()
        t0 = tl.viewport.t0
        tl.viewport.set_range(t0, t0 + tl.viewport.width / 2)  # another zoom, painted now
        assert tl.render_frame() > 0
        by_render_frame = set(paints.widgets)
    finally:
        QApplication.instance().removeEventFilter(paints)
    inside = lambda ws: {w for w in ws if w is tl or tl.isAncestorOf(w)}  # noqa: E731 (the status bar may change too)
    assert {tl.canvas, tl.counter_canvas, tl.ruler} <= by_render_frame
    assert inside(by_render_frame) == inside(by_event_loop)
    assert not any(isinstance(w, QScrollBar) for w in by_render_frame)
