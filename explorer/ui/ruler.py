"""The time axis above the timeline: ticks in ns / us / ms from trace start."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QWidget

from explorer.model.units import format_ns
from explorer.ui import palette as P
from explorer.ui.track_canvas import DRAG_PX, GUTTER

if TYPE_CHECKING:
    from explorer.ui.timeline import TimelineWidget

TICK_PX = 110  # about one labelled tick per this many pixels


def nice_step(raw: float) -> float:
    """The 1-2-5 x 10^k step at or above `raw`."""
    if raw <= 0:
        return 1.0
    k = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * 10**k >= raw:
            return float(m * 10**k)
    return float(10 ** (k + 1))


def tick_label(t_rel: float, step: float) -> str:
    """A tick's time from trace start in the unit its step calls for."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0)):
        if step * 10 >= scale or unit == "ns":  # 0.5 ms rather than 500 us
            decimals = max(0, -math.floor(math.log10(step / scale) + 1e-9))
            return f"{t_rel / scale:.{decimals}f} {unit}"
    return ""


class TimeRuler(QWidget):
    """Ticks and labels; drag on it to zoom to a range (as in Perfetto)."""

    def __init__(self, timeline: TimelineWidget) -> None:
        super().__init__(timeline)
        self.setObjectName("time-ruler")
        self.timeline = timeline
        self.setFixedHeight(30)
        self._press_x: float | None = None
        self._band: tuple[float, float] | None = None
        self.setMouseTracking(True)
        f = QFont(self.font())
        f.setPointSizeF(8.5)
        self.setFont(f)

    @property
    def canvas(self):
        return self.timeline.canvas

    def step(self) -> float:
        vp = self.timeline.viewport
        return nice_step(vp.width * TICK_PX / self.canvas.track_width)

    def tick_times(self) -> list[float]:
        """Absolute times of the visible ticks."""
        vp = self.timeline.viewport
        step = self.step()
        origin = self.timeline.origin
        first = math.ceil((vp.t0 - origin) / step)
        last = math.floor((vp.t1 - origin) / step)
        return [origin + k * step for k in range(first, min(last, first + 200) + 1)]

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        w, h = self.width(), self.height()
        p.fillRect(0, 0, w, h, P.GUTTER_BG)
        tl = self.timeline
        if tl.index is not None:
            vp = tl.viewport
            p.setPen(P.TEXT_DIM)
            p.drawText(QRect(8, 0, GUTTER - 16, h), Qt.AlignVCenter,
                       f"{format_ns(vp.width)} visible")
            p.setClipRect(QRect(GUTTER, 0, w - GUTTER, h))
            step = self.step()
            for t in self.tick_times():
                x = self.canvas.x_of(t)
                p.setPen(QPen(P.TEXT_DIM, 1))
                p.drawLine(QPointF(x, h - 8), QPointF(x, h))
                p.setPen(P.TEXT)
                p.drawText(QRectF(x + 3, 0, TICK_PX, h - 6), Qt.AlignVCenter | Qt.AlignLeft, tick_label(t - tl.origin, step))
                for k in range(1, 5):  # minor ticks
                    xm = self.canvas.x_of(t + k * step / 5)
                    p.setPen(QPen(P.GRID, 1))
                    p.drawLine(QPointF(xm, h - 4), QPointF(xm, h))
            area = tl.area
            if area is not None:
                xa, xb = self.canvas.x_of(area.t0), self.canvas.x_of(area.t1)
                p.fillRect(QRectF(xa, 0, xb - xa, h), QColor(79, 163, 255, 70))
                p.setPen(P.TEXT)
                p.drawText(QRectF(xa, 0, max(xb - xa, 80), 12), Qt.AlignHCenter | Qt.AlignTop, format_ns(area.duration_ns))
            if self._band is not None:
                a, b = sorted(self._band)
                p.fillRect(QRectF(a, 0, b - a, h), QColor(255, 255, 255, 50))
        p.setPen(QPen(P.GRID, 1))
        p.drawLine(0, h - 1, w, h - 1)
        p.end()

    def mousePressEvent(self, event) -> None:  # noqa: N802
        self._press_x = max(event.position().x(), GUTTER)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        if self._press_x is not None:
            self._band = (self._press_x, max(event.position().x(), GUTTER))
            self.update()

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802
        band, self._band, self._press_x = self._band, None, None
        if band is not None and abs(band[1] - band[0]) >= DRAG_PX:
            a, b = sorted(band)
            self.timeline.viewport.set_range(self.canvas.t_of(a), self.canvas.t_of(b))
        self.update()
