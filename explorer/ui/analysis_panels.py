"""Installs the analysis panels in a MainWindow: summary first, then narrow down.

One call from `MainWindow.__init__` (`install(window)`) docks and wires

- Summary (right, raised when a trace opens): `QtSummary`;
- Recommendations (right, tabbed): `QtRecommendations`, links jump to the trace;
- Operators (bottom, raised): `QtOperators`, the model -> instruction tree;
- Kernel details and Dependencies (bottom right of the tree, tabbed);
- File > Compare with... (`QtCompare`) and File > Export (`AnalysisExport`);
- an overlay on the timeline that outlines a wait chain or a critical path.

Selection flows one way through `AnalysisSession.node_selected`: the timeline's
selected event, a tree row, a dependency row or a recommendation link all become
a node ("kernel:7") that every panel shows; only explicit "go there" actions
(double-click, link, dependency click) move the timeline.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMenu, QMessageBox

from explorer.model.timeline.trace_index import EventRef
from explorer.ui import gc_guard
from explorer.ui.analysis_export import AnalysisExport
from explorer.ui.analysis_session import AnalysisSession, TraceAnalysis
from explorer.ui.dependencies_view import QtDependencies
from explorer.ui.evidence_bands import QtEvidenceBands
from explorer.ui.kernel_details_view import QtKernelDetails
from explorer.ui.operators_view import QtOperators
from explorer.ui.path_overlay import QtPathOverlay
from explorer.ui.recommendations_view import QtRecommendations
from explorer.ui.state_links import connect_while_alive
from explorer.ui.summary_panel import QtSummary
from simcore.errors import UserError


def _file_menu(window: QMainWindow) -> QMenu:
    for action in window.menuBar().actions():
        if action.menu() is not None and action.text().replace("&", "") == "File":
            return action.menu()
    return window.menuBar().addMenu("&File")


class AnalysisPanels(QObject):
    """The analysis panels of one window and the wiring between them."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.session = AnalysisSession(window)
        self.summary = QtSummary()
        self.recommendations = QtRecommendations()
        self.operators = QtOperators()
        self.kernel_details = QtKernelDetails()
        self.dependencies = QtDependencies()
        self.overlay = QtPathOverlay(window.timeline.canvas)
        self.bands = [QtEvidenceBands(c) for c in (window.timeline.canvas, window.timeline.counter_canvas)]
        self.compare_windows: list = []
        self.export = AnalysisExport(self)
        self._dock()
        self._menus()
        self._wire()

    # -- building --------------------------------------------------------------------
    def _dock(self) -> None:
        w = self.window
        w.add_panel("Summary", self.summary, Qt.RightDockWidgetArea)
        w.add_panel("Recommendations", self.recommendations, Qt.RightDockWidgetArea)
        w.add_panel("Operators", self.operators, Qt.BottomDockWidgetArea)
        # kernel details and dependencies beside the tree (a tabbed dock cannot be split: re-add side by side)
        w.add_panel("Kernel details", self.kernel_details, Qt.BottomDockWidgetArea, tabify=False)
        w.addDockWidget(Qt.BottomDockWidgetArea, w.panels["Kernel details"], Qt.Horizontal)
        w.add_panel("Dependencies", self.dependencies, Qt.BottomDockWidgetArea, tabify=False)
        w.tabifyDockWidget(w.panels["Kernel details"], w.panels["Dependencies"])
        w.panels["Kernel details"].visibilityChanged.connect(self.kernel_details.on_shown)
        self.raise_defaults()
        w.resizeDocks([w.panels["Operators"], w.panels["Kernel details"]], [900, 600], Qt.Horizontal)
        w.resizeDocks([w.panels["Operators"]], [330], Qt.Vertical)

    def raise_defaults(self) -> None:
        """Summary first, the operator tree and kernel details under the timeline."""
        for name in ("Summary", "Operators", "Kernel details"):
            self.window.panels[name].raise_()

    def _menus(self) -> None:
        w = self.window
        file_menu = _file_menu(w)
        actions = file_menu.actions()
        # after "Open recent" when it is there, else before the first separator
        anchor = next((a for i, a in enumerate(actions) if i > 0 and actions[i - 1].menu() is not None), None)
        self.compare_action = QAction("Co&mpare with\u2026", w)
        self.compare_action.setObjectName("action-compare")
        self.compare_action.setToolTip("Open a second trace and compare it (B) with this one (A): metric, engine, "
                                       "op and kernel deltas and two linked timelines.")
        self.compare_action.triggered.connect(lambda: self.choose_compare())
        export = QMenu("&Export", w)
        self.export.build_menu(export)
        file_menu.insertAction(anchor, self.compare_action)
        file_menu.insertMenu(anchor, export)
        self.export_menu = export

    def _wire(self) -> None:
        w, s, view = self.window, self.session, self.window.view
        w.trace_loaded.connect(self._trace_shown)
        if hasattr(w, "trace_closed"):
            w.trace_closed.connect(lambda: s.start(None))
        s.ready.connect(self._ready)
        s.failed.connect(lambda msg: self._error("Analysis failed", msg))
        s.busy_changed.connect(self.summary.set_busy)
        s.busy_changed.connect(self.recommendations.set_busy)
        s.busy_changed.connect(lambda busy: busy and self.operators.status.setText("analysing the trace\u2026"))
        connect_while_alive(view.node_changed, self._show_node)
        connect_while_alive(view.viewport.changed, self.summary.set_range)
        connect_while_alive(view.area_changed, self.summary.show_area)
        connect_while_alive(view.selection_changed, self._event_selected)
        self.operators.node_selected.connect(lambda node: self._guard(s.highlight_node, node))
        self.operators.node_activated.connect(lambda node: self._guard(s.go_to_node, node))
        self.dependencies.jump.connect(lambda node: self._guard(s.go_to_node, node))
        self.dependencies.follow.connect(lambda node: self._guard(s.go_to_node, node))
        self.dependencies.path_changed.connect(self.overlay.set_path)
        self.recommendations.link_activated.connect(self._follow_link)
        self.recommendations.evidence_changed.connect(self._show_evidence)

    # -- reacting ----------------------------------------------------------------------
    def _trace_shown(self, loaded) -> None:
        self._ready(None)  # no panel shows the previous trace while this one is analysed
        self.session.start(loaded.index)

    def _ready(self, analysis: TraceAnalysis | None) -> None:
        if analysis is None:
            gc_guard.thaw()  # the previous trace's objects may be garbage now
        self.overlay.clear()
        self.summary.set_analysis(analysis)
        self.operators.set_hierarchy(analysis.hierarchy if analysis else None)
        self.kernel_details.set_analysis(analysis)
        self.dependencies.set_analysis(analysis)
        self.recommendations.set_recommendations(analysis.recommendations if analysis else None)
        if analysis is not None:
            gc_guard.settle()  # the trace and its analyses live on: later collections skip them
            self.raise_defaults()
            view = self.window.view
            self.summary.set_range(view.viewport.t0, view.viewport.t1)
            if view.area is not None:
                self.summary.show_area(view.area)
            if view.selected is not None:
                self._event_selected(view.selected)

    def _event_selected(self, ref: EventRef | None) -> None:
        if ref is None:  # the selection was cleared: no event's waits stay listed (the tree keeps its node)
            self.dependencies.clear_event()
            return
        a = self.session.analysis
        if a is None:
            return
        node = a.node_of_ref(ref)
        if node:
            self.session.select_node(node)

    def _show_node(self, node: str) -> None:
        a = self.session.analysis
        if a is None:
            return
        try:
            self.operators.follow(node)  # in a later pass: the jump's repaint first
            kernel = a.kernel_of_node(node)
            self.kernel_details.show_kernel(kernel)
            self.dependencies.show_node(node)
        except UserError as exc:
            self._error("Cannot show this item", str(exc))
            return
        level = node.partition(":")[0]
        if level == "kernel":
            self._bring_forward("Kernel details")
        elif level in ("instruction", "dma") and not self.dependencies.holding:
            self._bring_forward("Dependencies")

    def _bring_forward(self, name: str) -> None:
        """Raise a panel unless it is in view already (raising it anyway repaints the whole dock,
        its plot and tables: 5-15 ms of the jump's first pass at 28M events)."""
        dock = self.window.panels[name]
        if not dock.isVisible() or dock.visibleRegion().isEmpty():
            dock.raise_()

    def _show_evidence(self, rec) -> None:
        for overlay in self.bands:
            overlay.set_bands(None if rec is None else rec.bands, "" if rec is None else rec.rule)

    def _follow_link(self, link) -> None:
        """Go where a recommendation points, and keep the recommendations in view (the timeline's
        selection would otherwise raise Details over them)."""
        self._guard(self.session.follow_link, link)
        self.window.panels["Recommendations"].raise_()

    def _guard(self, fn, *args) -> None:
        try:
            fn(*args)
        except UserError as exc:
            self._error("Cannot go there", str(exc))

    def _error(self, title: str, message: str) -> None:
        if getattr(self.window, "show_error_dialogs", True):
            QMessageBox.critical(self.window, title, message)
        else:
            self.window.statusBar().showMessage(f"{title.lower()}: {message}", 8000)

    # -- compare -----------------------------------------------------------------------
    def choose_compare(self) -> None:
        if self.window.loaded is None:
            self._error("Compare", "open a trace first: the compare view opens a second trace against it.")
            return
        path = QFileDialog.getExistingDirectory(self.window, "Compare with which .trnx trace?",
                                                str(Path(self.window.loaded.path).parent))
        if path:
            self.open_compare(path)

    def open_compare(self, path: str | Path):
        """A compare window: the open trace (A) against `path` (B)."""
        from explorer.ui.compare_window import QtCompare
        from explorer.ui.window_extras import bring_to_front

        loaded = self.window.loaded
        if loaded is None:
            self._error("Compare", "open a trace first: the compare view opens a second trace against it.")
            return None
        a = self.session.analysis
        view = QtCompare(loaded, path, self.window, summary_a=a.summary if a else None,
                         hierarchy_a=a.hierarchy if a else None)
        view.setWindowFlag(Qt.Window, True)
        view.failed.connect(lambda msg: self._error("Cannot compare", msg))
        view.destroyed.connect(lambda _=None, v=view: self.compare_windows.remove(v) if v in self.compare_windows else None)
        self.compare_windows.append(view)
        bring_to_front(view)
        return view


def install(window: QMainWindow) -> AnalysisPanels:
    return AnalysisPanels(window)
