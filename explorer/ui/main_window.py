"""The main window: timeline in the middle, panels in docks, loading off the GUI thread.

Adding a panel (see explorer/ui/README.md): build a QWidget that shows some
`explorer.model` object, then

    window.add_panel("Summary", widget, area=Qt.RightDockWidgetArea)

and subscribe it to `trace_loaded(LoadedTrace)` (a new trace is shown) and to the
window's view state, `window.view` (explorer.model.timeline.view_state.ViewState):
`selection_changed(EventRef | None)`, `viewport.changed(t0, t1)`,
`area_changed(Scope | None)`, `colour_mode_changed(mode)`, `node_changed(node)`.
Drive the view with `window.zoom_to(t0, t1, track_id)`, `window.highlight(ref)` or
the state's own setters.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QComboBox, QDockWidget, QFileDialog, QLabel, QMainWindow, QMessageBox, QProgressBar,
    QPushButton, QToolBar, QWidget,
)

from explorer.model.timeline.trace_index import COLOUR_MODES, EventRef
from explorer.model.units import format_ns
from explorer.model.timeline.view_state import ViewState
from explorer.sweep.store import is_sweep_path
from explorer.ui import gc_guard
from explorer.ui.collective_waits_view import QtCollectiveWaits
from explorer.ui.details_view import QtEventDetails
from explorer.ui.layout_boundary import LayoutBoundary
from explorer.ui.legend_view import QtLegend
from explorer.ui.loader import LoadedTrace, TraceLoader
from explorer.ui.recent import RecentFiles
from explorer.ui.search_bar import QtSearchBar
from explorer.ui.selection_view import QtSelectionSummary
from explorer.ui.state_links import connect_while_alive
from explorer.ui.timeline import TimelineWidget
from explorer.ui.utilisation_view import QtUtilisation
from explorer.ui.window_extras import install as install_window_extras
from explorer.ui.analysis_panels import install as install_analysis_panels
from explorer.ui.sweep_window import install as install_sweeps
from explorer.ui.tools import install as install_tools


# The right dock's width: its five tabs (Details ... Recommendations) whole, side by side, at 1920x1080
RIGHT_DOCK_WIDTH = 450


class MainWindow(QMainWindow):
    """Trn3 Explorer's window. `open_path` loads a trace in a worker thread."""

    trace_loaded = Signal(object)  # LoadedTrace
    trace_closed = Signal()
    load_failed = Signal(str)

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        gc_guard.install()  # before any worker thread starts: no Qt object is ever collected off the GUI thread
        self.setObjectName("main-window")
        self.setWindowTitle("Trn3 Explorer")
        self.resize(1600, 1000)
        self.setAcceptDrops(True)
        self.setDockNestingEnabled(True)
        self.recent = RecentFiles(settings)
        self.loaded: LoadedTrace | None = None
        self.loader: TraceLoader | None = None
        self.panels: dict[str, QDockWidget] = {}
        self.show_error_dialogs = True  # False: failures only emit load_failed (scripts, smoke tests)

        self.view = ViewState()  # what every widget of this window shows (explorer.model.timeline.view_state)
        self.timeline = TimelineWidget(self, self.view)
        self.setCentralWidget(LayoutBoundary(self.timeline))  # (its rows' layouts stay inside it)
        self.details = QtEventDetails()
        self.selection_summary = QtSelectionSummary()
        self.legend = QtLegend()
        self.utilisation = QtUtilisation()
        self.collective_waits = QtCollectiveWaits()
        self.search = QtSearchBar()

        self._build_toolbar()
        self._build_status_bar()
        self.add_panel("Details", self.details, Qt.RightDockWidgetArea)
        self.add_panel("Selection", self.selection_summary, Qt.RightDockWidgetArea)
        self.add_panel("Legend", self.legend, Qt.RightDockWidgetArea)
        self.add_panel("Utilisation", self.utilisation, Qt.BottomDockWidgetArea)
        self.add_panel("Collective waits", self.collective_waits, Qt.BottomDockWidgetArea)
        self.panels["Details"].raise_()
        self.panels["Utilisation"].raise_()
        self.resizeDocks([self.panels["Details"]], [RIGHT_DOCK_WIDTH], Qt.Horizontal)
        self.resizeDocks([self.panels["Utilisation"]], [230], Qt.Vertical)
        self._build_menus()

        tl, view = self.timeline, self.view
        for signal, slot in ((view.selection_changed, self.details.show_event),
                             (view.dependencies_changed, self._show_dependencies),
                             (view.selection_changed, self._raise_details), (view.area_changed, self._area_changed),
                             (view.viewport.changed, self.utilisation.set_range),
                             (view.viewport.changed, self.collective_waits.set_range),
                             (view.viewport.changed, self._show_range), (view.colour_mode_changed, self._show_legend)):
            connect_while_alive(signal, slot)
        self.details.jump_requested.connect(self.highlight)
        self.collective_waits.jump_requested.connect(self.highlight)
        self.search.hit_selected.connect(self.highlight)
        self.legend.category_clicked.connect(self.search.run)
        self._frame_timer = QTimer(self, interval=500)
        self._frame_timer.timeout.connect(lambda: self.frame_label.setText(f"frame {tl.last_frame_ms or tl.canvas.last_paint_ms:.1f} ms"))
        self._frame_timer.start()
        self.extras = install_window_extras(self)  # File > New capture, themes, shortcuts, About, saved layout
        self.analysis = install_analysis_panels(self)  # summary, operators, kernel, dependencies, recommendations, compare, export
        self.sweeps = install_sweeps(self)  # File > Open sweep...: results table and Pareto plot
        self.tools = install_tools(self)  # query console, field search, statistics, ... (explorer/ui/tools)
        self.analysis.raise_defaults()  # the default tabs in front, not the tools tabbed in last

    # -- building --------------------------------------------------------------------
    def add_panel(self, title: str, widget: QWidget, area: Qt.DockWidgetArea = Qt.RightDockWidgetArea,
                  *, tabify: bool = True, tab_with: str | None = None) -> QDockWidget:
        """Dock a panel (tabbed with the panels already in that area, or with the panel named
        `tab_with` when the area holds several tab groups); returns its dock. The dock holds the
        widget in a `LayoutBoundary` (`dock.widget().inner` is the widget)."""
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title.lower().replace(' ', '-')}")
        dock.setWidget(LayoutBoundary(widget))  # (a change inside re-lays the dock and window only when it must)
        dock.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable | QDockWidget.DockWidgetClosable)
        same_area = [d for d in self.panels.values() if self.dockWidgetArea(d) == area]
        if tab_with in self.panels:
            same_area = [self.panels[tab_with]]
        self.addDockWidget(area, dock)
        if tabify and same_area:
            self.tabifyDockWidget(same_area[0], dock)
        self.panels[title] = dock
        if hasattr(self, "view_menu"):
            self.view_menu.addAction(dock.toggleViewAction())
        return dock

    def _build_toolbar(self) -> None:
        bar = QToolBar("Main", self)
        bar.setObjectName("toolbar")
        bar.setMovable(False)
        self.addToolBar(bar)
        open_act = bar.addAction("Open\u2026")
        open_act.triggered.connect(self.choose_trace)
        fit = bar.addAction("Fit")
        fit.setToolTip("Show the whole trace (F fits the selection)")
        fit.triggered.connect(lambda: self.view.viewport.fit())
        bar.addSeparator()
        bar.addWidget(QLabel(" Colour by "))
        self.colour_combo = QComboBox()
        self.colour_combo.setObjectName("colour-mode")
        self.colour_combo.addItems(list(COLOUR_MODES))
        self.colour_combo.currentTextChanged.connect(self.timeline.set_colour_mode)
        bar.addWidget(self.colour_combo)
        bar.addSeparator()
        bar.addWidget(self.search)

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.range_label = QLabel("")
        self.range_label.setObjectName("view-range")
        self.frame_label = QLabel("")
        self.frame_label.setObjectName("frame-time")
        # a fixed size with room for any frame time, the text at its right: the label changes twice
        # a second, and Qt lays out neither the status bar nor the window for a fixed-size widget
        self.frame_label.setText("frame 9999.9 ms")
        self.frame_label.setFixedSize(self.frame_label.sizeHint())
        self.frame_label.setText("")
        self.frame_label.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        self.progress = QProgressBar()
        self.progress.setObjectName("load-progress")
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(320)
        self.progress.setTextVisible(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel_loading)
        for w in (self.progress, self.cancel_button):
            w.hide()
            sb.addPermanentWidget(w)
        # (a new text re-lays the status bar and window only when it does not fit: each zoom step sets it)
        sb.addWidget(LayoutBoundary(self.range_label), 1)
        sb.addPermanentWidget(self.frame_label)

    def _build_menus(self) -> None:
        m = self.menuBar()
        file_menu = m.addMenu("&File")
        act = file_menu.addAction("&Open trace\u2026")
        act.setShortcut(QKeySequence.Open)
        act.triggered.connect(self.choose_trace)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self._fill_recent()
        file_menu.addAction("&Close trace", self.close_trace)
        file_menu.addSeparator()
        quit_act = file_menu.addAction("&Quit", self.close)
        quit_act.setShortcut(QKeySequence.Quit)
        self.view_menu = m.addMenu("&View")
        fit = self.view_menu.addAction("Fit whole trace", lambda: self.view.viewport.fit())
        fit.setShortcut(QKeySequence("Home"))
        self.view_menu.addAction("Fold all groups", lambda: self._fold(True))
        self.view_menu.addAction("Unfold all groups", lambda: self._fold(False))
        colour = self.view_menu.addMenu("Colour by")
        group = QActionGroup(self)
        for mode in COLOUR_MODES:
            a = colour.addAction(mode)
            a.setCheckable(True)
            a.setChecked(mode == "opcode")
            a.triggered.connect(lambda _=False, m=mode: self.colour_combo.setCurrentText(m))
            group.addAction(a)
        find = QAction("Find", self, shortcut=QKeySequence.Find)
        find.triggered.connect(lambda: (self.search.edit.setFocus(), self.search.edit.selectAll()))
        self.addAction(find)
        self.view_menu.addSeparator()
        for dock in self.panels.values():
            self.view_menu.addAction(dock.toggleViewAction())
        m.addMenu("&Help")  # Keyboard shortcuts and About: explorer/ui/window_extras.py

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        paths = self.recent.paths()
        for p in paths:
            self.recent_menu.addAction(p, lambda p=p: self.open_path(p))
        if not paths:
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    def _fold(self, collapsed: bool) -> None:
        for c in (self.timeline.canvas, self.timeline.counter_canvas):
            if c.tree is not None:
                c.tree.set_all_collapsed(collapsed)
                c.relayout()

    # -- opening -----------------------------------------------------------------------
    def choose_trace(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open a .trnx trace (or a sweep) directory")
        if path:
            self.open_path(path)

    def open_path(self, path: str | Path) -> None:
        """Load a trace in a worker thread; progress shows in the status bar. A sweep directory
        (or its results.parquet) opens the sweep window instead, as File > Open sweep does."""
        path = Path(path)
        if is_sweep_path(path):
            self.sweeps.open(path)
            return
        self.cancel_loading()
        loader = self.loader = TraceLoader(path, self.view.colour_mode, self)
        loader.progressed.connect(self._progress)
        loader.loaded.connect(self._loaded)
        loader.failed.connect(self._failed)
        loader.refused.connect(self._refused)
        loader.damaged.connect(self._damaged)
        loader.finished.connect(loader.deleteLater)
        self.progress.setValue(0)
        self.progress.setFormat(f"opening {path.name}\u2026")
        self.progress.show()
        self.cancel_button.show()
        loader.start()

    def cancel_loading(self) -> None:
        if self.loader is not None:
            self.loader.cancel()
            self.loader.progressed.disconnect()
            self.loader.loaded.disconnect()
            self.loader.failed.disconnect()
            self.loader = None
        self.progress.hide()
        self.cancel_button.hide()

    def wait_loaded(self, timeout_ms: int = 60000) -> None:
        """Block until the current load finishes (scripts, smoke tests)."""
        if self.loader is not None:
            self.loader.wait(timeout_ms)
        from PySide6.QtWidgets import QApplication

        QApplication.processEvents()

    def _progress(self, fraction: float, message: str) -> None:
        self.progress.setValue(int(fraction * 1000))
        self.progress.setFormat(f"{message} %p%")

    def _loaded(self, result: LoadedTrace) -> None:
        if self.sender() is not self.loader:
            return
        self.loader = None
        self.progress.hide()
        self.cancel_button.hide()
        self.show_trace(result)

    def _failed(self, message: str) -> None:
        if self.sender() is not self.loader:
            return
        self.loader = None
        self.progress.hide()
        self.cancel_button.hide()
        if message:
            self.statusBar().showMessage("could not open the trace", 5000)
            self.load_failed.emit(message)
            if self.show_error_dialogs:
                QMessageBox.critical(self, "Cannot open trace", message)

    def _damaged(self, path: Path, message: str) -> None:
        """A shown trace failed its checksums (verified after it opened): close it, as the CLI
        refuses it, and say why."""
        self._close_refused(path, message, "Damaged trace", "the trace is damaged")

    def _refused(self, path: Path, message: str) -> None:
        """A trace shown before its validation (it had no saved index) failed it: close it, as
        the CLI refuses it, and say why."""
        self._close_refused(path, message, "Cannot open trace", "could not open the trace")

    def _close_refused(self, path: Path, message: str, title: str, status: str) -> None:
        if self.loaded is None or self.loaded.path != path:
            return
        self.show_trace(None)
        self.statusBar().showMessage(status, 5000)
        self.load_failed.emit(message)
        if self.show_error_dialogs:
            QMessageBox.critical(self, title, message)

    def show_trace(self, result: LoadedTrace | None) -> None:
        """Show a loaded trace in every view (None: close)."""
        self.loaded = result
        index = result.index if result else None
        self.details.set_index(index)
        self.selection_summary.set_index(index)
        self.search.set_index(index)
        self.collective_waits.set_index(index)
        self.utilisation.set_model(result.utilisation if result else None, float(index.span[0]) if index else 0.0)
        self.timeline.set_index(index)
        self.legend.show_colours(index, self.view.colour_mode)
        if result is None:
            self.setWindowTitle("Trn3 Explorer")
            self.trace_closed.emit()
            return
        tr = index.trace
        wl = tr.workload.get("name", "")
        hw = tr.hardware.get("name", "")
        self.setWindowTitle(f"{result.path.name} \u2014 {wl} on {hw} \u2014 Trn3 Explorer")
        self.recent.add(result.path)
        self.statusBar().showMessage(f"{index.event_count:,} events, {format_ns(index.span[1] - index.span[0])}", 8000)
        self.timeline.canvas.setFocus()  # W/A/S/D work right away
        self.utilisation.set_range(self.view.viewport.t0, self.view.viewport.t1)
        self.collective_waits.set_range(self.view.viewport.t0, self.view.viewport.t1)
        self.trace_loaded.emit(result)

    def close_trace(self) -> None:
        self.cancel_loading()
        self.show_trace(None)

    # -- driving the timeline (the API other panels use) ---------------------------------
    def zoom_to(self, t0: float, t1: float, track_id: int | None = None) -> None:
        self.timeline.zoom_to(t0, t1, track_id)

    def highlight(self, ref: EventRef) -> None:
        self.timeline.highlight(ref)

    def _show_dependencies(self, ref: EventRef) -> None:
        self.details.show_dependencies(ref, self.view.selected_dependencies)

    def _raise_details(self, ref: EventRef | None) -> None:
        if ref is not None:
            self.panels["Details"].raise_()

    def _show_legend(self, mode: str) -> None:
        self.legend.show_colours(self.view.index, mode)

    def _area_changed(self, sel) -> None:
        self.selection_summary.show_selection(sel)
        if sel is not None:
            self.panels["Selection"].raise_()

    def _show_range(self, t0: float, t1: float) -> None:
        if self.view.index is None:
            return
        o = self.view.origin
        self.range_label.setText(f"view {format_ns(t0 - o)} \u2013 {format_ns(t1 - o)}  ({format_ns(t1 - t0)})")

    # -- drag and drop -----------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:  # noqa: N802
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            event.acceptProposedAction()
            self.open_path(urls[0].toLocalFile())

    def closeEvent(self, event) -> None:  # noqa: N802
        if self.loader is not None:
            loader = self.loader
            self.cancel_loading()
            loader.wait(10000)
        for loader in self.findChildren(TraceLoader):  # a shown trace's loader may still be saving its index
            loader.cancel()  # (or verifying checksums: that stops at the next file)
            loader.wait(120_000)
        super().closeEvent(event)
