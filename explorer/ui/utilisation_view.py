"""QtUtilisation: per-engine active % over the visible range, and its totals.

Following the view, the curves and totals are computed on a worker of their own
(`Latest`: only the newest range counts) and only drawn on the GUI thread: at 28M events
that computation took 10-15 ms of the GUI thread's CPU after every zoom or jump, on top
of the timeline's own repaint. A computation that fails leaves the curves of the last
range that worked and says so in one line above them, until the next one succeeds.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from explorer.model.timeline.utilisation import Utilisation, UtilisationSeries
from explorer.ui.worker import Latest, Worker

_worker = Worker("trnx-view", "compute the utilisation of the visible range")
N_BINS = 120
# one hue per engine, far apart (TensorMatrix and the DMA queues used to be two oranges)
ENGINE_COLOURS = {"Tensor": "#4e9be6", "TensorMatrix": "#f28e2b", "Vector": "#59a14f", "Scalar": "#e15759",
                  "GpSimd": "#b07aa1", "Sync": "#9c755f", "DMA": "#17becf"}
SPARE = ("#edc948", "#ff9da7", "#76b7b2", "#bab0ac")


def engine_colours(engines: list[str]) -> dict[str, str]:
    """A distinct colour per engine curve (known engines by name, others from SPARE)."""
    out, spare = {}, iter(SPARE * 4)
    for name in engines:
        known = ENGINE_COLOURS.get(name) or next((c for k, c in ENGINE_COLOURS.items() if name.startswith(k)), None)
        out[name] = known or next(spare)
    return out


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
        self.table = QTableWidget(0, 2)
        self.table.setObjectName("utilisation-table")
        self.table.setHorizontalHeaderLabels(["engine", "active in view"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setMaximumWidth(260)
        self.error = QLabel("", objectName="utilisation-error", wordWrap=True)
        self.error.setStyleSheet("color: #e15759;")
        self.error.hide()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        outer.setSpacing(2)
        outer.addWidget(self.error)
        lay = QHBoxLayout()
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.table)
        outer.addLayout(lay, 1)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.colours: dict[str, str] = {}
        self.totals: dict[str, float] = {}
        self._timer = QTimer(self, singleShot=True, interval=60)
        self._timer.timeout.connect(self._refresh_in_background)
        self._latest = Latest(_worker.submit)

    def set_model(self, model: Utilisation | None, origin: float = 0.0) -> None:
        self._latest.cancel()
        self.model = model
        self.origin = origin
        self.plot.clear()
        self.curves = {}
        self._set_error("")
        if model is None:
            self.table.setRowCount(0)
            return
        self.colours = engine_colours(model.engines)
        for name in model.engines:
            self.curves[name] = self.plot.plot([], [], pen=pg.mkPen(self.colours[name], width=1.5), name=name)

    def set_range(self, t0: float, t1: float) -> None:
        """The timeline's visible range changed: refresh soon (debounced)."""
        self.range = (t0, t1)
        self._timer.start()

    def refresh(self) -> None:
        """Compute and show the curves for the current range now (on the GUI thread)."""
        if self.model is None:
            return
        t0, t1 = self.range
        self._show((t0, t1), self._compute(self.model, t0, t1))

    @staticmethod
    def _compute(model: Utilisation, t0: float, t1: float) -> tuple[UtilisationSeries, dict[str, float]]:
        return model.series(t0, t1, N_BINS), model.totals(int(t0), int(np.ceil(t1)))

    def _refresh_in_background(self) -> None:
        model, (t0, t1) = self.model, self.range
        if model is None:
            return
        self._latest.submit(lambda: self._compute(model, t0, t1),
                            lambda ok, value: model is self.model and self._done((t0, t1), ok, value))

    def _done(self, rng: tuple[float, float], ok: bool, value) -> None:
        if not ok:  # `value` is the worker's one sentence; the curves keep the last range that worked
            self._set_error(f"Still showing the previous range: {value}")
            return
        self._set_error("")
        self._show(rng, value)

    def _set_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(bool(message))

    def _show(self, rng: tuple[float, float], value: tuple[UtilisationSeries, dict[str, float]]) -> None:
        series, totals = value
        t0, t1 = rng
        mids = ((series.edges[:-1] + series.edges[1:]) / 2 - self.origin) * 1e-9
        for name, pct in series.percent.items():
            self.curves[name].setData(mids, pct)
        self.plot.setXRange(float((t0 - self.origin) * 1e-9), float((t1 - self.origin) * 1e-9), padding=0)
        self.totals = totals
        self.table.setRowCount(len(self.totals))
        for i, (name, pct) in enumerate(self.totals.items()):  # the table is the curves' legend
            item = QTableWidgetItem(name)
            if name in self.colours:
                swatch = QPixmap(12, 12)
                swatch.fill(QColor(self.colours[name]))
                item.setIcon(QIcon(swatch))
            self.table.setItem(i, 0, item)
            self.table.setItem(i, 1, QTableWidgetItem(f"{pct:.1f}%"))
