"""LayoutBoundary: a dock's contents (the timeline, the status bar's view range) in a widget that
passes a layout change up only when the change could move something outside it.

Qt ends every layout pass of a widget by invalidating its parent's layout (`QLayout::activate`
calls `updateGeometry`), whether or not anything the parent reads changed. A label whose text
changed in a panel thus made Qt lay out the panel, its dock and then the whole main window
(every dock, the toolbar, the status bar): 6-10 main-window layouts after a deep link, 1-2 ms of
the GUI thread each at 28M events; the status bar's view range did it at every zoom step.

The boundary has no layout of its own: it sizes its one child to itself and stands for it in the
parent's layout with the child's size policy, explicit sizes and size hints as last passed up.
When the child has laid itself out, the boundary passes the change up only when the child's
policy, explicit sizes or visibility changed, or when the child no longer fits the room it has
(its minimum grew past it, its maximum fell under it). A size hint that moved inside the room
the child already has changes nothing on screen (a dock keeps the size it was given; a window's
size is the user's), so it is taken the next time something is passed up.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize
from PySide6.QtWidgets import QSizePolicy, QWidget, QWidgetItem

_LAYOUT_REQUEST = QEvent.LayoutRequest
_RESIZE = QEvent.Resize
_SHOW = QEvent.Show


def _own(inner: QWidget) -> tuple:
    """What the parent's layout reads of `inner` besides its hints, as comparable values."""
    p = inner.sizePolicy()
    return (inner.minimumSize().toTuple(), inner.maximumSize().toTuple(), p.horizontalPolicy().value,
            p.verticalPolicy().value, p.horizontalStretch(), p.verticalStretch(), p.hasHeightForWidth(),
            inner.isHidden())


def _fits(size: QSize, inner: QWidget) -> bool:
    """Whether `inner` can be `size` within its minimum and maximum (as a layout reads them)."""
    item = QWidgetItem(inner)
    lo, hi = item.minimumSize(), item.maximumSize()
    return lo.width() <= size.width() <= hi.width() and lo.height() <= size.height() <= hi.height()


class LayoutBoundary(QWidget):
    """Holds `inner` at its own size; see the module docstring for what it passes up."""

    def __init__(self, inner: QWidget) -> None:
        super().__init__()
        self.inner = inner
        self.setObjectName(f"boundary-{inner.objectName() or type(inner).__name__}")
        inner.setParent(self)
        inner.show()  # (shown with the boundary; setParent hides a widget)
        self._read: tuple | None = None
        self._hint = QSize()
        self._min_hint = QSize()
        self.passed_up = 0  # layout changes passed to the parent (tests, benches)
        self.stopped = 0  # the child's layout passes that changed nothing outside
        self._pass_up()

    def _pass_up(self) -> None:
        """Stand for the child as it is now, and have the parent's layout read it again."""
        inner = self.inner
        read = _own(inner)
        if read != self._read:
            self._read = read
            self.setSizePolicy(QSizePolicy(inner.sizePolicy()))
            self.setMinimumSize(inner.minimumSize())
            self.setMaximumSize(inner.maximumSize())
        self._hint = inner.sizeHint()  # (with the same explicit sizes and policy, the parent's
        self._min_hint = inner.minimumSizeHint()  # layout reads of this what it would of `inner`)
        self.passed_up += 1
        self.updateGeometry()

    def _changed_outside(self) -> bool:
        """Whether the parent's layout must read the child again: its policy, explicit sizes or
        visibility changed, or it no longer fits this widget's size and its hints moved (when they
        did not, the parent already gave it all it could)."""
        inner = self.inner
        if _own(inner) != self._read:
            return True
        return not _fits(self.size(), inner) and (inner.minimumSizeHint(), inner.sizeHint()) != (self._min_hint, self._hint)

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(self._hint)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(self._min_hint)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return self.inner.hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self.inner.heightForWidth(width)

    def event(self, e: QEvent) -> bool:
        t = e.type()
        if t == _LAYOUT_REQUEST:  # the child laid itself out (or its constraints moved)
            if self._changed_outside():
                self._pass_up()
            else:
                self.stopped += 1
            return True
        if t == _RESIZE:
            self.inner.setGeometry(self.rect())
            if self._changed_outside():  # the parent went by hints the child has outgrown
                self._pass_up()
        elif t == _SHOW and self._changed_outside():  # (no request reaches a hidden boundary)
            self._pass_up()
        return super().event(e)
