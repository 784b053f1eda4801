"""QtIcicle (objectName `icicle`): model -> layer -> op -> kernel as an icicle, by time or a kernel column.

`explorer.model.icicle` lays the boxes out (computed on the tools' worker); this widget
paints them one row per depth, coloured by name, labelled where wide enough. Hover shows a
box's value and share; a click zooms the timeline to the box's time span (and, for a layer
or an op, selects it in the operator tree); the wheel zooms the icicle itself at the
pointer, double-click resets it.
"""

from __future__ import annotations

import zlib

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QToolTip, QVBoxLayout, QWidget

from explorer.model.icicle import VALUES, Box, icicle, why_empty
from explorer.model.units import format_bytes, format_count, format_ns
from explorer.ui import palette as P
from explorer.ui.tools.background import run_tool
from explorer.ui.tools.when_shown import WhenShown

ROW_H = 22
FORMAT = {"dur_ns": format_ns, "flops": lambda v: f"{format_count(v)}FLOP", "model_flops": lambda v: f"{format_count(v)}FLOP",
          "hbm_read_bytes": format_bytes, "hbm_write_bytes": format_bytes}


class _Canvas(QWidget):
    clicked = Signal(object)  # Box

    def __init__(self, owner: QtIcicle) -> None:
        super().__init__(owner)
        self.owner = owner
        self.setMouseTracking(True)
        self.setMinimumHeight(ROW_H * 4 + 2)
        self.view = (0.0, 1.0)  # the visible fraction of the whole

    def x_of(self, f: float) -> float:
        a, b = self.view
        return (f - a) / (b - a) * self.width()

    def box_at(self, x: float, y: float) -> Box | None:
        depth = int(y // ROW_H)
        a, b = self.view
        f = a + x / max(self.width(), 1) * (b - a)
        return next((bx for bx in self.owner.boxes if bx.depth == depth and bx.x0 <= f < bx.x1), None)

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.fillRect(self.rect(), P.BACKGROUND)
        for bx in self.owner.boxes:
            x0, x1 = self.x_of(bx.x0), self.x_of(bx.x1)
            if x1 < 0 or x0 > self.width() or x1 - x0 < 0.5:
                continue
            r = QRectF(x0, bx.depth * ROW_H, max(x1 - x0 - 1, 0.5), ROW_H - 1)
            hue = zlib.crc32(bx.name.encode()) % 360
            p.fillRect(r, QColor.fromHsv(hue, 110, 210))
            if r.width() > 40:
                p.setPen(QColor("#111111"))
                p.drawText(r.adjusted(3, 0, -2, 0), Qt.AlignVCenter | Qt.AlignLeft,
                           p.fontMetrics().elidedText(bx.name, Qt.ElideRight, int(r.width() - 5)))
        p.end()

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        bx = self.box_at(event.position().x(), event.position().y())
        if bx is None:
            QToolTip.hideText()
            return
        fmt = FORMAT[self.owner.value_column]
        QToolTip.showText(event.globalPosition().toPoint(),
                          f"{bx.name}: {fmt(bx.value)} ({100 * bx.share:.3g} % of the model)", self)

    def mousePressEvent(self, event) -> None:  # noqa: N802
        bx = self.box_at(event.position().x(), event.position().y())
        if bx is not None and event.button() == Qt.LeftButton:
            self.clicked.emit(bx)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802
        self.view = (0.0, 1.0)
        self.update()

    def wheelEvent(self, event) -> None:  # noqa: N802
        a, b = self.view
        f = a + event.position().x() / max(self.width(), 1) * (b - a)
        k = 0.8 if event.angleDelta().y() > 0 else 1.25
        w = min((b - a) * k, 1.0)
        a = min(max(f - (f - a) * w / (b - a), 0.0), 1.0 - w)
        self.view = (a, a + w)
        self.update()


class QtIcicle(WhenShown, QWidget):
    box_clicked = Signal(object)  # Box

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("icicle")
        self.trace = None
        self.stale = False
        self.boxes: list[Box] = []
        self.value_column = "dur_ns"
        self.values = QComboBox(objectName="icicle-value")
        self.values.addItems(list(VALUES))
        self.values.setToolTip("What sizes the boxes: kernel time summed over cores, or a kernel column")
        self.values.currentTextChanged.connect(self._value_changed)
        self.status = QLabel("", objectName="icicle-status")
        self.status.setWordWrap(True)
        self.canvas = _Canvas(self)
        self.canvas.setObjectName("icicle-canvas")
        self.canvas.clicked.connect(self.box_clicked.emit)
        top = QHBoxLayout()
        top.addWidget(QLabel("Size by"))
        top.addWidget(self.values)
        top.addWidget(self.status, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.canvas, 1)

    def set_trace(self, trace) -> None:
        self.trace = trace
        self.boxes = []
        self.status.setText("")  # not the closed trace's total
        self.canvas.view = (0.0, 1.0)
        self.canvas.update()
        self.refresh_when_shown(trace is not None)

    def _value_changed(self, value: str) -> None:
        self.value_column = value
        self.refresh()

    def refresh(self) -> None:
        self.stale = False
        trace, value = self.trace, self.value_column
        if trace is None:
            return
        self.status.setText("computing\u2026")
        run_tool(lambda: icicle(trace, value), lambda ok, v: self._done(trace, value, ok, v))

    def _done(self, trace, value: str, ok: bool, boxes) -> None:
        if trace is not self.trace or value != self.value_column:
            return
        if not ok:
            self.status.setText(boxes)
            return
        self.boxes = boxes
        if boxes:
            self.status.setText(f"{boxes[0].name}: {FORMAT[value](boxes[0].value)}; click a box to see it on the "
                                "timeline, wheel to zoom here, double-click to reset")
        else:
            self.status.setText(why_empty(trace, value))
        self.canvas.update()

    def box_center(self, name: str, depth: int) -> tuple[int, int]:
        """The widget position of a box's middle (tests, scripts)."""
        bx = next(b for b in self.boxes if b.name == name and b.depth == depth)
        return int((self.canvas.x_of(bx.x0) + self.canvas.x_of(bx.x1)) / 2), depth * ROW_H + ROW_H // 2
