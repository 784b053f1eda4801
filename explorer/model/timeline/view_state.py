"""What an explorer window shows, as one Qt-free, evented object every widget shares.

The timeline canvas, the ruler, the panels and the compare window never call each
other: they read a `ViewState` and subscribe to its signals (psygnal, as napari does),
and the ones that change the view (a click, a key, a table row) call its setters.
So a new panel is a subscriber, a deep link or a saved annotation is a call on the
state, and the whole behaviour is testable headless.

Signals (each emitted only by the setter of what it names):
  viewport.changed(t0, t1)    the visible range, absolute ns
  index_changed(index)        a trace was shown (TraceIndex | None)
  selection_changed(ref)      the selected event (EventRef | None)
  dependencies_changed(ref)   the selected event's dependencies arrived (`selected_dependencies`)
  area_changed(scope)         an area selection was made or cleared (Scope | None)
  area_preview(scope)         an area selection being dragged (not final)
  hover_changed(t)            the time under the pointer (float | None)
  colour_mode_changed(mode)   "opcode" | "kernel" | "op" | "layer"
  node_changed(node)          the operator-tree node the panels show ("kernel:7")
"""

from __future__ import annotations

from psygnal import Signal

from explorer.model.timeline.event_details import Dependency, dependencies_of
from explorer.model.scope import Scope
from explorer.model.timeline.trace_index import COLOUR_MODES, ColourCodes, EventRef, TraceIndex

MIN_WIDTH_NS = 8.0  # deepest zoom: a few ns across the screen (single instructions are ~10s of ns)
HIGHLIGHT_MIN_NS = 2000.0  # a highlighted event is shown at least this wide, and 8x its length


class Viewport:
    """[t0, t1) in absolute trace ns (floats), clamped to the trace span plus a margin.

    Views convert to pixels as (t - t0) * px_per_ns, so a GUI only ever sees small,
    screen-sized numbers (timestamps are rebased before they reach it).
    """

    changed = Signal(float, float)

    def __init__(self) -> None:
        self.lo, self.hi = 0.0, 1.0
        self.t0, self.t1 = 0.0, 1.0

    @property
    def width(self) -> float:
        return self.t1 - self.t0

    def set_limits(self, lo: float, hi: float) -> None:
        self.lo, self.hi = float(lo), float(max(hi, lo + MIN_WIDTH_NS))
        self.fit()

    def fit(self) -> None:
        """Show the whole trace."""
        self.set_range(self.lo, self.hi)

    def set_range(self, t0: float, t1: float) -> None:
        span = self.hi - self.lo
        margin = 0.05 * span
        width = min(max(t1 - t0, MIN_WIDTH_NS), span + 2 * margin)
        mid = (t0 + t1) / 2
        t0 = mid - width / 2
        t0 = min(max(t0, self.lo - margin), self.hi + margin - width)
        t1 = t0 + width
        if (t0, t1) != (self.t0, self.t1):
            self.t0, self.t1 = t0, t1
            self.changed.emit(t0, t1)

    def zoom(self, factor: float, anchor: float | None = None) -> None:
        """Scale the width by `factor` (<1 zooms in) keeping time `anchor` where it is on screen."""
        if anchor is None:
            anchor = (self.t0 + self.t1) / 2
        width = max(self.width * factor, MIN_WIDTH_NS)
        frac = (anchor - self.t0) / self.width if self.width else 0.5
        t0 = anchor - frac * width
        self.set_range(t0, t0 + width)

    def pan(self, dt: float) -> None:
        self.set_range(self.t0 + dt, self.t1 + dt)

    def contains(self, t0: float, t1: float) -> bool:
        """Whether any of [t0, t1] is on screen."""
        return not (t1 < self.t0 or t0 > self.t1)


