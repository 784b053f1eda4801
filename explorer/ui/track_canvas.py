"""One pane of timeline rows (engine lanes or counters): geometry, hit testing and input.

The canvas reads the shared `ViewState` (explorer.model.timeline.view_state) and changes it on
input (click: `select`, Shift+drag: `set_area`, wheel and drag: the viewport, pointer:
`set_hover`); it never calls another widget. What it draws is a stack of layers
(explorer.ui.canvas_layers: grid, rows, overlays, labels), each with its bounds and cache.
"""

from __future__ import annotations

import bisect
import time

import numpy as np
from PySide6.QtCore import QPoint, QPointF, QRect, Qt, Signal
from PySide6.QtGui import QFont, QPainter, QPixmap
from PySide6.QtWidgets import QToolTip, QWidget

from explorer.model.timeline.event_details import describe
from explorer.model.analysis.metrics import format_quantity
from explorer.model.timeline.selection import area_scope
from explorer.model.timeline.track_tree import Row, TrackTree
from explorer.model.timeline.trace_index import EventRef
from explorer.model.units import format_ns
from explorer.model.timeline.view_state import ViewState
from explorer.ui import palette as P
from explorer.ui.state_links import connect_while_alive
from explorer.ui.canvas_layers import (
    COUNTER_H, GROUP_H, GUTTER, PIN_W, ROW_H, Frame, Layer, RowGeom, default_layers,
)

DRAG_PX = 4


