"""QtSweep: a `trnx sweep` directory -- its results table and a Pareto plot of any two columns.

File > Open sweep... opens one. The plot (pyqtgraph) shows every finished configuration as a
point, x and y any numeric column (default: step time against tokens/s per chip), coloured
by a grid key; the Pareto front (explorer.model.pareto, through `Sweep.pareto`) is drawn as
a dashed line and its points ringed. The table below is sortable (header click) and selects
the point of its row. Clicking a point, or double-clicking a row, opens that configuration's
trace in the main window -- the kept one, or a capture of it made now off the GUI thread
(CaptureWorker, with progress and Cancel) into the sweep's traces/.

Every number shown is a column of results.parquet; this window only formats and draws.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QModelIndex, Qt, Signal
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QHBoxLayout, QLabel, QMainWindow, QMessageBox, QProgressDialog, QPushButton, QSplitter,
    QVBoxLayout, QWidget,
)

from explorer.model.metrics import format_metric
from explorer.sweep.opened import Sweep, better_high, open_sweep
from explorer.sweep.results import METRIC_BY_COLUMN, METRICS, OK
from explorer.ui import frame_table as F
from explorer.ui import palette as P
from explorer.ui.palette import category_colours
from explorer.ui.themes import current_theme
from simcore.errors import UserError

DEFAULT_X, DEFAULT_Y = "step_time_ns", "tokens_per_s_per_chip"
FRONT_COLOURS = {"dark": "#e5c07b", "light": "#a86f00"}   # amber that reads on either background
# how a unit is drawn on an axis: (scale to the axis value, units pyqtgraph SI-prefixes, SI prefix on)
AXIS_UNITS = {"ns": (1e-9, "s", True), "bytes": (1.0, "B", True), "tokens/s": (1.0, "tokens/s", True),
              "%": (1.0, "%", False), "count": (1.0, "", False)}


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _fmt(unit: str):
    return lambda v: "" if _blank(v) else format_metric(v, unit)


def table_columns(grid_keys: list[str]) -> list[F.Column]:
    cols = [F.Column("config", "config", F.count, "The configuration's index in grid order.")]
    cols += [F.Column(k, k, F.text, f"Grid key --{k.replace('_', '-')}.") for k in grid_keys]
    cols.append(F.Column("status", "status", F.text, "ok, refused (the reason says why) or failed."))
    cols += [F.Column(m.name, m.name, _fmt(m.unit), m.doc) for m in METRICS]
    cols += [F.Column("trace", "trace", F.text, "The kept trace (traces/...); empty: captured when opened."),
             F.Column("reason", "reason", F.text, "Why the simulator refused the configuration, in its words.")]
    return cols


class QtSweep(QMainWindow):
    """One sweep: controls on top, the Pareto plot, the results table. `open_trace_requested(Path)`
    asks the main window to open a configuration's trace."""

    open_trace_requested = Signal(object)

    def __init__(self, sweep: Sweep, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sweep")
        self.sweep = sweep
        self.setWindowTitle(f"Sweep {sweep.path.name} \u2014 Trn3 Explorer")
        self.resize(1500, 950)
        self.worker = None
        self.progress_dialog: QProgressDialog | None = None
        self.show_error_dialogs = True   # False: errors only land in last_error (scripts)
        self.last_error: str | None = None
        self.front: pd.DataFrame = pd.DataFrame()
        self.plotted: pd.DataFrame = pd.DataFrame()
        self.colours: dict[Any, QColor] = {}

        self.heading = QLabel()
        self.heading.setObjectName("sweep-heading")
        self.x_combo, self.y_combo, self.colour_combo = QComboBox(), QComboBox(), QComboBox()
        for combo, name in ((self.x_combo, "sweep-x"), (self.y_combo, "sweep-y"), (self.colour_combo, "sweep-colour")):
            combo.setObjectName(name)
        reload_button = QPushButton("Reload")
        reload_button.setObjectName("sweep-reload")
        reload_button.setToolTip("Read results.parquet again (a running sweep adds rows)")
        reload_button.clicked.connect(self.reload)
        bar = QHBoxLayout()
        for label, w in (("x", self.x_combo), ("y", self.y_combo), ("colour by", self.colour_combo)):
            bar.addWidget(QLabel(label))
            bar.addWidget(w)
        bar.addStretch(1)
        bar.addWidget(reload_button)

        self.plot = pg.PlotWidget()
        self.plot.setObjectName("sweep-plot")
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.hideButtons()
        self.scatter = pg.ScatterPlotItem(size=11, pen=pg.mkPen(None), hoverable=True, tip=self._tip)
        self.scatter.sigClicked.connect(self._point_clicked)
        self.front_line = pg.PlotCurveItem()
        self.front_marks = pg.ScatterPlotItem(size=17, brush=pg.mkBrush(None))
        self.selected_mark = pg.ScatterPlotItem(size=22, brush=pg.mkBrush(None))
        self._style()
        for z, item in enumerate((self.front_line, self.front_marks, self.selected_mark, self.scatter)):
            item.setZValue(z)   # the points on top: a click goes to a point, not to the ring around it
            self.plot.addItem(item)
        self.caption = QLabel()
        self.caption.setObjectName("sweep-caption")
        self.caption.setTextFormat(Qt.RichText)
        self.caption.setWordWrap(True)

        self.model = F.FrameTableModel(table_columns(sweep.grid_keys), self)
        self.table = F.make_table(self.model, "sweep-table")
        self.table.doubleClicked.connect(self._row_activated)
        self.table.selectionModel().currentRowChanged.connect(self._row_selected)

        top = QWidget()
        lay = QVBoxLayout(top)
        lay.setContentsMargins(6, 6, 6, 0)
        lay.addWidget(self.heading)
        lay.addLayout(bar)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.caption)
        split = QSplitter(Qt.Vertical)
        split.addWidget(top)
        split.addWidget(self.table)
        split.setSizes([600, 350])
        self.setCentralWidget(split)

        self._fill_combos()
        for combo in (self.x_combo, self.y_combo, self.colour_combo):
            combo.currentIndexChanged.connect(self.redraw)
        self.reload()

    # -- data ------------------------------------------------------------------------
    def _numeric_columns(self) -> list[str]:
        df = self.sweep.results
        grid = [k for k in self.sweep.grid_keys if k in df and pd.api.types.is_numeric_dtype(df[k])
                and not pd.api.types.is_bool_dtype(df[k])]
        return grid + [m.name for m in METRICS if m.unit != "yes/no"]

    def _fill_combos(self) -> None:
        cols = self._numeric_columns()
        for combo, default in ((self.x_combo, DEFAULT_X), (self.y_combo, DEFAULT_Y)):
            combo.blockSignals(True)
            combo.addItems(cols)
            combo.setCurrentText(default)
            combo.blockSignals(False)
        self.colour_combo.blockSignals(True)
        self.colour_combo.addItems(self.sweep.grid_keys + ["status"])
        self.colour_combo.blockSignals(False)

    def reload(self) -> None:
        self.sweep.reload()
        df = self.sweep.results
        self.model.set_frame(df.drop(columns=["key"], errors="ignore"))
        counts = df["status"].value_counts()
        fixed = "  ".join(f"--{k.replace('_', '-')} {v}" for k, v in self.sweep.fixed.items())
        self.heading.setText(f"<b>{self.sweep.path}</b>: {len(df)} of {self.sweep.configurations} configurations "
                             f"finished ({', '.join(f'{n} {s}' for s, n in counts.items()) or 'none yet'})"
                             f"<br><span style='color:gray'>{fixed}</span>")
        self.redraw()

    def set_axes(self, x: str, y: str) -> None:
        self.x_combo.setCurrentText(x)
        self.y_combo.setCurrentText(y)

    def set_colour_key(self, key: str) -> None:
        self.colour_combo.setCurrentText(key)

    # -- drawing ---------------------------------------------------------------------
    def _style(self) -> None:
        """Pens of the current theme (View > Theme repaints through changeEvent)."""
        self.front_colour = FRONT_COLOURS.get(current_theme(), FRONT_COLOURS["dark"])
        self.front_line.setPen(pg.mkPen(self.front_colour, width=2, style=Qt.DashLine))
        self.front_marks.setPen(pg.mkPen(self.front_colour, width=2))
        self.selected_mark.setPen(pg.mkPen(P.SELECTED, width=2))

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange and hasattr(self, "caption"):
            self._style()
            self.redraw()

    def _axis(self, side: str, column: str) -> float:
        spec = METRIC_BY_COLUMN.get(column)
        scale, units, si = AXIS_UNITS.get(spec.unit if spec else "count", (1.0, "", False))
        better = "" if spec is None or spec.higher_is_better is None else (
            " (higher is better)" if spec.higher_is_better else " (lower is better)")
        axis = self.plot.getAxis(side)
        axis.enableAutoSIPrefix(si)
        self.plot.setLabel(side, column + better, units=units or None)
        return scale

    def redraw(self) -> None:
        x, y, key = self.x_combo.currentText(), self.y_combo.currentText(), self.colour_combo.currentText()
        if not x or not y:
            return
        df = self.sweep.results
        ok = df[df["status"] == OK]
        xs = ok[x].to_numpy(dtype=float, na_value=np.nan) if x in ok else np.full(len(ok), np.nan)
        ys = ok[y].to_numpy(dtype=float, na_value=np.nan) if y in ok else np.full(len(ok), np.nan)
        shown = np.isfinite(xs) & np.isfinite(ys)
        self.plotted = ok[shown]
        sx, sy = self._axis("bottom", x), self._axis("left", y)
        categories = list(pd.unique(df[key])) if key in df else []
        self.colours = dict(zip(categories, category_colours([str(c) for c in categories])))
        brushes = [pg.mkBrush(self.colours.get(v, QColor("#888888"))) for v in self.plotted[key]] if key in df else None
        self.scatter.setData(x=xs[shown] * sx, y=ys[shown] * sy, data=self.plotted["config"].to_numpy(),
                             brush=brushes)
        self.front = self.sweep.pareto(x, y) if len(self.plotted) else self.plotted
        fx = self.front[x].to_numpy(dtype=float) * sx
        fy = self.front[y].to_numpy(dtype=float) * sy
        self.front_line.setData(fx, fy)
        self.front_marks.setData(fx, fy)
        self.selected_mark.setData([], [])
        self.plot.getPlotItem().vb.autoRange(padding=0.08)   # now, not at the next paint: points map where drawn
        legend = "&nbsp;&nbsp;".join(f"<span style='color:{c.name()}'>\u25cf</span> {key}={v}"
                                     for v, c in self.colours.items())
        dirs = f"{'higher' if better_high(x) else 'lower'} {x}, {'higher' if better_high(y) else 'lower'} {y}"
        hidden = len(df) - len(self.plotted)
        self.caption.setText(f"{legend}<br><span style='color:{self.front_colour}'>- - \u25cb</span> Pareto front: "
                             f"{len(self.front)} of {len(self.plotted)} plotted configurations ({dirs} is better)"
                             + (f"; {hidden} not plotted (refused, failed or no value)" if hidden else "")
                             + ". Click a point (or double-click a row) to open its trace.")

    def _tip(self, x: float, y: float, data: Any) -> str:
        row = self.sweep.results.loc[self.sweep.results["config"] == data].iloc[0]
        grid = " ".join(f"{k}={row[k]}" for k in self.sweep.grid_keys)
        xs, ys = self.x_combo.currentText(), self.y_combo.currentText()
        return (f"config {int(data)}: {grid}\n{xs}: {self._format(xs, row[xs])}\n{ys}: {self._format(ys, row[ys])}"
                + ("" if _blank(row.get("trace")) else "\n(trace kept)"))

    @staticmethod
    def _format(column: str, value: Any) -> str:
        spec = METRIC_BY_COLUMN.get(column)
        return format_metric(value, spec.unit) if spec else str(value)

    # -- selection and opening --------------------------------------------------------
    def point_position(self, config: int) -> tuple[float, float]:
        """Where configuration `config` is drawn (view coordinates; tests click there)."""
        pts = self.scatter.data
        i = int(np.flatnonzero(pts["data"] == config)[0])
        return float(pts["x"][i]), float(pts["y"][i])

    def select(self, config: int) -> None:
        """Select a configuration: its table row and a ring around its point."""
        row = self.model.find("config", config)
        if row >= 0 and self.table.currentIndex().row() != row:
            self.table.selectRow(row)
        if (self.plotted["config"] == config).any():
            self.selected_mark.setData(*[[v] for v in self.point_position(config)])
        else:
            self.selected_mark.setData([], [])

    def _row_selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.select(int(self.model.record(current.row())["config"]))

    def _row_activated(self, index: QModelIndex) -> None:
        self.open_config(int(self.model.record(index.row())["config"]))

    def _point_clicked(self, _item: Any, points: Any, _ev: Any = None) -> None:
        if len(points):
            config = int(points[0].data())
            self.select(config)
            self.open_config(config)

    def open_config(self, config: int) -> None:
        """Open configuration `config`'s trace: the kept one, else capture it first (off the GUI thread)."""
        row = self.sweep.results.loc[self.sweep.results["config"] == config]
        if len(row) and row.iloc[0]["status"] != OK:
            self._error(f"configuration {config} has no trace: {row.iloc[0]['reason']}")
            return
        kept = self.sweep.trace_path(config)
        if kept is not None:
            self.open_trace_requested.emit(kept)
            return
        if self.worker is not None:
            return   # one capture at a time
        from explorer.ui.capture_worker import CaptureWorker

        target = self.sweep.capture_target(config)
        self.worker = CaptureWorker(self.sweep.options(config), target, parent=self)
        dialog = QProgressDialog(f"Capturing configuration {config}\u2026", "Cancel", 0, 1000, self)
        dialog.setObjectName("sweep-capture-progress")
        dialog.setWindowTitle("Capturing")
        dialog.setMinimumDuration(0)
        dialog.canceled.connect(self.worker.cancel)
        self.progress_dialog = dialog
        self.worker.progressed.connect(lambda f, m: dialog.setValue(int(f * 1000)) or dialog.setLabelText(m[:80]))
        self.worker.succeeded.connect(self._captured)
        self.worker.failed.connect(self._capture_failed)
        self.worker.cancelled.connect(self._capture_finished)
        self.worker.start()

    def _capture_finished(self) -> None:
        if self.progress_dialog is not None:
            self.progress_dialog.reset()
            self.progress_dialog.deleteLater()
            self.progress_dialog = None
        if self.worker is not None:
            self.worker.wait()
            self.worker = None

    def _captured(self, path: Path) -> None:
        self._capture_finished()
        self.open_trace_requested.emit(Path(path))

    def _capture_failed(self, message: str) -> None:
        self._capture_finished()
        self._error(message)

    def _error(self, message: str) -> None:
        self.last_error = message
        if self.show_error_dialogs:
            QMessageBox.warning(self, "Trn3 Explorer", message)

    def closeEvent(self, event) -> None:  # noqa: N802
        if self.worker is not None:
            self.worker.cancel()
            self.worker.wait()
        super().closeEvent(event)