class ViewState:
    """The shared state of one timeline and the panels around it (see the module docstring)."""

    index_changed = Signal(object)
    selection_changed = Signal(object)
    dependencies_changed = Signal(object)
    area_changed = Signal(object)
    area_preview = Signal(object)
    hover_changed = Signal(object)
    colour_mode_changed = Signal(str)
    node_changed = Signal(str)

    def __init__(self, colour_mode: str = "opcode") -> None:
        self.viewport = Viewport()
        self.index: TraceIndex | None = None
        self.selected: EventRef | None = None
        self.selected_dependencies: list[Dependency] = []
        self.area: Scope | None = None
        self.hover_t: float | None = None
        self.colour_mode = colour_mode
        self.colour_codes: ColourCodes | None = None
        self.node: str | None = None

    @property
    def origin(self) -> float:
        """Trace time zero (the span's start): what rulers and labels count from."""
        return float(self.index.span[0]) if self.index is not None else 0.0

    # -- setters (each emits its signal) ----------------------------------------------
    def set_index(self, index: TraceIndex | None) -> None:
        """Show a trace (None: nothing): selection, area and node are cleared, the whole span shown."""
        self.index = index
        self.selected, self.selected_dependencies, self.area, self.node = None, [], None, None
        self.colour_codes = index.colours(self.colour_mode) if index is not None else None
        if index is not None:
            self.viewport.set_limits(*index.span)
        self.index_changed.emit(index)

    def set_colour_mode(self, mode: str) -> None:
        """Colour events by opcode, kernel, op or layer."""
        if mode not in COLOUR_MODES:
            raise ValueError(mode)
        self.colour_mode = mode
        if self.index is not None:
            self.colour_codes = self.index.colours(mode)
        self.colour_mode_changed.emit(mode)

    def select(self, ref: EventRef | None) -> None:
        """Select an event (None clears). Its dependencies come apart (`find_dependencies`, then
        `set_dependencies`): a pass over the flows that a window makes off its GUI thread."""
        self.selected = ref
        self.selected_dependencies = []
        self.selection_changed.emit(ref)

    def find_dependencies(self, ref: EventRef) -> list[Dependency]:
        """The flow edges into and out of `ref` (reads only; safe on a worker thread)."""
        index = self.index
        return [] if index is None else dependencies_of(index, ref)

    def set_dependencies(self, ref: EventRef, deps: list[Dependency]) -> bool:
        """Keep `ref`'s dependencies if it is still the selected event (False: a stale result, dropped)."""
        if ref != self.selected:
            return False
        self.selected_dependencies = deps
        self.dependencies_changed.emit(ref)
        return True

    def set_area(self, area: Scope | None, *, final: bool = True) -> None:
        """An area selection (rows x window, a Scope); `final` when the drag has ended."""
        self.area = area
        (self.area_changed if final else self.area_preview).emit(area)

    def set_hover(self, t: float | None) -> None:
        if t != self.hover_t:
            self.hover_t = t
            self.hover_changed.emit(t)

    def set_node(self, node: str) -> None:
        """Make an operator-tree node the current one (the analysis panels follow)."""
        if node:
            self.node = node
            self.node_changed.emit(node)

    # -- navigation -------------------------------------------------------------------
    def fit_selection(self) -> None:
        """Fit the selected event, else the area selection, else the whole trace (the F key)."""
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

    def bring_into_view(self, ref: EventRef) -> None:
        """Pan (keeping the zoom) so an off-screen event is on screen."""
        s, e = self.index.interval(ref)
        vp = self.viewport
        if not vp.contains(s, e):
            vp.set_range(s - vp.width / 2, s + vp.width / 2)

    def highlight_range(self, ref: EventRef) -> tuple[float, float]:
        """The range that shows an event clearly: centred, 8x its length, at least 2 us."""
        s, e = self.index.interval(ref)
        width = max((e - s) * 8, HIGHLIGHT_MIN_NS)
        return (s + e) / 2 - width / 2, (s + e) / 2 + width / 2

    def track_of(self, ref: EventRef) -> int:
        """The track id an event is drawn on."""
        return self.index.locate(ref)[0].track.track_id
