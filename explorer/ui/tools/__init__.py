"""The explorer's power tools (issue 18), each in its own file, installed into a main window.

`install(window)` docks them and wires them to the window's view state; the window
itself only calls it. Everything they compute lives in `explorer.model` (no Qt) and
runs on the tools' worker (`background.run_tool`), never on the GUI thread.
"""

from __future__ import annotations

import shlex

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication, QMainWindow, QMessageBox

from explorer.model import deep_link
from simcore.errors import UserError

from explorer.model.timeline.trace_index import EventRef
from explorer.ui.canvas_layers import OverlayLayer
from explorer.ui.state_links import connect_while_alive
from explorer.ui.tools.annotations_view import AnnotationsLayer, QtAnnotations
from explorer.ui.tools.collective_chart import QtCollectiveChart
from explorer.ui.tools.icicle_view import QtIcicle
from explorer.ui.tools.layouts import Layouts
from explorer.ui.tools.memory_view import QtMemoryView
from explorer.ui.tools.regions_view import QtRegions
from explorer.ui.tools.query_console import QtQueryConsole
from explorer.ui.tools.query_track_view import QtQueryTracks
from explorer.ui.tools.search_hits_layer import SearchHitsLayer
from explorer.ui.tools.stats_view import QtStatistics


class Tools:
    """The query console, pinned query tracks, search-hit outlines and statistics of one window."""

    def __init__(self, window: QMainWindow) -> None:
        self.window = window
        self.console = QtQueryConsole(getattr(window.recent, "store", None))
        window.add_panel("Query", self.console, Qt.BottomDockWidgetArea)
        self.statistics = QtStatistics()
        window.add_panel("Statistics", self.statistics, Qt.BottomDockWidgetArea)
        timeline = window.timeline
        self.query_tracks = QtQueryTracks(window.view, timeline.canvas, timeline)
        timeline.layout().insertWidget(1, self.query_tracks)  # under the ruler, above the rows
        self.hits_layer = SearchHitsLayer(lambda: window.search.hits)
        layers = timeline.canvas.layers
        at = next((i for i, layer in enumerate(layers) if isinstance(layer, OverlayLayer)), len(layers))
        layers.insert(at, self.hits_layer)  # over the rows, under the selection and hover
        window.search.hits_changed.connect(lambda _hits: timeline.canvas.update())
        self.annotations = QtAnnotations(window.view)
        # annotations and regions are tables: beside the kernel details, where the right dock's tabs would scroll
        window.add_panel("Annotations", self.annotations, Qt.BottomDockWidgetArea, tab_with="Kernel details")
        for canvas in (timeline.canvas, timeline.counter_canvas):
            layers = canvas.layers
            at = next((i for i, layer in enumerate(layers) if isinstance(layer, OverlayLayer)), len(layers))
            layers.insert(at, AnnotationsLayer(lambda: self.annotations.items))
        self.annotations.changed.connect(timeline.update_all)
        self.annotations.range_requested.connect(lambda t0, t1: window.zoom_to(t0, t1))
        self.annotations.failed.connect(lambda msg: self._error("Annotations", msg))
        self.collective_chart = QtCollectiveChart()
        window.add_panel("Collective durations", self.collective_chart, Qt.BottomDockWidgetArea)
        self.collective_chart.link_requested.connect(self._follow)
        self.icicle = QtIcicle()
        window.add_panel("Icicle", self.icicle, Qt.BottomDockWidgetArea)
        self.icicle.box_clicked.connect(self._show_box)
        self.regions = QtRegions()
        window.add_panel("Regions", self.regions, Qt.BottomDockWidgetArea, tab_with="Kernel details")
        self.regions.region_shown.connect(self._show_region)
        self.memory = QtMemoryView()
        window.add_panel("Memory", self.memory, Qt.BottomDockWidgetArea)
        self.memory.kernel_requested.connect(self._go_to_kernel)
        connect_while_alive(window.view.viewport.changed, self.memory.set_window)
        self.mark = QShortcut(QKeySequence("M"), window, self.mark_here)
        self.mark.setObjectName("shortcut-marker")
        self.mark.setEnabled(False)  # a marker belongs to a trace: with none open, M is an ordinary key
        self.slash = QShortcut(QKeySequence("/"), window, self.focus_search)
        self.slash.setObjectName("shortcut-search")
        self.copy_link_action = QAction("Copy &link", window)
        self.copy_link_action.setObjectName("action-copy-link")
        self.copy_link_action.setShortcut(QKeySequence("Ctrl+Shift+C"))
        self.copy_link_action.setToolTip("Copy a command that opens this trace here: the selected event, else the visible range")
        self.copy_link_action.triggered.connect(self.copy_link)
        window.addAction(self.copy_link_action)
        self.layouts = Layouts(window, window.recent.store)
        if hasattr(window, "view_menu"):
            window.view_menu.addSeparator()
            window.view_menu.addAction(self.copy_link_action)
            window.view_menu.addMenu(self.layouts.menu)
        self._goto: str | None = None

        window.trace_loaded.connect(self._trace_shown)
        window.trace_closed.connect(self._trace_closed)
        connect_while_alive(window.view.area_changed, self.statistics.show_area)
        session = getattr(getattr(window, "analysis", None), "session", None)
        if session is not None:  # the statistics of a new trace wait for its analyses (installed before the tools)
            session.busy_changed.connect(self.statistics.hold)
        self.console.pin_requested.connect(self.query_tracks.pin)
        self.console.event_requested.connect(self._go_to_id)
        self.console.range_requested.connect(lambda t0, t1: window.zoom_to(t0, t1))
        self.query_tracks.zoom_requested.connect(lambda t0, t1: window.zoom_to(t0, t1))
        self.statistics.select_query.connect(window.search.run)
        self.statistics.slowest.connect(self._go_to_slowest)

    def mark_here(self):
        """M: a marker at the pointer, snapped to an event edge of the row under it."""
        canvas = self.window.timeline.canvas
        g = canvas.hover_geom()
        vp = self.window.view.viewport
        return self.annotations.add_marker_here(g.track_id if g is not None else None, vp.width / canvas.track_width)

    def focus_search(self) -> None:
        """"/": type a search (as in Perfetto and vim)."""
        self.window.search.edit.setFocus(Qt.ShortcutFocusReason)
        self.window.search.edit.selectAll()

    # -- deep links ----------------------------------------------------------------------
    def link(self) -> str | None:
        """The link of what the window shows: the selected event, else the visible range."""
        view = self.window.view
        if view.index is None:
            return None
        if view.selected is not None:
            return deep_link.link_for_event(view.index, view.selected)
        return deep_link.link_for_range(view.viewport.t0, view.viewport.t1)

    def copy_link(self) -> str | None:
        """Put `trnx view TRACE --goto LINK` for the current place on the clipboard, quoted as a shell
        reads it."""
        link, loaded = self.link(), self.window.loaded
        if link is None or loaded is None:
            return None
        text = f"trnx view {shlex.quote(str(loaded.path))} --goto {link}"  # (pasted into a shell: a path with spaces)
        QApplication.clipboard().setText(text)
        self.window.statusBar().showMessage(f"copied: {text}", 5000)
        return text

    def go_to_link(self, text: str) -> deep_link.Target:
        """Show where `text` (the --goto grammar) points; raises UserError when the trace has no such place."""
        view = self.window.view
        if view.index is None:
            raise UserError("open a trace first: a link points into a trace.")
        target = deep_link.resolve(view.index, text)
        self.window.zoom_to(target.t0, target.t1, target.track_id)
        view.set_area(None)
        view.select(target.ref)
        if target.node is not None:
            view.set_node(target.node)
        return target

    def _show_region(self, t0: float, t1: float) -> None:
        pad = max((t1 - t0) * 0.05, 50.0)
        self.window.zoom_to(t0 - pad, t1 + pad)

    def _show_box(self, box) -> None:
        """An icicle box clicked: its time span on the timeline; a layer or op also in the operator tree."""
        self._show_region(float(box.t0), float(box.t1))
        if box.node.startswith("op:") and box.depth > 0:
            self.window.view.set_node(box.node)

    def _follow(self, text: str) -> None:
        try:
            self.go_to_link(text)
        except UserError as exc:
            self._error("Cannot go there", str(exc))

    def go_when_loaded(self, text: str) -> None:
        """Follow `text` once the trace being opened is shown (`trnx view TRACE --goto LINK`)."""
        deep_link.parse(text)  # bad grammar is refused now, not after the load
        self._goto = text

    def _trace_shown(self, loaded) -> None:
        if self._goto is not None:
            text, self._goto = self._goto, None
            try:
                self.go_to_link(text)
            except UserError as exc:
                self._error("Cannot follow the link", str(exc))
        self.mark.setEnabled(True)
        self.console.set_trace(loaded.index.trace)
        self.statistics.set_trace(loaded.index.trace)
        self.annotations.set_trace_dir(loaded.path)
        self.collective_chart.set_trace(loaded.index.trace, float(loaded.index.span[0]))
        self.regions.set_index(loaded.index)
        self.icicle.set_trace(loaded.index.trace)
        self.memory.set_trace(loaded.index.trace, float(loaded.index.span[0]))
        self.memory.set_window(self.window.view.viewport.t0, self.window.view.viewport.t1)
        for t in list(self.query_tracks.tracks):
            self.query_tracks.unpin(t.name)

    def _trace_closed(self) -> None:
        self.mark.setEnabled(False)
        self.console.set_trace(None)
        self.statistics.set_trace(None)
        self.annotations.set_trace_dir(None)
        self.collective_chart.set_trace(None)
        self.regions.set_index(None)
        self.icicle.set_trace(None)
        self.memory.set_trace(None)
        for t in list(self.query_tracks.tracks):
            self.query_tracks.unpin(t.name)

    def _go_to_id(self, event_id: int) -> None:
        index = self.window.view.index
        ref = index.find_id(event_id) if index is not None else None
        if ref is None:
            self._error("Cannot go there", f"no instruction or DMA transfer has id {event_id}.")
            return
        self.window.highlight(ref)

    def _go_to_kernel(self, kernel_id: int) -> None:
        """Select a kernel on the timeline (a memory view click)."""
        index = self.window.view.index
        if index is None:
            return
        rows = (index.tables["kernels"].column("kernel_id") == kernel_id).nonzero()[0]
        if len(rows):
            self.window.highlight(EventRef("kernels", int(rows[0])))

    def _go_to_slowest(self, table: str, ident: int, start: float, dur: float) -> None:
        index = self.window.view.index
        if index is None:
            return
        if table in ("instructions", "dma"):
            self._go_to_id(ident)
        elif table == "kernels":
            rows = (index.tables["kernels"].column("kernel_id") == ident).nonzero()[0]
            if len(rows):
                self.window.highlight(EventRef("kernels", int(rows[0])))
        else:  # an op: not a row of its own on the timeline; show its span
            pad = max(dur * 0.1, 50.0)
            self.window.zoom_to(start - pad, start + dur + pad)

    def _error(self, title: str, message: str) -> None:
        if getattr(self.window, "show_error_dialogs", True):
            QMessageBox.critical(self.window, title, message)
        else:
            self.window.statusBar().showMessage(f"{title.lower()}: {message}", 8000)


def install(window: QMainWindow) -> Tools:
    return Tools(window)
