"""SearchHitsLayer: every hit of the search bar outlined on its row, at any zoom.

Per visible row it finds the lane's visible slice (two `searchsorted`) and the hits
inside it (two more on the sorted hit indices); up to a few thousand hits are outlined
one by one, more are marked per pixel column (numpy `unique` of their pixel x), so a
search with millions of hits draws as fast as one with ten.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen

from explorer.model.timeline.search import SearchHits
from explorer.ui.canvas_layers import Frame, Layer

HIT = QColor("#ffd54a")
MAX_OUTLINES = 3000


class SearchHitsLayer(Layer):
    """Outlines the hits `hits()` returns (None: nothing) on the rows of a canvas."""

    def __init__(self, hits: Callable[[], SearchHits | None]) -> None:
        self.hits = hits
        self._for: SearchHits | None = None
        self._lane_of: dict[int, int] = {}

    def _lanes(self, hits: SearchHits) -> dict[int, int]:
        if hits is not self._for:
            self._for = hits
            self._lane_of = {ln.track.track_id: i for i, ln in enumerate(hits.lanes) if len(hits.hits[i])}
        return self._lane_of

    def paint(self, p: QPainter, f: Frame) -> None:
        hits = self.hits()
        if hits is None or hits.count == 0:
            return
        lane_of = self._lanes(hits)
        vp = f.state.viewport
        scale = f.px_per_ns
        pen = QPen(HIT, 2)
        pen.setCosmetic(True)
        p.save()
        p.setClipRect(f.track_rect)
        p.setPen(pen)
        p.setBrush(Qt.NoBrush)
        for g in f.rows + f.pinned:
            tid = g.track_id
            i = lane_of.get(tid) if tid is not None else None
            if i is None:
                continue
            lane, h = hits.lanes[i], hits.hits[i]
            a, b = lane.visible(vp.t0, vp.t1)
            j0, j1 = int(np.searchsorted(h, a)), int(np.searchsorted(h, b))
            if j1 <= j0:
                continue
            idx = h[j0:j1]
            s = lane.start[idx].astype(np.float64)
            e = s + lane.dur[idx]
            x0 = f.x_of(0.0) + (s - 0.0) * scale  # f.x_of is affine: x0 = GUTTER + (s - t0) * scale
            x1 = f.x_of(0.0) + e * scale
            y, hgt = g.y + 1, g.h - 2
            if len(idx) > MAX_OUTLINES:
                xs = np.unique(np.clip(x0.astype(np.int64), f.track_rect.left(), f.width))
                for x in xs:
                    p.drawLine(int(x), y, int(x), y + hgt)
                continue
            for a_, b_ in zip(x0, x1):
                w = max(b_ - a_, 2.0)
                p.drawRect(QRectF(a_ - (w - (b_ - a_)) / 2, y, w, hgt))
        p.restore()
