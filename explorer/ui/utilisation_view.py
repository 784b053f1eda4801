"""QtUtilisation: per-engine active % over the visible range, and its totals."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QAbstractItemView, QHBoxLayout, QHeaderView, QTableWidget, QTableWidgetItem, QWidget,
)

from explorer.model.timeline.utilisation import Utilisation
from explorer.ui.palette import BASE

N_BINS = 120


class QtUtilisation(QWidget):
    """One line per engine kind (active % over time) and a table of range totals.

    Follows the timeline's visible range (debounced) so it always explains what
    is on screen; the numbers come from `explorer.model.timeline.utilisation`.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("utilisation")
        self.model: Utilisation | None = None
        self.origin = 0.0
        self.range = (0.0, 1.0)
        self.plot = pg.PlotWidget(background="#1b1d23")
        self.plot.setObjectName("utilisation-plot")
        self.plot.setLabel("left", "active", units="%")
        self.plot.setLabel("bottom", "time", units="s")
        self.plot.setYRange(0, 100, padding=0.02)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.legend = self.plot.addLegend(offset=(-6, 6), labelTextSize="8pt", brush=pg.mkBrush(27, 29, 35, 200))
        self.table = QTableWidget(0, 2)
        self.table.setObjectName("utilisation-table")
        self.table.setHorizontalHeaderLabels(["engine", "active in view"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setMaximumWidth(260)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.table)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.totals: dict[str, float] = {}
        self._timer = QTimer(self, singleShot=True, interval=60)
        self._timer.timeout.connect(self.refresh)

    def set_model(self, model: Utilisation | None, origin: float = 0.0) -> None:
        self.model = model
        self.origin = origin
        self.plot.clear()
        self.legend.clear()
        self.curves = {}
        if model is None:
            self.table.setRowCount(0)
            return
        for i, name in enumerate(model.engines):
            pen = pg.mkPen(BASE[i % len(BASE)], width=1.5)
            self.curves[name] = self.plot.plot([], [], pen=pen, name=name)

    def set_range(self, t0: float, t1: float) -> None:
        """The timeline's visible range changed: refresh soon (debounced)."""
        self.range = (t0, t1)
        self._timer.start()

    def refresh(self) -> None:
        if self.model is None:
            return
        t0, t1 = self.range
        series = self.model.series(t0, t1, N_BINS)
        mids = ((series.edges[:-1] + series.edges[1:]) / 2 - self.origin) * 1e-9
        for name, pct in series.percent.items():
            self.curves[name].setData(mids, pct)
        self.plot.setXRange(float((t0 - self.origin) * 1e-9), float((t1 - self.origin) * 1e-9), padding=0)
        self.totals = self.model.totals(int(t0), int(np.ceil(t1)))
        self.table.setRowCount(len(self.totals))
        for i, (name, pct) in enumerate(self.totals.items()):
            self.table.setItem(i, 0, QTableWidgetItem(name))
            self.table.setItem(i, 1, QTableWidgetItem(f"{pct:.1f}%"))
