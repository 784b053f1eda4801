"""QtPathOverlay: a chain of events (a wait chain, a kernel's critical path) drawn over the timeline.

A transparent child of the timeline's `TrackCanvas` (mouse events pass through):
every step's interval is outlined on its row and consecutive steps are joined
end -> start, so the chain reads left to right. It repaints whenever the canvas
does (a child paints after its parent), and only the steps in the visible range
are drawn (numpy mask), so a path of thousands of steps costs nothing off screen.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QPainter, QPen

from explorer.ui.canvas_layers import GUTTER
from explorer.ui.canvas_overlay import CanvasOverlay
from explorer.ui.track_canvas import TrackCanvas

MAX_DRAWN = 4000


class QtPathOverlay(CanvasOverlay):
    """Outlines `steps` (columns track_id, start_ns, end_ns) on the canvas it covers."""

    def __init__(self, canvas: TrackCanvas, colour: str = "#ff79c6") -> None:
        super().__init__(canvas, colour, "path-overlay")
        self.track = np.zeros(0, np.int64)
        self.start = np.zeros(0, np.float64)
        self.end = np.zeros(0, np.float64)

    def set_path(self, steps: pd.DataFrame | None, label: str = "") -> None:
        """Show a chain (None or empty: hide)."""
        if steps is None or steps.empty:
            self.clear()
            return
        ok = steps["track_id"].to_numpy() >= 0
        self.track = steps["track_id"].to_numpy(np.int64)[ok]
        self.start = steps["start_ns"].to_numpy(np.float64)[ok]
        self.end = steps["end_ns"].to_numpy(np.float64)[ok]
        self.reveal(label)

    def clear(self) -> None:
        self.track = np.zeros(0, np.int64)
        self.start = self.end = np.zeros(0, np.float64)
        self.label = ""
        self.hide()

    @property
    def steps(self) -> int:
        return len(self.track)

    def paintEvent(self, event) -> None:  # noqa: N802
        if not len(self.track) or self.canvas.state.index is None:
            return
        vp = self.canvas.state.viewport
        seen = np.flatnonzero((self.end >= vp.t0) & (self.start <= vp.t1))
        # keep the links into and out of the visible part
        if len(seen):
            lo, hi = max(int(seen[0]) - 1, 0), min(int(seen[-1]) + 2, len(self.track))
        else:
            return
        idx = np.arange(lo, hi)[:MAX_DRAWN]
        rows = {}
        for tid in np.unique(self.track[idx]).tolist():
            g = self.canvas.geom_for_track(int(tid))
            if g is not None:
                rows[tid] = (g.y, g.h)
        p = QPainter(self)
        p.setClipRect(QRectF(GUTTER, 0, self.width() - GUTTER, self.height()))
        fill = QColor(self.colour)
        fill.setAlpha(70)
        p.setPen(QPen(self.colour, 2))
        p.setBrush(fill)
        xs = self.canvas.x_of(self.start[idx])
        xe = self.canvas.x_of(self.end[idx])
        prev = None
        for i, (x0, x1) in enumerate(zip(xs.tolist(), xe.tolist())):
            geom = rows.get(int(self.track[idx[i]]))
            if geom is None:
                prev = None
                continue
            y, h = geom
            if x1 - x0 < 3:
                x0, x1 = (x0 + x1) / 2 - 1.5, (x0 + x1) / 2 + 1.5
            p.drawRect(QRectF(x0, y + 1, x1 - x0, h - 2))
            if prev is not None:
                p.setRenderHint(QPainter.Antialiasing, True)
                p.drawLine(prev, QPointF(x0, y + h / 2))
                p.setRenderHint(QPainter.Antialiasing, False)
            prev = QPointF(x1, y + h / 2)
        p.end()
