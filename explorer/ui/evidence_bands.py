"""QtEvidenceBands: a recommendation's evidence drawn as warning bands over the timeline.

What is drawn is `Recommendation.bands` (explorer.model.analysis.recommendations): one
interval per item of evidence on its row. A faint band spans the whole height wherever
any item is (so it shows with every group folded, as Neuron Explorer's warning bands
do), and a stronger one covers the item on its own row when that row is on screen.
Like the path overlay it is a transparent child of a `TrackCanvas` that repaints with
it; each paint bins the visible items to pixels (numpy), so a rule with a million
small transfers costs a few milliseconds, not a loop over them.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter

from explorer.model.analysis.recommendations import NO_BANDS, EvidenceBands
from explorer.ui.canvas_layers import GUTTER
from explorer.ui.canvas_overlay import CanvasOverlay
from explorer.ui.track_canvas import TrackCanvas

BAND_COLOUR = "#f0a020"


def pixel_runs(x0: np.ndarray, x1: np.ndarray, width: int) -> list[tuple[int, int]]:
    """[start, end) pixel columns (0..width) covered by any of the intervals x0..x1 (pixels,
    already relative to the track area); every interval covers at least one column."""
    if not len(x0) or width <= 0:
        return []
    a = np.clip(np.floor(x0), 0, width).astype(np.int64)
    b = np.clip(np.maximum(np.ceil(x1), a + 1), 0, width).astype(np.int64)
    diff = np.zeros(width + 1, np.int64)
    np.add.at(diff, a, 1)
    np.add.at(diff, b, -1)
    covered = np.cumsum(diff[:-1]) > 0
    edges = np.flatnonzero(np.diff(np.r_[0, covered.astype(np.int8), 0]))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))


class QtEvidenceBands(CanvasOverlay):
    """Warning bands for one recommendation's evidence on the canvas it covers."""

    def __init__(self, canvas: TrackCanvas, colour: str = BAND_COLOUR) -> None:
        super().__init__(canvas, colour, "evidence-bands")
        self.bands: EvidenceBands = NO_BANDS
        self._reach = np.zeros(0, np.int64)  # running max of t1 in t0 order: what can overlap a window

    def set_bands(self, bands: EvidenceBands | None, label: str = "") -> None:
        """Show these bands (None or empty: hide)."""
        if bands is None or not len(bands):
            self.bands, self._reach, self.label = NO_BANDS, np.zeros(0, np.int64), ""
            self.hide()
            return
        self.bands = bands
        self._reach = np.maximum.accumulate(bands.t1)
        self.reveal(label)

    def visible(self) -> np.ndarray:
        """Indices of the bands overlapping the visible range."""
        b = self.bands
        if not len(b) or self.canvas.state.index is None:
            return np.zeros(0, np.int64)
        vp = self.canvas.state.viewport
        lo = int(np.searchsorted(self._reach, vp.t0, side="right"))
        hi = int(np.searchsorted(b.t0, vp.t1, side="left"))
        idx = np.arange(lo, max(hi, lo))
        return idx[b.t1[idx] > vp.t0]

    def paintEvent(self, event) -> None:  # noqa: N802
        idx = self.visible()
        if not len(idx):
            return
        b = self.bands
        width = self.width() - GUTTER
        x0 = self.canvas.x_of(b.t0[idx].astype(np.float64)) - GUTTER
        x1 = self.canvas.x_of(b.t1[idx].astype(np.float64)) - GUTTER
        p = QPainter(self)
        p.setClipRect(QRectF(GUTTER, 0, width, self.height()))
        faint = QColor(self.colour)
        faint.setAlpha(26)
        for a, z in pixel_runs(x0, x1, width):
            p.fillRect(QRectF(GUTTER + a, 0, z - a, self.height()), faint)
        strong = QColor(self.colour)
        strong.setAlpha(150)
        pinned, rows = self.canvas.visible_geoms()
        geom = {g.track_id: g for g in pinned + rows if g.track_id is not None}
        tracks = b.track_id[idx]
        for tid in np.unique(tracks).tolist():
            g = geom.get(int(tid))
            if g is None:
                continue
            mine = tracks == tid
            for a, z in pixel_runs(x0[mine], x1[mine], width):
                p.fillRect(QRectF(GUTTER + a, g.y + 2, z - a, g.h - 4), strong)
        p.end()
