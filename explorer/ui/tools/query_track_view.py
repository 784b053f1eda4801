"""QtQueryTracks: query results pinned above the timeline's rows, one row per pinned query.

Each row is an `explorer.model.query_track.QueryTrack` drawn against the timeline
canvas's own time-to-pixel mapping (same gutter, same viewport), so its bars line up
with the engine rows under it. A click on a bar zooms the timeline to it; the cross at
a row's left end unpins it.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QToolTip, QWidget

from explorer.model.query_track import QueryTrack
from explorer.model.timeline.view_state import ViewState
from explorer.model.units import format_ns
from explorer.ui import palette as P
from explorer.ui.canvas_layers import GUTTER
from explorer.ui.state_links import connect_while_alive

ROW_H = 18
MAX_RECTS = 4000  # more visible intervals than this: drawn as per-pixel coverage
COLOURS = ("#e8a33d", "#4fb0c6", "#c774e8", "#7bc96f", "#f06c6c")


class QtQueryTracks(QWidget):
    """Pinned query rows over the shared view state; `zoom_requested(t0, t1)` on a click."""

    zoom_requested = Signal(float, float)
    unpinned = Signal(str)

    def __init__(self, state: ViewState, reference: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("query-tracks")
        self.state = state
        self.reference = reference  # the timeline canvas whose width sets the time axis
        self.tracks: list[QueryTrack] = []
        self.setMouseTracking(True)
        self.setVisible(False)
        connect_while_alive(state.viewport.changed, self._repaint)

    def _repaint(self, *_: object) -> None:
        self.update()

    # -- content -----------------------------------------------------------------------
    def pin(self, track: QueryTrack) -> None:
        """Show `track` (replacing a pinned track of the same name)."""
        self.tracks = [t for t in self.tracks if t.name != track.name] + [track]
        self._relayout()

    def unpin(self, name: str) -> None:
        self.tracks = [t for t in self.tracks if t.name != name]
        self._relayout()
        self.unpinned.emit(name)

    def _relayout(self) -> None:
        self.setFixedHeight(ROW_H * len(self.tracks) + (2 if self.tracks else 0))
        self.setVisible(bool(self.tracks))
        self.update()

    # -- geometry ----------------------------------------------------------------------
    def track_width(self) -> int:
        return max(self.reference.width() - GUTTER, 1)

    def x_of(self, t: float) -> float:
        vp = self.state.viewport
        return GUTTER + (t - vp.t0) * self.track_width() / vp.width

    def t_of(self, x: float) -> float:
        vp = self.state.viewport
        return vp.t0 + (x - GUTTER) * vp.width / self.track_width()

    def row_at(self, y: float) -> int | None:
        i = int(y // ROW_H)
        return i if 0 <= i < len(self.tracks) else None

    def interval_at(self, x: float, y: float) -> tuple[QueryTrack, int] | None:
        i = self.row_at(y)
        if i is None or x < GUTTER:
            return None
        tr = self.tracks[i]
        ns_per_px = self.state.viewport.width / self.track_width()
        j = tr.at(self.t_of(x), tolerance=2 * ns_per_px)
        return None if j is None else (tr, j)

    # -- painting ----------------------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.fillRect(self.rect(), P.BACKGROUND)
        p.fillRect(0, 0, GUTTER, self.height(), P.GUTTER_BG)
        vp = self.state.viewport
        w = self.track_width()
        for i, tr in enumerate(self.tracks):
            y = i * ROW_H
            colour = QColor(COLOURS[i % len(COLOURS)])
            p.setPen(P.TEXT)
            p.drawText(QRectF(18, y, GUTTER - 22, ROW_H), Qt.AlignVCenter | Qt.AlignLeft,
                       f"{tr.name}  ({len(tr):,})")
            p.drawText(QRectF(4, y, 12, ROW_H), Qt.AlignCenter, "\u00d7")
            lo, hi = tr.visible(vp.t0, vp.t1)
            if hi - lo > MAX_RECTS:
                cov = tr.coverage(vp.t0, vp.t1, w)
                edges = np.flatnonzero(np.diff(np.concatenate(([0], cov.astype(np.int8), [0]))))
                for a, b in zip(edges[::2], edges[1::2]):
                    p.fillRect(QRectF(GUTTER + a, y + 3, b - a, ROW_H - 6), colour)
            else:
                scale = w / vp.width
                for s, e in zip(tr.starts[lo:hi], tr.ends[lo:hi]):
                    x0 = GUTTER + max(s - vp.t0, 0.0) * scale
                    x1 = GUTTER + min(e - vp.t0, vp.width) * scale
                    p.fillRect(QRectF(x0, y + 3, max(x1 - x0, 1.0), ROW_H - 6), colour)
        p.setPen(P.GRID)
        p.drawLine(0, self.height() - 1, self.width(), self.height() - 1)
        p.end()

    # -- input -------------------------------------------------------------------------
    def mousePressEvent(self, event) -> None:  # noqa: N802
        pos = event.position()
        i = self.row_at(pos.y())
        if i is not None and pos.x() < 18:
            self.unpin(self.tracks[i].name)
            return
        hit = self.interval_at(pos.x(), pos.y())
        if hit is not None:
            tr, j = hit
            s, e = float(tr.starts[j]), float(tr.ends[j])
            pad = max((e - s) * 0.25, 50.0)
            self.zoom_requested.emit(s - pad, e + pad)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        pos = event.position()
        hit = self.interval_at(pos.x(), pos.y())
        if hit is None:
            QToolTip.hideText()
            return
        tr, j = hit
        o = self.state.origin
        text = f"{tr.label(j)}  " if tr.label(j) else ""
        text += f"{format_ns(tr.ends[j] - tr.starts[j])} at {format_ns(tr.starts[j] - o)}"
        QToolTip.showText(event.globalPosition().toPoint(), text, self)
