"""QtStatistics (objectName `statistics`): duration statistics and a histogram per opcode, kernel or op.

Tracy's find-zone over `explorer.model.stats`: count, total, mean, p50, p95 and max per
name over the whole trace, or over the area selected on the timeline (its window and
rows). Computed on the tools' worker. Selecting a row draws its duration histogram
(quarter-octave bins); dragging a range on the histogram selects what it counts on the
timeline (as a field search, `stats.duration_query`: per op the kernels of those ops), in the
area it was computed for, hits outlined with a count;
double-clicking a row, or "Slowest", jumps to that name's slowest event.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QToolButton, QWidget

from explorer.model.query import TraceQuery
from explorer.model.scope import Scope
from explorer.model.stats import GROUPINGS, Histogram, Window, duration_histogram, duration_query, duration_stats
from explorer.model.units import format_ns, plural
from explorer.ui.frame_table import Column, FrameTableModel, count, make_table, ns, text
from explorer.ui.panes import fill, split, stack
from explorer.ui.tools.background import run_tool

COLUMNS = [
    Column("name", "name", text),
    Column("count", "count", count, "events"),
    Column("total_ns", "total", ns, "summed duration"),
    Column("mean_ns", "mean", ns),
    Column("p50_ns", "p50", ns, "median duration"),
    Column("p95_ns", "p95", ns, "95th percentile duration"),
    Column("max_ns", "max", ns, "the slowest one (double-click the row to go to it)"),
]


class _TimeAxis(pg.AxisItem):
    """Ticks at log2(ns) positions labelled in ns/us/ms."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        return [format_ns(2.0 ** v, 3) for v in values]