class SweepWindows:
    """File > Open sweep... on a main window, and the sweep windows it opened."""

    def __init__(self, window: QMainWindow) -> None:
        self.window = window
        self.windows: list[QtSweep] = []
        self.action = QAction("Open s&weep\u2026", window)
        self.action.setObjectName("action-open-sweep")
        self.action.setToolTip("Open a trnx sweep directory: its results table and Pareto plot")
        self.action.triggered.connect(self.choose)
        recent = window.recent_menu   # File > Open recent: Open sweep... goes right after it
        file_menu = recent.parentWidget()
        actions = file_menu.actions()
        i = actions.index(recent.menuAction())
        file_menu.insertAction(actions[i + 1] if i + 1 < len(actions) else None, self.action)

    def choose(self) -> None:
        path = QFileDialog.getExistingDirectory(self.window, "Open sweep directory")
        if path:
            self.open(path)

    def open(self, path: str | Path) -> QtSweep | None:
        """The sweep at `path` in a window of its own (None, after an error dialog, when it cannot be read)."""
        try:
            sweep = open_sweep(path)
        except UserError as exc:
            if getattr(self.window, "show_error_dialogs", True):
                QMessageBox.warning(self.window, "Trn3 Explorer", str(exc))
            return None
        return self.show(sweep)

    def show(self, sweep: Sweep) -> QtSweep:
        """A window on an open sweep; its clicks open traces in the main window."""
        w = QtSweep(sweep)
        w.open_trace_requested.connect(self._open_trace)
        self.windows.append(w)
        w.show()
        return w

    def _open_trace(self, path: Path) -> None:
        self.window.open_path(path)
        self.window.raise_()


def install(window: QMainWindow) -> SweepWindows:
    return SweepWindows(window)
