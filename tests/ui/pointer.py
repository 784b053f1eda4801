"""Hover as a user does, for tooltip tests that must hold under Xvfb as well as offscreen."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QCursor, QMouseEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QToolTip, QWidget


def hover_until(qtbot, widget: QWidget, point: Callable[[], QPoint], wanted: str, timeout: int = 10_000) -> str:
    """Point at `point()` on `widget` until the tooltip shows `wanted`; returns the tooltip's text.

    The real pointer goes there too (on X11 QCursor.setPos moves it): a tooltip hides on any Leave or focus
    event in the application, which a pointer left elsewhere by an earlier test can cause when the tip's
    window appears under it. Each retry moves one pixel over, as a hand would (keep `point()` at least a
    pixel inside what it points at)."""
    moves = [0]

    def shown() -> bool:
        if QToolTip.isVisible() and wanted in QToolTip.text():
            return True
        pos = point() + QPoint(moves[0] % 2, 0)
        moves[0] += 1
        QCursor.setPos(widget.mapToGlobal(pos))
        QTest.mouseMove(widget, pos)
        if moves[0] > 3:  # the platform delivered the moves elsewhere (offscreen stacks every test's top-level
            # windows at the same place): hand the widget the move its own mouse tracking would have seen
            QApplication.sendEvent(widget, QMouseEvent(QEvent.Type.MouseMove, QPointF(pos),
                                                       QPointF(widget.mapToGlobal(pos)), Qt.MouseButton.NoButton,
                                                       Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier))
        return False

    try:
        qtbot.waitUntil(shown, timeout=timeout)
    except qtbot.TimeoutError:  # say what the pointer met, so a failure in a loaded suite can be read
        raise AssertionError(
            f"no tooltip {wanted!r} after {moves[0]} moves to {point()} on {widget.objectName()!r} "
            f"(visible {widget.isVisible()}, size {widget.width()}x{widget.height()}, under the pointer "
            f"{type(widget.childAt(point())).__name__ if widget.childAt(point()) else 'itself'}); "
            f"tooltip {'shown' if QToolTip.isVisible() else 'hidden'}: {QToolTip.text()!r}") from None
    return QToolTip.text()