class QtStatistics(QWidget):
    """Statistics table + duration histogram; `select_query(text)` and `slowest(table, id, start, dur)` out."""

    select_query = Signal(str)  # a field search selecting the events in the histogram's range
    slowest = Signal(str, int, float, float)  # table, id, start_ns, dur_ns

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("statistics")
        self.trace = None
        self._query: TraceQuery | None = None
        self._query_trace = None
        self.area: Scope | None = None
        self.frame = pd.DataFrame()
        self.histogram: Histogram | None = None
        self.histogram_window = Window()  # what the shown histogram counts (its range selects there)
        self._generation = 0
        self.busy = False
        self.stale = False
        self.held = False

        self.grouping = QComboBox(objectName="stats-grouping")
        self.grouping.addItems(list(GROUPINGS))
        self.grouping.currentTextChanged.connect(lambda _: self.refresh())
        self.in_area = QCheckBox("Selected area only", objectName="stats-in-area")
        self.in_area.setToolTip("Count only events that start inside the area selected on the timeline (Shift+drag), on its rows")
        self.in_area.toggled.connect(lambda _: self.refresh())
        self.slowest_button = QToolButton(text="Slowest", objectName="stats-slowest", enabled=False)
        self.slowest_button.setToolTip("Go to the selected name's slowest event")
        self.slowest_button.clicked.connect(self.go_to_slowest)
        self.status = QLabel("", objectName="stats-status")
        self.status.setWordWrap(True)
        self.model = FrameTableModel(COLUMNS)
        self.table = make_table(self.model, "stats-table")
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _: self._row_chosen(cur.row()))
        self.table.doubleClicked.connect(lambda idx: self.go_to_slowest(idx.row()))
        self.plot = pg.PlotWidget(axisItems={"bottom": _TimeAxis("bottom")})
        self.plot.setObjectName("stats-histogram")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.getPlotItem().setLabel("left", "events")
        self.plot.getPlotItem().setLabel("bottom", "duration")
        self.region = pg.LinearRegionItem(brush=pg.mkBrush(79, 163, 255, 60))
        self.region.setZValue(10)
        self.region.sigRegionChangeFinished.connect(self._region_changed)
        self.region.hide()
        self.plot.addItem(self.region)
        self.bars: pg.BarGraphItem | None = None

        top = QHBoxLayout()
        top.addWidget(QLabel("Per"))
        top.addWidget(self.grouping)
        top.addStretch(1)
        top.addWidget(self.slowest_button)
        left = stack(top, self.in_area, self.status, self.table)
        fill(self, split(Qt.Horizontal, left, self.plot, stretch=(3, 2)))

    # -- inputs ------------------------------------------------------------------------
    def set_trace(self, trace) -> None:
        """Show `trace`'s statistics (computed when the panel is first shown, not on every open)."""
        self.trace = trace
        self._generation += 1  # a result still computing for the previous trace is dropped when it arrives
        self.busy = False
        self.frame = pd.DataFrame()
        self.model.set_frame(None)
        self._clear_histogram()
        self.stale = trace is not None
        if self.stale and self.held:
            self.status.setText("waiting for the analyses\u2026")
        elif self.stale and self.isVisible():
            self.refresh()

    def hold(self, held: bool) -> None:
        """While `held` (the window's analyses are being computed) a newly shown trace's statistics
        wait; they start once released, if the panel is visible. A query the user asks for
        (grouping, area) still runs at once."""
        self.held = held
        if not held and self.stale and self.isVisible():
            self.refresh()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self.stale and not self.held:
            self.refresh()

    def show_area(self, area: Scope | None) -> None:
        self.area = area
        if self.in_area.isChecked():
            if self.isVisible():
                self.refresh()
            else:
                self.stale = self.trace is not None

    def window(self) -> Window:
        a = self.area if self.in_area.isChecked() else None
        if a is None:
            return Window()
        return Window(a.t0, a.t1, tuple(sorted(a.track_ids)) if a.track_ids is not None else None)

    # -- computing (off the GUI thread) --------------------------------------------------
    def _q(self, trace) -> TraceQuery:
        if self._query is None or self._query_trace is not trace:
            self._query, self._query_trace = TraceQuery(trace), trace
        return self._query

    def refresh(self) -> None:
        if self.trace is None:
            return
        self.stale = False
        self._generation += 1
        gen, trace, grouping, window = self._generation, self.trace, self.grouping.currentText(), self.window()
        self.busy = True
        self.status.setText("computing\u2026")
        run_tool(lambda: duration_stats(self._q(trace), grouping, window), lambda ok, v: self._stats_done(gen, ok, v))

    def _stats_done(self, gen: int, ok: bool, value) -> None:
        if gen != self._generation:
            return
        self.busy = False
        if not ok:
            self.status.setText(value)
            return
        self.frame = value
        self.model.set_frame(value)
        total = int(value["count"].sum()) if len(value) else 0
        where = "in the selected area" if self.in_area.isChecked() and self.area is not None else "over the whole trace"
        self.status.setText(f"{len(value):,} names, {total:,} events {where}")
        self._clear_histogram()
        if len(value):
            self.table.selectRow(0)

    def _row_chosen(self, row: int) -> None:
        if row < 0 or row >= len(self.model.records) or self.trace is None:
            return
        self.slowest_button.setEnabled(True)
        name = self.model.record(row)["name"]
        trace, grouping, window = self.trace, self.grouping.currentText(), self.window()
        self._generation += 1
        gen = self._generation
        run_tool(lambda: duration_histogram(self._q(trace), grouping, name, window),
                 lambda ok, v: self._histogram_done(gen, ok, v, window))

    def _histogram_done(self, gen: int, ok: bool, value, window: Window = Window()) -> None:
        if gen != self._generation or not ok:
            return
        self.histogram, self.histogram_window = value, window
        h = value
        x = np.log2(np.maximum(h.edges, 1.0))
        if self.bars is not None:
            self.plot.removeItem(self.bars)
        self.bars = pg.BarGraphItem(x0=x[:-1], x1=x[1:], height=h.counts, brush=pg.mkBrush("#4e9be6"), pen=pg.mkPen(None))
        self.plot.addItem(self.bars)
        what = "op" if self.grouping.currentText() == "op" else "event"
        self.plot.getPlotItem().setTitle(f"{h.name}: {plural(h.total, what)}")
        self.region.blockSignals(True)
        self.region.setBounds((x[0], x[-1]))
        self.region.setRegion((x[0], x[-1]))
        self.region.blockSignals(False)
        self.region.show()
        self.plot.getPlotItem().autoRange()

    def _clear_histogram(self) -> None:
        self.histogram = None
        if self.bars is not None:
            self.plot.removeItem(self.bars)
            self.bars = None
        self.region.hide()
        self.plot.getPlotItem().setTitle("")
        self.slowest_button.setEnabled(False)

    # -- outputs -----------------------------------------------------------------------
    def select_range(self, lo_ns: float, hi_ns: float) -> str | None:
        """Select what the histogram counts with durations in [lo, hi] ns on the timeline: the
        name's events (per op: the kernels of those ops), in the area it was computed for."""
        h = self.histogram
        if h is None or self.trace is None:
            return None
        q = duration_query(self.grouping.currentText(), h.name, lo_ns, hi_ns, self.histogram_window,
                           int(self.trace.span_ns[0]))
        self.select_query.emit(q)
        return q

    def _region_changed(self) -> None:
        a, b = self.region.getRegion()
        self.select_range(2.0 ** a if a > 0 else 0.0, 2.0 ** b)

    def go_to_slowest(self, row: int | None = None) -> None:
        if row is None or row is False:
            row = self.table.currentIndex().row()
        if row < 0 or row >= len(self.model.records):
            return
        r = self.model.record(row)
        self.slowest.emit(str(r["slowest_table"]), int(r["slowest_id"]), float(r["slowest_start_ns"]), float(r["max_ns"]))
