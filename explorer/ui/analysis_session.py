"""The analyses behind the summary, operator, kernel, dependency and recommendation panels.

`explorer.model.analysis.trace_analysis.TraceAnalysis` composes the analyses of one trace (the
same object `trnx summary` reports from); `AnalysisSession` is the Qt side: it computes
it off the GUI thread when a trace is shown (and later selection summaries, critical
paths, on the same worker), hands results back on the GUI thread, and turns "go to
this node / link" into view-state calls (`select`, `set_area`, `set_node`) and zooms.
Panels only ever read model objects from it; they compute nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QObject, Signal

from explorer.model.analysis.recommendations import Link
from explorer.model.timeline.selection import area_scope
from explorer.model.analysis.trace_analysis import TraceAnalysis
from explorer.model.timeline.trace_index import TraceIndex
from explorer.model.timeline.view_state import ViewState
from explorer.ui.worker import Latest as _Latest
from explorer.ui.worker import Worker
from simcore.errors import UserError

NODE_LEVELS = ("op", "kernel", "instruction", "dma")


_worker = Worker("trnx-analysis", "run this analysis")


def run_in_background(fn: Callable[[], Any], callback: Callable[[bool, Any], None]) -> Future:
    """Run `fn` on the analysis worker; `callback(ok, result or message)` runs on the GUI thread.

    One worker for the whole app: analyses of a trace never race each other, and a
    burst of requests (zooming) queues rather than fighting for the two cores.
    """
    return _worker.submit(fn, callback)


class Latest(_Latest):
    """`explorer.ui.worker.Latest` on the analysis worker."""

    def __init__(self) -> None:
        super().__init__(run_in_background)


class AnalysisSession(QObject):
    """The analysis side of a main window: the current trace's `TraceAnalysis`, computed off
    the GUI thread; the current node lives in the window's view state (`view.node`,
    `view.node_changed`: "op:3", "kernel:7", "instruction:12", "dma:5").

    Signals: `ready(TraceAnalysis | None)` when a trace's analyses are computed (None:
    closed), `failed(message)`, `busy_changed(busy)`.
    """

    ready = Signal(object)
    failed = Signal(str)
    busy_changed = Signal(bool)

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.view: ViewState = window.view
        self.analysis: TraceAnalysis | None = None
        self._load = Latest()
        self.computing = False

    @property
    def node(self) -> str | None:
        """The current operator-tree node (the view state's)."""
        return self.view.node

    # -- lifecycle -----------------------------------------------------------------
    def start(self, index: TraceIndex | None) -> None:
        """Analyse a newly shown trace (None: the trace was closed)."""
        self.analysis = None
        if index is None:
            self._load.cancel()
            self._set_busy(False)
            self.ready.emit(None)
            return
        self._set_busy(True)
        self._load.submit(lambda: TraceAnalysis.for_window(index), self._computed)

    def _computed(self, ok: bool, value: Any) -> None:
        self._set_busy(False)
        if not ok:
            self.failed.emit(value)
            return
        self.analysis = value
        self.ready.emit(value)

    def _set_busy(self, busy: bool) -> None:
        self.computing = busy
        self.busy_changed.emit(busy)

    # -- selection -----------------------------------------------------------------
    def select_node(self, node: str) -> None:
        """Make `node` the current one (panels follow); does not move the timeline."""
        if self.analysis is None or not node:
            return
        self.view.set_node(node)

    # -- driving the timeline --------------------------------------------------------
    def go_to_node(self, node: str) -> None:
        """Zoom the timeline to a node and highlight it (select its event, or area-select an op)."""
        a = self.analysis
        if a is None:
            return
        h = a.hierarchy
        t0, t1 = h.time_range(node)
        tracks = h.track_ids(node)
        self._zoom(t0, t1, tracks[0] if tracks else None)
        self.highlight_node(node)

    def highlight_node(self, node: str) -> None:
        """Make `node` current and mark it on the timeline without zooming: its event selected
        (brought into view), or for an op an area over every row of the cores it ran on."""
        a = self.analysis
        if a is None or not node:
            return
        ref = a.ref_of_node(node)
        if ref is not None:
            self.view.set_area(None)
            self.window.timeline.select(ref)
        else:
            t0, t1 = a.hierarchy.time_range(node)
            tracks = a.hierarchy.area_track_ids(node)
            self.view.select(None)
            self.view.set_area(area_scope(tracks, t0, t1) if tracks else None)
        self.select_node(node)

    def go_to_event(self, event_id: int) -> None:
        """Highlight an instruction or DMA transfer by its id (dependency rows, chain steps)."""
        if self.analysis is None:
            return
        ref = self.analysis.index.find_id(event_id)
        if ref is None:
            raise UserError(f"event {event_id} is not in this trace.")
        self.window.highlight(ref)

    def follow_link(self, link: Link) -> None:
        """Go where a recommendation points: its node when the tree has one, else its rows and range."""
        a = self.analysis
        if a is None:
            return
        self.window.timeline.reveal_tracks(link.track_ids)  # unfold the chips and cores the evidence is on
        level = link.node.partition(":")[0]
        if level in NODE_LEVELS:
            self.go_to_node(link.node)
            if (link.t0, link.t1) != a.hierarchy.time_range(link.node):
                self._zoom(link.t0, link.t1, link.track_ids[0] if link.track_ids else None)
            return
        self._zoom(link.t0, link.t1, link.track_ids[0] if link.track_ids else None)
        self.view.select(None)
        self.view.set_area(area_scope(link.track_ids, link.t0, link.t1) if link.track_ids else None)

    def _zoom(self, t0: float, t1: float, track_id: int | None) -> None:
        pad = max((t1 - t0) * 0.05, 20.0)
        self.window.zoom_to(t0 - pad, t1 + pad, track_id)
