"""The time axis above the timeline: ticks in ns / us / ms from trace start; drag on it to zoom."""

from __future__ import annotations

from PySide6.QtCore import QLineF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QWidget

from explorer.model.timeline.time_axis import TICK_PX, tick_label, tick_step, tick_times
from explorer.model.units import format_ns
from explorer.model.timeline.view_state import ViewState
from explorer.ui import palette as P
from explorer.ui.canvas_layers import GUTTER
from explorer.ui.state_links import connect_while_alive
from explorer.ui.track_canvas import DRAG_PX, TrackCanvas


class TimeRuler(QWidget):
    """Ticks and labels; drag on it to zoom to a range (as in Perfetto)."""

    def __init__(self, state: ViewState, canvas: TrackCanvas, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("time-ruler")
        self.state = state
        self.canvas = canvas  # the pane whose x axis the ticks line up with
        self.setFixedHeight(30)
        self._press_x: float | None = None
        self._band: tuple[float, float] | None = None
        self.setMouseTracking(True)
        f = QFont(self.font())
        f.setPointSizeF(8.5)
        self.setFont(f)
        for signal in (state.viewport.changed, state.index_changed, state.area_changed, state.area_preview):
            connect_while_alive(signal, self._repaint)

    def _repaint(self, *_args) -> None:
        self.update()

    def step(self) -> float:
        vp = self.state.viewport
        return tick_step(vp.t0, vp.t1, self.canvas.track_width)

    def tick_times(self) -> list[float]:
        """Absolute times of the visible ticks."""
        vp = self.state.viewport
        return tick_times(vp.t0, vp.t1, self.canvas.track_width, self.state.origin)

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        w, h = self.width(), self.height()
        p.fillRect(0, 0, w, h, P.GUTTER_BG)
        st = self.state
        if st.index is not None:
            vp = st.viewport
            p.setPen(P.TEXT_DIM)
            p.drawText(QRect(8, 0, GUTTER - 16, h), Qt.AlignVCenter,
                       f"{format_ns(vp.width)} visible")
            p.setClipRect(QRect(GUTTER, 0, w - GUTTER, h))
            step = self.step()
            t0, px = vp.t0, self.canvas.px_per_ns()  # (x_of, without its lookups per tick)
            major, minor = [], []
            p.setPen(P.TEXT)
            for t in self.tick_times():
                x = GUTTER + (t - t0) * px
                major.append(QLineF(x, h - 8, x, h))
                p.drawText(QRectF(x + 3, 0, TICK_PX, h - 6), Qt.AlignVCenter | Qt.AlignLeft, tick_label(t - st.origin, step))
                for k in range(1, 5):  # minor ticks
                    xm = GUTTER + (t + k * step / 5 - t0) * px
                    minor.append(QLineF(xm, h - 4, xm, h))
            # the tick lines after the labels, each kind in one call: no line crosses a label's
            # pixels (labels end 6 px above the bottom; ticks start 8 and 4 px above it, right of
            # their own label's start and at least TICK_PX from the next), so the picture is the same
            p.setPen(QPen(P.TEXT_DIM, 1))
            p.drawLines(major)
            p.setPen(QPen(P.GRID, 1))
            p.drawLines(minor)
            area = st.area
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
            self.state.viewport.set_range(self.canvas.t_of(a), self.canvas.t_of(b))
        self.update()
