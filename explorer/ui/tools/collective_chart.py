"""QtCollectiveChart (objectName `collective-chart`): each collective's duration over time.

`explorer.model.collective_durations`: one point per collective at its first arrival,
its height the time until its last rank finished, coloured by kind; outliers (at least
1.25x their group's median) are ringed in red and counted. A click on a point emits
`link_requested("collective:ID")`, which the window follows like a deep link.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from explorer.model.collective_durations import OUTLIER_RATIO, collective_durations
from explorer.ui import palette as P
from explorer.ui.tools.background import run_tool
from explorer.ui.tools.when_shown import WhenShown

OUTLIER = "#e15759"


class QtCollectiveChart(WhenShown, QWidget):
    link_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("collective-chart")
        self.frame = pd.DataFrame()
        self.trace = None
        self.stale = False
        self.origin = 0.0
        self.status = QLabel("", objectName="collective-chart-status")
        self.status.setWordWrap(True)  # a long status must not widen the dock (and the window's minimum)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("collective-chart-plot")
        self.plot.getPlotItem().setLabel("bottom", "first arrival (ms from the trace's start)")
        self.plot.getPlotItem().setLabel("left", "duration (us)")
        self.plot.getPlotItem().addLegend(offset=(10, 10))
        self.scatters: list[pg.ScatterPlotItem] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.status)
        lay.addWidget(self.plot, 1)

    def set_trace(self, trace, origin: float = 0.0) -> None:
        self.trace, self.origin = trace, origin
        self.frame = pd.DataFrame()
        self._draw()
        self.refresh_when_shown(trace is not None)

    def refresh(self) -> None:
        self.stale = False
        trace = self.trace
        if trace is None:
            return
        self.status.setText("computing\u2026")
        run_tool(lambda: collective_durations(trace), lambda ok, v: self._done(trace, ok, v))

    def _done(self, trace, ok: bool, value) -> None:
        if trace is not self.trace:
            return
        if not ok:
            self.status.setText(value)
            return
        self.frame = value
        self._draw()

    def _draw(self) -> None:
        for s in self.scatters:
            self.plot.removeItem(s)
        self.scatters = []
        legend = self.plot.getPlotItem().legend
        if legend is not None:
            legend.clear()
        df = self.frame
        if df.empty:
            self.status.setText("no collectives in this trace" if self.trace is not None else "")
            return
        kinds = sorted(df["kind"].unique())
        colours = dict(zip(kinds, P.category_colours(kinds)))
        for kind in kinds:
            part = df[df["kind"] == kind]
            spots = [{"pos": ((r.start_ns - self.origin) / 1e6, r.duration_ns / 1e3), "data": int(r.collective_id),
                      "brush": pg.mkBrush(colours[kind]),
                      "pen": pg.mkPen(OUTLIER, width=2.5) if r.outlier else pg.mkPen(None),
                      "size": 12 if r.outlier else 8}
                     for r in part.itertuples()]
            s = pg.ScatterPlotItem(spots=spots, name=kind, hoverable=True, brush=pg.mkBrush(colours[kind]), pen=pg.mkPen(None))
            s.sigClicked.connect(self._clicked)
            self.plot.addItem(s)
            self.scatters.append(s)
        n_out = int(df["outlier"].sum())
        self.status.setText(f"{len(df):,} collectives; {n_out} outlier{'s' if n_out != 1 else ''} "
                            f"(ringed: at least {OUTLIER_RATIO:g}x the median of their kind and size); click one to go to it")
        self.plot.getPlotItem().autoRange()

    def _clicked(self, _item, points, _ev=None) -> None:
        if len(points):
            self.go_to(int(points[0].data()))

    def go_to(self, collective_id: int) -> None:
        self.link_requested.emit(f"collective:{collective_id}")

    def point_of(self, collective_id: int) -> tuple[float, float]:
        """Where a collective's point is, in plot coordinates (tests, scripts)."""
        r = self.frame[self.frame["collective_id"] == collective_id].iloc[0]
        return (r.start_ns - self.origin) / 1e6, r.duration_ns / 1e3
