"""The timeline widget (objectName `timeline`): ruler, engine rows, counter rows.

Navigation follows Perfetto and the Neuron profiler: W/S zoom at the cursor, A/D
pan, the wheel zooms at the cursor (Shift+wheel scrolls rows), drag pans, F fits
the selection, Ctrl+drag (or right-drag, or a drag on the ruler) zooms to a range,
Shift+drag selects an area, Esc clears. Click selects an event; double-click fits
it. Group rows fold on click; a row's pin (right end of its label) pins it to the
top; dragging a label reorders rows within their group.

Its state (viewport, selected event, area, hover, colour mode) is a `ViewState`
(explorer.model.timeline.view_state) the canvases, the ruler and every panel subscribe to;
panels drive it through that state or through `zoom_to`, `highlight` and `select`
here, which also scroll the rows.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtWidgets import QHBoxLayout, QScrollBar, QSplitter, QVBoxLayout, QWidget

from explorer.model.scope import Scope
from explorer.model.timeline.event_details import dependencies_of
from explorer.model.timeline.track_tree import TrackTree
from explorer.model.timeline.trace_index import EventRef, TraceIndex
from explorer.model.timeline.view_state import ViewState, Viewport
from explorer.ui import palette as P
from explorer.ui.ruler import TimeRuler
from explorer.ui.selection_worker import latest
from explorer.ui.state_links import connect_while_alive
from explorer.ui.track_canvas import TrackCanvas

ZOOM_STEP = 0.8  # W: width x 0.8; S: width / 0.8
PAN_STEP = 0.15  # A/D: 15% of the visible width

# What Help > Keyboard shortcuts lists for the timeline (its keys are handlers, not QActions).
TIMELINE_KEYS = """<h3>Timeline</h3><table cellpadding='3'>
<tr><td><b>W / S</b></td><td>zoom in / out at the mouse cursor</td></tr>
<tr><td><b>A / D</b></td><td>pan left / right</td></tr>
<tr><td><b>wheel</b></td><td>zoom at the cursor (Shift+wheel: scroll rows)</td></tr>
<tr><td><b>drag</b></td><td>pan (and scroll rows)</td></tr>
<tr><td><b>Ctrl+drag</b>, right-drag, drag on the ruler</td><td>zoom to a range</td></tr>
<tr><td><b>Shift+drag</b></td><td>select an area (rows x time): its summary opens</td></tr>
<tr><td><b>click / double-click</b></td><td>select an event / fit it</td></tr>
<tr><td><b>F</b></td><td>fit the selection (event, area, or the whole trace)</td></tr>
<tr><td><b>Esc</b></td><td>clear the selection</td></tr>
<tr><td><b>Ctrl+F</b>, Enter, Shift+Enter</td><td>search, next hit, previous hit</td></tr>
<tr><td>click a group row</td><td>fold / unfold it</td></tr>
<tr><td>click the pin at a row's right</td><td>pin it to the top</td></tr>
<tr><td>drag a row label</td><td>reorder it within its group</td></tr>
</table>"""


class _Pane(QWidget):
    """A canvas with its vertical scroll bar."""

    def __init__(self, canvas: TrackCanvas, parent: QWidget) -> None:
        super().__init__(parent)
        self.canvas = canvas
        self.bar = QScrollBar(Qt.Vertical, self)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(canvas, 1)
        lay.addWidget(self.bar)
        canvas.setParent(self)
        canvas.content_height_changed.connect(self._sync)
        canvas.scrolled.connect(self._sync)
        self.bar.valueChanged.connect(canvas.set_scroll)

    def _sync(self, _h: int = 0) -> None:
        self.bar.blockSignals(True)
        self.bar.setRange(0, self.canvas.max_scroll)
        self.bar.setPageStep(max(self.canvas.height() - self.canvas.pinned_height, 1))
        self.bar.setSingleStep(18)
        self.bar.setValue(self.canvas.scroll_y)
        self.bar.blockSignals(False)


class TimelineWidget(QWidget):
    """Engine rows over a shared time axis, with counter rows underneath."""

    def __init__(self, parent: QWidget | None = None, state: ViewState | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("timeline")
        self.setFocusPolicy(Qt.StrongFocus)
        self.state = state or ViewState()
        self.colours = P.CategoryColours(self.state, self)
        self.last_frame_ms = 0.0

        self.canvas = TrackCanvas(self.state, self.colours, self, counters=False)
        self.counter_canvas = TrackCanvas(self.state, self.colours, self, counters=True)
        self.ruler = TimeRuler(self.state, self.canvas, self)
        self.lanes_pane = _Pane(self.canvas, self)
        self.counters_pane = _Pane(self.counter_canvas, self)
        self.splitter = QSplitter(Qt.Vertical, self)
        self.splitter.addWidget(self.lanes_pane)
        self.splitter.addWidget(self.counters_pane)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setChildrenCollapsible(False)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.ruler)
        lay.addWidget(self.splitter, 1)
        self.setFocusProxy(self.canvas)
        self._deps = latest()
        connect_while_alive(self.state.selection_changed, self._find_dependencies)
        connect_while_alive(self.state.dependencies_changed, self._dependencies_found)

    # -- the view state, read through the widget (tests and scripts) -------------------
    @property
    def index(self) -> TraceIndex | None:
        return self.state.index

    @property
    def viewport(self) -> Viewport:
        return self.state.viewport

    @property
    def selected(self) -> EventRef | None:
        return self.state.selected

    @property
    def area(self) -> Scope | None:
        return self.state.area

    @property
    def colour_mode(self) -> str:
        return self.state.colour_mode

    @property
    def origin(self) -> float:
        return self.state.origin

    # -- data ------------------------------------------------------------------------
    def set_index(self, index: TraceIndex | None) -> None:
        """Show a trace (None: nothing)."""
        self.canvas.set_tree(None if index is None else TrackTree(index, counters=False))
        self.counter_canvas.set_tree(None if index is None else TrackTree(index, counters=True))
        self.state.set_index(index)
        if index is not None:
            has_counters = bool(index.counters)
            self.counters_pane.setVisible(has_counters)
            if has_counters:
                n = len(self.counter_canvas.tree.rows())
                total = max(self.splitter.height(), 400)
                ch = min(total // 3, 60 + n * 46)
                self.splitter.setSizes([total - ch, ch])
        self.update_all()

    def set_colour_mode(self, mode: str) -> None:
        """Colour events by opcode, kernel, op or layer."""
        self.state.set_colour_mode(mode)

    def _find_dependencies(self, ref: EventRef | None) -> None:
        """The selected event's flow arrows: found on the selection's worker, drawn when they arrive."""
        if ref is None or ref.table not in ("instructions", "dma"):
            self._deps.cancel()
            return
        state = self.state
        index = state.index
        self._deps.submit(lambda: dependencies_of(index, ref),
                          lambda ok, deps: ok and state.index is index and state.set_dependencies(ref, deps))

    def _dependencies_found(self, _ref: EventRef) -> None:
        self.canvas.update()

    # -- the public driving API ------------------------------------------------------
    def zoom_to(self, t0: float, t1: float, track_id: int | None = None) -> None:
        """Show [t0, t1) (absolute ns) and, if given, scroll a track's row into view."""
        self.state.viewport.set_range(t0, t1)
        if track_id is not None:
            self._reveal_track(track_id)

    def select(self, ref: EventRef | None, *, reveal: bool = True) -> None:
        """Select an event (None clears), show its dependencies, optionally bring it on screen."""
        if ref is not None and reveal:
            self.state.bring_into_view(ref)
            self._reveal_track(self.state.track_of(ref))
        self.state.select(ref)

    def highlight(self, ref: EventRef) -> None:
        """Select an event and zoom so it is clearly visible (for jumps from other panels)."""
        self.state.select(ref)
        self.zoom_to(*self.state.highlight_range(ref), self.state.track_of(ref))

    def fit_selection(self) -> None:
        """F: fit the selected event, else the area selection, else the whole trace."""
        self.state.fit_selection()

    def set_area(self, sel: Scope | None, *, final: bool = True) -> None:
        self.state.set_area(sel, final=final)

    def reveal_tracks(self, track_ids) -> None:
        """Unfold every group holding one of `track_ids`, so all their rows are drawn."""
        for c in (self.canvas, self.counter_canvas):
            if c.tree is not None:
                for tid in track_ids:
                    c.tree.reveal(int(tid))
                c.relayout()

    def _reveal_track(self, track_id: int) -> None:
        for c in (self.canvas, self.counter_canvas):
            if c.tree is not None and c.tree.node_for_track(track_id) is not None:
                c.scroll_to_track(track_id)

    # -- keys ------------------------------------------------------------------------
    def cursor_time(self) -> float | None:
        return self.state.hover_t

    def keyPressEvent(self, event) -> None:  # noqa: N802
        key = event.key()
        vp = self.viewport
        if self.index is None:
            return super().keyPressEvent(event)
        if key == Qt.Key_W:
            vp.zoom(ZOOM_STEP, self.cursor_time())
        elif key == Qt.Key_S:
            vp.zoom(1 / ZOOM_STEP, self.cursor_time())
        elif key == Qt.Key_A:
            vp.pan(-PAN_STEP * vp.width)
        elif key == Qt.Key_D:
            vp.pan(PAN_STEP * vp.width)
        elif key == Qt.Key_F:
            self.fit_selection()
        elif key == Qt.Key_Escape:
            self.state.set_area(None)
            self.state.select(None)
        elif key in (Qt.Key_Up, Qt.Key_Down):
            step = -60 if key == Qt.Key_Up else 60
            self.canvas.set_scroll(self.canvas.scroll_y + step)
        else:
            return super().keyPressEvent(event)
        event.accept()

    # -- frames ----------------------------------------------------------------------
    def update_all(self) -> None:
        self.ruler.update()
        self.canvas.update()
        self.counter_canvas.update()

    def render_frame(self) -> float:
        """Paint now (synchronously) what the event loop paints after a view change: the ruler and
        both canvases, which `update_all` marks dirty, by delivering the window's pending update
        request. Not `repaint()` of the whole widget, which also painted the scroll bars, panes and
        splitter around them (~15% of a frame's CPU at 100M events, in Fusion's scroll bars).
        Returns the wall time in ms."""
        t = time.perf_counter()
        self.update_all()
        QCoreApplication.sendPostedEvents(self.window(), QEvent.UpdateRequest)
        self.last_frame_ms = (time.perf_counter() - t) * 1e3
        return self.last_frame_ms
