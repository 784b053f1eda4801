"""Hover as a user does, for tooltip tests that must hold under Xvfb as well as offscreen."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPoint
from PySide6.QtGui import QCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QToolTip, QWidget


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
        return False

    qtbot.waitUntil(shown, timeout=timeout)
    return QToolTip.text()
