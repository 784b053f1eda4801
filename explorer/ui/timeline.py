"""The timeline widget (objectName `timeline`): ruler, engine rows, counter rows.

Navigation follows Perfetto and the Neuron profiler: W/S zoom at the cursor, A/D
pan, the wheel zooms at the cursor (Shift+wheel scrolls rows), drag pans, F fits
the selection, Ctrl+drag (or right-drag, or a drag on the ruler) zooms to a range,
Shift+drag selects an area, Esc clears. Click selects an event; double-click fits
it. Group rows fold on click; a row's pin (right end of its label) pins it to the
top; dragging a label reorders rows within their group.

Other panels listen to `event_selected`, `area_changed` and
`visible_range_changed`, and drive it with `zoom_to`, `highlight` and `select`.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QScrollBar, QSplitter, QVBoxLayout, QWidget

from explorer.model.event_details import Dependency, dependencies
from explorer.model.scope import Scope
from explorer.model.track_tree import TrackTree
from explorer.model.trace_index import COLOUR_MODES, ColourCodes, EventRef, TraceIndex
from explorer.ui import palette as P
from explorer.ui.ruler import TimeRuler
from explorer.ui.track_canvas import TrackCanvas
from explorer.ui.viewport import TimeViewport

ZOOM_STEP = 0.8  # W: width x 0.8; S: width / 0.8
PAN_STEP = 0.15  # A/D: 15% of the visible width


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

    event_selected = Signal(object)  # EventRef | None
    area_changed = Signal(object)  # Scope (rows x window) | None (when a drag ends)
    visible_range_changed = Signal(float, float)  # absolute ns
    colour_mode_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("timeline")
        self.setFocusPolicy(Qt.StrongFocus)
        self.index: TraceIndex | None = None
        self.viewport = TimeViewport(self)
        self.colour_mode = "opcode"
        self.colour_codes: ColourCodes | None = None
        self.palette: list = []
        self.palette_rgb = P.rgb_array([])
        self.selected: EventRef | None = None
        self.selected_dependencies: list[Dependency] = []
        self.area: Scope | None = None
        self.hover_t: float | None = None
        self.origin = 0.0
        self.last_frame_ms = 0.0

        self.canvas = TrackCanvas(self, counters=False)
        self.counter_canvas = TrackCanvas(self, counters=True)
        self.ruler = TimeRuler(self)
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
        self.viewport.changed.connect(self._on_viewport)

    # -- data ------------------------------------------------------------------------
    def set_index(self, index: TraceIndex | None) -> None:
        """Show a trace (None: nothing)."""
        self.index = index
        self.selected, self.selected_dependencies, self.area = None, [], None
        if index is None:
            self.canvas.set_tree(None)
            self.counter_canvas.set_tree(None)
            self.update_all()
            return
        self.origin = float(index.span[0])
        self.canvas.set_tree(TrackTree(index, counters=False))
        self.counter_canvas.set_tree(TrackTree(index, counters=True))
        has_counters = bool(index.counters)
        self.counters_pane.setVisible(has_counters)
        if has_counters:
            n = len(self.counter_canvas.tree.rows())
            total = max(self.splitter.height(), 400)
            ch = min(total // 3, 60 + n * 46)
            self.splitter.setSizes([total - ch, ch])
        self.set_colour_mode(self.colour_mode)
        self.viewport.set_limits(*index.span)
        self.update_all()

    def set_colour_mode(self, mode: str) -> None:
        """Colour events by opcode, kernel, op or layer."""
        if mode not in COLOUR_MODES:
            raise ValueError(mode)
        self.colour_mode = mode
        if self.index is not None:
            self.colour_codes = self.index.colours(mode)
            self.palette = P.category_colours(self.colour_codes.names)
            self.palette_rgb = P.rgb_array(self.palette)
        self.colour_mode_changed.emit(mode)
        self.update_all()

    # -- the public driving API ------------------------------------------------------
    def zoom_to(self, t0: float, t1: float, track_id: int | None = None) -> None:
        """Show [t0, t1) (absolute ns) and, if given, scroll a track's row into view."""
        self.viewport.set_range(t0, t1)
        if track_id is not None:
            self._reveal_track(track_id)

    def select(self, ref: EventRef | None, *, reveal: bool = True) -> None:
        """Select an event (None clears), show its dependencies, optionally bring it on screen."""
        self.selected = ref
        self.selected_dependencies = []
        if ref is not None and self.index is not None and ref.table in ("instructions", "dma"):
            eid = int(self.index.tables[ref.table].value("id", ref.row))
            self.selected_dependencies = dependencies(self.index, eid)
        if ref is not None and reveal:
            self._bring_into_view(ref)
        self.event_selected.emit(ref)
        self.update_all()

    def highlight(self, ref: EventRef) -> None:
        """Select an event and zoom so it is clearly visible (for jumps from other panels)."""
        s, e = self.index.interval(ref)
        width = max((e - s) * 8, 2000.0)
        self.select(ref, reveal=False)
        self.zoom_to((s + e) / 2 - width / 2, (s + e) / 2 + width / 2, self.index.locate(ref)[0].track.track_id)

    def fit_selection(self) -> None:
        """F: fit the selected event, else the area selection, else the whole trace."""
        if self.index is None:
            return
        if self.selected is not None:
            s, e = self.index.interval(self.selected)
            pad = max((e - s) * 0.15, 5.0)
            self.viewport.set_range(s - pad, e + pad)
        elif self.area is not None and self.area.duration_ns > 0:
            self.viewport.set_range(self.area.t0, self.area.t1)
        else:
            self.viewport.fit()

    def set_area(self, sel: Scope | None, *, final: bool = True) -> None:
        self.area = sel
        if final:
            self.area_changed.emit(sel)
        self.update_all()

    def set_hover(self, t: float | None) -> None:
        if t != self.hover_t:
            self.hover_t = t
            self.canvas.update()
            self.counter_canvas.update()

    def _bring_into_view(self, ref: EventRef) -> None:
        s, e = self.index.interval(ref)
        vp = self.viewport
        if e < vp.t0 or s > vp.t1:
            vp.set_range(s - vp.width / 2, s + vp.width / 2)
        self._reveal_track(self.index.locate(ref)[0].track.track_id)

    def _reveal_track(self, track_id: int) -> None:
        for c in (self.canvas, self.counter_canvas):
            if c.tree is not None and c.tree.node_for_track(track_id) is not None:
                c.scroll_to_track(track_id)

    # -- keys ------------------------------------------------------------------------
    def cursor_time(self) -> float | None:
        return self.hover_t

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
            self.set_area(None)
            self.select(None)
        elif key in (Qt.Key_Up, Qt.Key_Down):
            step = -60 if key == Qt.Key_Up else 60
            self.canvas.set_scroll(self.canvas.scroll_y + step)
        else:
            return super().keyPressEvent(event)
        event.accept()

    # -- frames ----------------------------------------------------------------------
    def scroll_changed(self, canvas: TrackCanvas) -> None:
        pane = self.lanes_pane if canvas is self.canvas else self.counters_pane
        if hasattr(self, "lanes_pane"):
            pane._sync()

    def _on_viewport(self) -> None:
        self.visible_range_changed.emit(self.viewport.t0, self.viewport.t1)
        self.update_all()

    def update_all(self) -> None:
        self.ruler.update()
        self.canvas.update()
        self.counter_canvas.update()

    def render_frame(self) -> float:
        """Paint the whole timeline now (synchronously); returns the wall time in ms."""
        t = time.perf_counter()
        self.update_all()
        self.repaint()  # paints every dirty child (ruler, rows, counters) in one pass, as the event loop would
        self.last_frame_ms = (time.perf_counter() - t) * 1e3
        return self.last_frame_ms