class TrackCanvas(QWidget):
    """Rows of one pane over the shared view state; `scrolled(y)` when its rows scroll."""

    content_height_changed = Signal(int)
    scrolled = Signal(int)

    def __init__(self, state: ViewState, colours: P.CategoryColours, parent: QWidget | None = None, *,
                 counters: bool) -> None:
        super().__init__(parent)
        self.state = state
        self.colours = colours
        self.counters = counters
        self.layers: list[Layer] = default_layers()
        self.setObjectName("counter-canvas" if counters else "timeline-canvas")
        self.tree: TrackTree | None = None
        self.scroll_y = 0
        self.last_paint_ms = 0.0
        self.hover_text = ""
        self.hover_y: float | None = None  # the pointer's y at its last move over the canvas (None when it left)
        self._layout: list[tuple[Row, int]] = []  # unpinned rows and their heights
        self._layout_version = 0
        self._cum: list[int] = [0]
        self._pinned: list[tuple[Row, int]] = []
        self._static: tuple[tuple, QPixmap, tuple] | None = None  # (Frame.static_key, picture, what the key names)
        self._press: tuple[QPointF, Qt.MouseButton, Qt.KeyboardModifier, RowGeom | None] | None = None
        self._drag: str | None = None
        self._drag_start = (0.0, 0.0, 0)  # viewport t0, t1, scroll at press
        self._band: tuple[float, float] | None = None  # x range of a zoom/area band
        self._drop_y: int | None = None
        self._font = QFont(self.font())
        self._font.setPointSizeF(8.5)
        self._bold = QFont(self._font)
        self._bold.setBold(True)
        self.setMouseTracking(True)
        self.setAttribute(Qt.WA_OpaquePaintEvent)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setMinimumHeight(40)
        for signal in (state.viewport.changed, state.selection_changed, state.area_changed, state.area_preview,
                       state.hover_changed, state.colour_mode_changed):
            connect_while_alive(signal, self._repaint)

    def _repaint(self, *_args) -> None:
        self.update()

    # -- rows ------------------------------------------------------------------------
    def set_tree(self, tree: TrackTree | None) -> None:
        self.tree = tree
        self.scroll_y = 0
        self.relayout()

    def row_height(self, row: Row) -> int:
        if row.node.is_group:
            return GROUP_H
        return COUNTER_H if self.counters else ROW_H

    def relayout(self) -> None:
        """Recompute row positions after the tree changed (fold, pin, move) or the theme did."""
        self._layout_version += 1
        self._static = None
        for layer in self.layers:
            layer.invalidate()
        if self.tree is None:
            self._layout, self._cum, self._pinned = [], [0], []
        else:
            self._pinned = [(r, self.row_height(r)) for r in self.tree.pinned_rows()]
            self._layout = [(r, self.row_height(r)) for r in self.tree.rows()]
            self._cum = [0]
            for _, h in self._layout:
                self._cum.append(self._cum[-1] + h)
        self.set_scroll(self.scroll_y)
        self.content_height_changed.emit(self.content_height)
        self.update()

    @property
    def pinned_height(self) -> int:
        return sum(h for _, h in self._pinned) + (3 if self._pinned else 0)

    @property
    def content_height(self) -> int:
        return self._cum[-1]

    @property
    def max_scroll(self) -> int:
        return max(self.content_height - (self.height() - self.pinned_height), 0)

    def set_scroll(self, y: int) -> None:
        y = int(min(max(y, 0), self.max_scroll))
        if y != self.scroll_y:
            self.scroll_y = y
            self.scrolled.emit(y)
            self.update()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt naming)
        super().resizeEvent(event)
        self.set_scroll(self.scroll_y)
        self.content_height_changed.emit(self.content_height)

    def visible_geoms(self) -> tuple[list[RowGeom], list[RowGeom]]:
        """(pinned rows, scrolled rows) on screen, in widget coordinates."""
        pinned, y = [], 0
        for r, h in self._pinned:
            pinned.append(RowGeom(r, y, h))
            y += h
        top = self.pinned_height
        first = max(bisect.bisect_right(self._cum, self.scroll_y) - 1, 0)
        out = []
        for i in range(first, len(self._layout)):
            y = top + self._cum[i] - self.scroll_y
            if y >= self.height():
                break
            r, h = self._layout[i]
            out.append(RowGeom(r, y, h))
        return pinned, out

    def geom_at(self, y: float) -> RowGeom | None:
        pinned, rows = self.visible_geoms()
        for g in pinned + [g for g in rows if g.y >= self.pinned_height - g.h]:
            if g.y <= y < g.y + g.h and (g in pinned or y >= self.pinned_height):
                return g
        return None

    def hover_geom(self) -> RowGeom | None:
        """The row under the pointer as its last move over the canvas left it (the row the hover line is
        drawn on), read from the canvas's own events rather than the global cursor, which a window
        move or a late layout can leave out of step."""
        return self.geom_at(self.hover_y) if self.hover_y is not None else None

    def geom_for_track(self, track_id: int) -> RowGeom | None:
        pinned, rows = self.visible_geoms()
        return next((g for g in pinned + rows if g.track_id == track_id), None)

    def scroll_to_track(self, track_id: int) -> None:
        """Unfold and scroll so a track's row is on screen."""
        if self.tree is None or self.tree.node_for_track(track_id) is None:
            return
        key = f"track:{track_id}"
        if not self.tree.is_pinned(key):
            self.tree.reveal(track_id)
            self.relayout()
            i = next((i for i, (r, _) in enumerate(self._layout) if r.key == key), None)
            if i is not None:
                y = self._cum[i]
                view_h = self.height() - self.pinned_height
                if not (self.scroll_y <= y <= self.scroll_y + view_h - self._layout[i][1]):
                    self.set_scroll(y - view_h // 3)

    # -- time <-> x ------------------------------------------------------------------
    @property
    def track_width(self) -> int:
        return max(self.width() - GUTTER, 1)

    def px_per_ns(self) -> float:
        return self.track_width / self.state.viewport.width

    def x_of(self, t: float) -> float:
        return GUTTER + (t - self.state.viewport.t0) * self.px_per_ns()

    def t_of(self, x: float) -> float:
        return self.state.viewport.t0 + (x - GUTTER) / self.px_per_ns()


    # -- painting --------------------------------------------------------------------
    def frame(self) -> Frame:
        """What the layers need for one paint."""
        pinned, rows = self.visible_geoms()
        return Frame(self.state, self.colours, self.tree, self.counters, self.width(), self.height(), pinned, rows,
                     self.pinned_height, self._font, self._bold, self._band, self._drag, self._drop_y, self.scroll_y,
                     self._layout_version, self.devicePixelRatioF())

    def paintEvent(self, event) -> None:  # noqa: N802
        t_start = time.perf_counter()
        p = QPainter(self)
        p.setFont(self._font)
        w, h = self.width(), self.height()
        if self.state.index is None or self.tree is None:
            p.fillRect(0, 0, w, h, P.BACKGROUND)
            p.setPen(P.TEXT_DIM)
            if not self.counters:
                p.drawText(QRect(0, 0, w, h), Qt.AlignCenter,
                           "Open a trace: File \u203a Open, a recent file, or drop a .trnx folder here")
            p.end()
            return
        f = self.frame()
        n_static = next((i for i, layer in enumerate(self.layers) if not layer.static), len(self.layers))
        p.drawPixmap(0, 0, self._static_picture(f, self.layers[:n_static]))  # opaque, the whole canvas: no fill
        for layer in self.layers[n_static:]:
            self._paint_layer(p, f, layer)
        p.end()
        self.last_paint_ms = (time.perf_counter() - t_start) * 1e3

    @staticmethod
    def _paint_layer(p: QPainter, f: Frame, layer: Layer) -> None:
        p.save()
        p.setClipRect(layer.bounds(f))
        layer.paint(p, f)
        p.restore()

    def _static_picture(self, f: Frame, layers: list[Layer]) -> QPixmap:
        """The background and the leading static layers (grid, rows), painted again only when
        `Frame.static_key` changes: a selection or hover repaint at 28M events cost ~15 ms of rows."""
        key = f.static_key()
        if self._static is None or self._static[0] != key:
            size = (int(f.width * f.dpr), int(f.height * f.dpr))
            old = None if self._static is None else self._static[1]
            pm = old if old is not None and (old.width(), old.height()) == size else QPixmap(*size)  # reused
            pm.setDevicePixelRatio(f.dpr)
            p = QPainter(pm)
            p.setFont(self._font)
            p.fillRect(0, 0, f.width, f.height, P.BACKGROUND)
            for layer in layers:
                self._paint_layer(p, f, layer)
            p.end()
            st = f.state  # (the key names these by id: keeping them keeps their ids from being reused)
            self._static = (key, pm, (st.index, st.colour_codes, f.colours.colours, f.tree))
        return self._static[1]

    # -- hit testing -----------------------------------------------------------------
    def event_at(self, pos: QPointF) -> EventRef | None:
        g = self.geom_at(pos.y())
        index = self.state.index
        if g is None or g.track_id is None or index is None or pos.x() < GUTTER or self.counters:
            return None
        lane = index.lanes.get(g.track_id)
        if lane is None:
            return None
        k = lane.at(self.t_of(pos.x()), slack_ns=3.0 / self.px_per_ns())
        return None if k is None else index.ref(lane, k)

    def point_for(self, ref: EventRef) -> QPoint:
        """Where an event is drawn (its row revealed and scrolled into view)."""
        index = self.state.index
        lane, _ = index.locate(ref)
        self.scroll_to_track(lane.track.track_id)
        g = self.geom_for_track(lane.track.track_id)
        if g is None:
            raise ValueError(f"row of {ref} is not on screen")
        s, e = index.interval(ref)
        xa, xb = self.x_of(s), self.x_of(e)
        x = (max(xa, GUTTER) + min(xb, self.width() - 1)) / 2
        return QPoint(int(x), g.y + g.h // 2)

    def point_for_track(self, track_id: int) -> QPoint:
        """The middle of a track's label in the gutter."""
        self.scroll_to_track(track_id)
        g = self.geom_for_track(track_id)
        if g is None:
            raise ValueError(f"track {track_id} is not on screen")
        return QPoint(GUTTER // 2, g.y + g.h // 2)

    def hover_description(self, pos: QPointF) -> str:
        index = self.state.index
        g = self.geom_at(pos.y())
        if g is None or index is None or pos.x() < GUTTER:
            return ""
        t = self.t_of(pos.x())
        if self.counters:
            series = index.counters.get(g.track_id) if g.track_id is not None else None
            if series is None:
                return ""
            v = series.value_at(t)
            if v is None:
                return ""
            u = series.unit
            text = f"{series.name}: {format_quantity(v, u)} at {format_ns(t - index.span[0])}"
            of_peak = index.share_of_peak(g.track_id, v)
            if of_peak is not None:
                text += f"\n{100 * of_peak[0]:.1f}% of the hardware peak ({format_quantity(of_peak[1], u)})"
            px_ns = 1.0 / self.px_per_ns()
            b = series.bins(np.array([t - px_ns / 2, t + px_ns / 2]))
            if not np.isnan(b.max[0]):
                text += (f"\nthis pixel: min {format_quantity(b.min[0], u)}, max {format_quantity(b.max[0], u)}, "
                         f"mean {format_quantity(b.mean[0], u)}")
            return text
        ref = self.event_at(pos)
        if ref is None:
            return ""
        s, e = index.interval(ref)
        text = f"{describe(index, ref)}\nduration {format_ns(e - s)}"
        lane = index.lanes[g.track_id]
        px_ns = 1.0 / self.px_per_ns()
        a, b = lane.visible(t - px_ns / 2, t + px_ns / 2)
        if b - a > 1:  # several events share this pixel (Tracy folds them): say how many and how busy
            busy = lane.coverage.fractions(np.array([t - px_ns / 2, t + px_ns / 2]))[0]
            text += f"\nthis pixel: {b - a:,} events over {format_ns(px_ns)}, {100 * busy:.0f}% busy (zoom in with W)"
        return text

    # -- input -----------------------------------------------------------------------
    def mousePressEvent(self, event) -> None:  # noqa: N802
        self.setFocus()
        pos = event.position()
        self._press = (pos, event.button(), event.modifiers(), self.geom_at(pos.y()))
        vp = self.state.viewport
        self._drag_start = (vp.t0, vp.t1, self.scroll_y)
        self._drag = None

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        pos = event.position()
        if self._press is None:
            self.hover_y = pos.y()
            self.state.set_hover(self.t_of(pos.x()) if pos.x() >= GUTTER else None)
            text = self.hover_description(pos)
            self.hover_text = text
            if text:
                QToolTip.showText(event.globalPosition().toPoint(), text, self)
            else:
                QToolTip.hideText()
            return
        p0, button, mods, g0 = self._press
        d = pos - p0
        if self._drag is None:
            if abs(d.x()) + abs(d.y()) < DRAG_PX:
                return
            if p0.x() < GUTTER:
                self._drag = "reorder" if g0 is not None and button == Qt.LeftButton else "none"
            elif button == Qt.RightButton or (button == Qt.LeftButton and mods & Qt.ControlModifier):
                self._drag = "zoom"
            elif button == Qt.LeftButton and mods & Qt.ShiftModifier:
                self._drag = "area"
            elif button in (Qt.LeftButton, Qt.MiddleButton):
                self._drag = "pan"
            else:
                self._drag = "none"
        if self._drag == "pan":
            t0, t1, sy = self._drag_start
            dt = d.x() * (t1 - t0) / self.track_width
            self.state.viewport.set_range(t0 - dt, t1 - dt)
            self.set_scroll(int(sy - d.y()))
        elif self._drag in ("zoom", "area"):
            self._band = (max(p0.x(), GUTTER), max(pos.x(), GUTTER))
            if self._drag == "area":
                self._set_area_from_drag(p0, pos, final=False)
            self.update()
        elif self._drag == "reorder":
            tgt = self.geom_at(pos.y())
            self._drop_y = tgt.y if tgt is not None else None
            self.update()

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802
        if self._press is None:
            return
        pos = event.position()
        p0, button, mods, g0 = self._press
        drag, self._press, self._drag = self._drag, None, None
        band, self._band, self._drop_y = self._band, None, None
        if drag is None:
            self._click(p0, button, mods, g0)
        elif drag == "zoom" and band is not None and abs(band[1] - band[0]) >= DRAG_PX:
            a, b = sorted(band)
            self.state.viewport.set_range(self.t_of(a), self.t_of(b))
        elif drag == "area":
            self._set_area_from_drag(p0, pos, final=True)
        elif drag == "reorder" and g0 is not None and self.tree is not None:
            tgt = self.geom_at(pos.y())
            if tgt is not None and tgt.row.key != g0.row.key and self.tree.move(g0.row.key, tgt.row.key):
                self.relayout()
        self.update()

    def _click(self, pos: QPointF, button, mods, g: RowGeom | None) -> None:
        if g is None or button != Qt.LeftButton or self.tree is None:
            if button == Qt.LeftButton and pos.x() >= GUTTER:
                self.state.select(None)
            return
        if pos.x() < GUTTER:
            if g.row.node.is_group:
                self.tree.toggle(g.row.key)
                self.relayout()
            elif pos.x() >= GUTTER - PIN_W - 4:
                self.tree.pin(g.row.key, not self.tree.is_pinned(g.row.key))
                self.relayout()
            return
        if self.counters:
            return
        self.state.select(self.event_at(pos))

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802
        ref = self.event_at(event.position())
        if ref is not None:
            self.state.select(ref)
            self.state.fit_selection()

    def _set_area_from_drag(self, p0: QPointF, p1: QPointF, *, final: bool) -> None:
        pinned, rows = self.visible_geoms()
        ya, yb = sorted((p0.y(), p1.y()))
        tracks: list[int] = []
        for g in pinned + rows:
            if g.y + g.h > ya and g.y <= yb:
                tracks += [t.track_id for t in g.row.node.tracks()]
        ta, tb = sorted((self.t_of(max(p0.x(), GUTTER)), self.t_of(max(p1.x(), GUTTER))))
        sel = area_scope(tuple(dict.fromkeys(tracks)), int(ta), int(np.ceil(tb)))
        self.state.set_area(sel, final=final)

    def wheelEvent(self, event) -> None:  # noqa: N802
        delta = event.angleDelta()
        pos = event.position()
        if event.modifiers() & Qt.ShiftModifier or pos.x() < GUTTER:
            self.set_scroll(self.scroll_y - (delta.y() or delta.x()) // 2)
        elif delta.x() and not delta.y():
            self.state.viewport.pan(-delta.x() / 120 * 0.1 * self.state.viewport.width)
        elif delta.y():
            self.state.viewport.zoom(0.8 ** (delta.y() / 120), self.t_of(pos.x()))
        event.accept()

    def leaveEvent(self, event) -> None:  # noqa: N802
        self.hover_y = None
        self.state.set_hover(None)
        super().leaveEvent(event)
