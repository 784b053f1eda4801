"""QtCollectiveWaits: rank x collective heat map of wait time, slowest rank marked.

The colour scale is the whole trace's (0 to the longest wait of any rank), shown by a
colour bar, so zooming never rescales it; columns are labelled by collective id (the
tooltip names the kind, size and op); with no collective in view the plot gives way to
a sentence.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QTimer, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from explorer.model.timeline.collective_waits import CollectiveWaits, collective_waits
from explorer.model.timeline.trace_index import TraceIndex
from explorer.model.units import format_ns


class QtCollectiveWaits(QWidget):
    """For the collectives in the visible range: each rank's wait (colour) per collective.

    A star marks the slowest rank of each collective (the last to arrive, the one
    the others waited for). Clicking a cell emits `jump_requested(EventRef)`.
    """

    jump_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("collective-waits")
        self.index: TraceIndex | None = None
        self.waits: CollectiveWaits | None = None
        self.range = (0.0, 1.0)
        self.summary = QLabel("No trace")
        self.summary.setObjectName("collective-waits-summary")
        self.summary.setWordWrap(True)
        self.plot = pg.PlotWidget(background="#1b1d23")
        self.plot.setObjectName("collective-waits-plot")
        self.plot.setLabel("bottom", "collective id (in start order)")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.getViewBox().invertY(True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(pg.colormap.get("inferno"))
        self.plot.addItem(self.image)
        self.colour_bar = pg.ColorBarItem(values=(0, 1), colorMap=pg.colormap.get("inferno"), interactive=False,
                                          width=12, label="wait (us)")
        self.colour_bar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        self.stars = pg.ScatterPlotItem(symbol="star", size=11, brush=pg.mkBrush("#4fa3ff"), pen=pg.mkPen("#0b0d10"))
        self.plot.addItem(self.stars)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.plot.scene().sigMouseMoved.connect(self._moved)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.summary)
        lay.addWidget(self.plot, 1)
        self._timer = QTimer(self, singleShot=True, interval=80)
        self._timer.timeout.connect(self.refresh)

    def set_index(self, index: TraceIndex | None) -> None:
        self.index = index
        self.waits = None
        self.image.clear()
        self.stars.clear()
        self.plot.setVisible(False)
        self.summary.setText("No trace" if index is None else "")

    def set_range(self, t0: float, t1: float) -> None:
        self.range = (t0, t1)
        self._timer.start()

    def refresh(self) -> None:
        if self.index is None:
            return
        t0, t1 = self.range
        w = self.waits = collective_waits(self.index, int(t0), int(np.ceil(t1)))
        n_rank, n_coll = w.wait_ns.shape
        if n_coll == 0:
            self.image.clear()
            self.stars.clear()
            self.plot.setVisible(False)
            self.summary.setText("No collectives in the visible range." if self.index.trace.collectives.num_rows else
                                 "This trace has no collectives (one chip, or no communication captured).")
            return
        self.plot.setVisible(True)
        img = np.nan_to_num(w.wait_ns, nan=0.0) / 1e3  # us
        levels = (0.0, w.scale_ns / 1e3)
        self.image.setImage(img, levels=levels)
        self.colour_bar.setLevels(levels)
        self.image.setRect(0, 0, n_coll, n_rank)
        self.stars.setData(np.arange(n_coll) + 0.5, w.slowest_rank + 0.5)
        ax = self.plot.getAxis("left")
        step = max(1, int(np.ceil(n_rank / 24)))
        ax.setTicks([[(i + 0.5, w.rank_labels[i]) for i in range(0, n_rank, step)]])
        xstep = max(1, int(np.ceil(n_coll / 16)))
        self.plot.getAxis("bottom").setTicks([[(c + 0.5, f"#{int(w.collective_ids[c])}")
                                               for c in range(0, n_coll, xstep)]])
        self.plot.setXRange(0, n_coll, padding=0)
        self.plot.setYRange(0, n_rank, padding=0)
        worst, count = w.most_often_slowest()
        total = w.total_wait_ns
        more = f" (first {n_coll}; {w.truncated} more in range)" if w.truncated else ""
        self.summary.setText(
            f"{n_coll} collectives{more}, {format_ns(total)} of rank wait in total. "
            f"Slowest rank most often: {w.rank_labels[worst]} ({count} of {n_coll}) \u2605. "
            "Colour = wait time; click a cell to jump to it."
        )

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        if self.waits is None:
            return None
        p = self.plot.getViewBox().mapSceneToView(scene_pos)
        r, c = int(np.floor(p.y())), int(np.floor(p.x()))
        n_rank, n_coll = self.waits.wait_ns.shape
        if 0 <= r < n_rank and 0 <= c < n_coll:
            return r, c
        return None

    def cell_center(self, rank_row: int, coll: int):
        """Widget coordinates (of the plot's viewport) of a cell's centre (for tests, scripting)."""
        vb = self.plot.getViewBox()
        scene = vb.mapViewToScene(QPointF(coll + 0.5, rank_row + 0.5))
        return self.plot.mapFromScene(scene)

    def _clicked(self, ev) -> None:
        cell = self.cell_at(ev.scenePos())
        if cell is not None:
            ref = self.waits.ref(*cell)
            if ref is not None:
                self.jump_requested.emit(ref)

    def _moved(self, scene_pos) -> None:
        cell = self.cell_at(scene_pos)
        if cell is None:
            self.plot.setToolTip("")
            return
        r, c = cell
        w = self.waits
        wait, xfer = w.wait_ns[r, c], w.transfer_ns[r, c]
        if np.isnan(wait):
            text = f"{w.rank_labels[r]} is not in {w.labels[c]}"
        else:
            slow = " \u2014 slowest rank" if w.slowest_rank[c] == r else ""
            text = f"{w.labels[c]}\n{w.rank_labels[r]}{slow}\nwait {format_ns(wait)}, transfer {format_ns(xfer)}"
        self.plot.setToolTip(text)
