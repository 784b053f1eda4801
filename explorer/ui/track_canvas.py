"""One pane of timeline rows (engine lanes or counters), painted straight from numpy.

Per frame and per visible row the canvas asks the model for what the pixels cover:
`Lane.visible` (two `searchsorted`) and `Coverage.fractions_and_last` (one
`searchsorted` of the pixel edges) for lanes, `CounterSeries.bins` for counters.
Every lane row becomes one line of a numpy RGB32 image (coverage-weighted colour of
the category under each pixel), drawn with one `drawImage` per row; where a row
has few visible intervals they are drawn on top as crisp rectangles with one
`QPainter.drawRects` call per colour over a float64 buffer wrapped with
`shiboken6.wrapInstance`, and labelled when wide. Nothing here loops over events,
so a frame costs the same on a 1k- or a 10M-event trace.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import shiboken6
from PySide6.QtCore import QLineF, QPoint, QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QImage, QPainter, QPen, QPixmap, QPolygonF
from PySide6.QtWidgets import QToolTip, QWidget

from explorer.model.event_details import describe
from explorer.model.lod import fractions_many, last_started
from explorer.model.selection import area_scope
from explorer.model.track_tree import Row, TrackTree
from explorer.model.trace_index import EventRef
from explorer.model.units import format_bytes, format_ns


def format_value(v: float, unit: str) -> str:
    """A counter value in its unit: 4.9 TB/s, 32 MiB, 87 %."""
    if unit == "bytes":
        return format_bytes(v)
    if unit == "GB/s":
        return f"{v / 1000:.3g} TB/s" if abs(v) >= 1000 else f"{v:.4g} GB/s"
    return f"{v:.4g} {unit}".rstrip()
from explorer.ui import palette as P

if TYPE_CHECKING:
    from explorer.ui.timeline import TimelineWidget

GUTTER = 240
PIN_W = 18
ROW_H = 18
GROUP_H = 20
COUNTER_H = 44
SPARSE_PX_PER_EVENT = 5  # at most width/5 visible intervals: also draw them as outlined rectangles
MIN_RECT_PX = 2.0  # narrower intervals are shown (exactly) by the coverage line only
LABEL_PX = 36.0
MAX_LABELS = 400
DRAG_PX = 4
FOLDED_SAMPLE = 8  # rows sampled for a folded group's activity line


@dataclass
class RowGeom:
    row: Row
    y: int
    h: int

    @property
    def track_id(self) -> int | None:
        t = self.row.node.track
        return None if t is None else t.track_id


class TrackCanvas(QWidget):
    """Rows of one pane; the timeline owns the viewport, the index and the selection."""

    content_height_changed = Signal(int)

    def __init__(self, timeline: TimelineWidget, *, counters: bool) -> None:
        super().__init__(timeline)
        self.timeline = timeline
        self.counters = counters
        self.setObjectName("counter-canvas" if counters else "timeline-canvas")
        self.tree: TrackTree | None = None
        self.scroll_y = 0
        self.last_paint_ms = 0.0
        self.hover_text = ""
        self._layout: list[tuple[Row, int]] = []  # unpinned rows and their heights
        self._layout_version = 0
        self._text_widths: dict[str, int] = {}
        self._gutter: QPixmap | None = None
        self._gutter_key: tuple = ()
        self._cum: list[int] = [0]
        self._pinned: list[tuple[Row, int]] = []
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
        """Recompute row positions after the tree changed (fold, pin, move)."""
        self._layout_version += 1
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
            self.timeline.scroll_changed(self)
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
        return self.track_width / self.timeline.viewport.width

    def x_of(self, t: float) -> float:
        return GUTTER + (t - self.timeline.viewport.t0) * self.px_per_ns()

    def t_of(self, x: float) -> float:
        return self.timeline.viewport.t0 + (x - GUTTER) / self.px_per_ns()

    def pixel_edges(self) -> np.ndarray:
        vp = self.timeline.viewport
        return vp.t0 + (vp.t1 - vp.t0) * (np.arange(self.track_width + 1, dtype=np.float64) / self.track_width)

    # -- painting --------------------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802
        t_start = time.perf_counter()
        p = QPainter(self)
        p.setFont(self._font)
        w, h = self.width(), self.height()
        p.fillRect(0, 0, w, h, P.BACKGROUND)
        index = self.timeline.index
        if index is None or self.tree is None:
            p.setPen(P.TEXT_DIM)
            if not self.counters:
                p.drawText(QRect(0, 0, w, h), Qt.AlignCenter,
                           "Open a trace: File \u203a Open, a recent file, or drop a .trnx folder here")
            p.end()
            return
        pinned, rows = self.visible_geoms()
        edges = self.pixel_edges()
        self._paint_grid(p, h)
        self._paint_rows(p, rows, edges)
        if pinned:
            ph = self.pinned_height
            p.fillRect(0, 0, w, ph, P.BACKGROUND)
            self._paint_rows(p, pinned, edges)
            p.setPen(QPen(P.ACCENT, 1))
            p.drawLine(0, ph - 2, w, ph - 2)
        self._paint_overlays(p, pinned + rows)
        self._paint_cached_gutter(p, rows, pinned)
        p.end()
        self.last_paint_ms = (time.perf_counter() - t_start) * 1e3

    def _paint_grid(self, p: QPainter, h: int) -> None:
        p.setPen(QPen(P.GRID, 1))
        for t in self.timeline.ruler.tick_times():
            x = int(self.x_of(t))
            p.drawLine(x, 0, x, h)

    def _paint_rows(self, p: QPainter, geoms: list[RowGeom], edges: np.ndarray) -> None:
        w = self.width()
        for i, g in enumerate(geoms):
            if g.row.node.is_group:
                p.fillRect(GUTTER, g.y, w - GUTTER, g.h, P.GROUP_BG)
        p.save()
        p.setClipRect(QRect(GUTTER, 0, self.track_width, self.height()))
        if self.counters:
            self._paint_counters(p, geoms, edges)
        else:
            self._paint_lanes(p, geoms, edges)
        p.restore()

    def _paint_lanes(self, p: QPainter, geoms: list[RowGeom], edges: np.ndarray) -> None:
        index = self.timeline.index
        colours = self.timeline.colour_codes
        pal = self.timeline.palette_rgb
        vp = self.timeline.viewport
        tw = self.track_width
        lanes = [(g, index.lanes[g.track_id]) for g in geoms if g.track_id in index.lanes]
        folded = [g for g in geoms if g.row.node.is_group and g.row.node.collapsed]
        if not lanes and not folded:
            return
        bg = np.array([P.BACKGROUND.red(), P.BACKGROUND.green(), P.BACKGROUND.blue()], dtype=np.float32)
        buf = np.empty((len(lanes) + len(folded), tw), dtype=np.uint32)
        self._paint_folded_summaries(buf[len(lanes):], folded, edges)
        last = np.zeros((0, 1), dtype=np.int64)
        if lanes:
            # every row's pixels at once: coverage fraction and the category under each pixel
            frac, last = fractions_many([lane.coverage for _, lane in lanes], edges)
            code = np.zeros(last.shape, dtype=np.int32)
            for i, (_, lane) in enumerate(lanes):
                if not lane.disjoint:  # coverage runs are merged: find the colour in the events
                    last[i] = last_started(lane.start, edges)
                if lane.count:
                    codes = colours.codes[lane.events.name]
                    code[i] = codes[lane.lo + np.clip(last[i], 0, lane.count - 1)]
            rgb = bg + (pal[code] - bg) * frac[:, :, None].astype(np.float32)
            buf[:len(lanes)] = P.pack_rgb32(rgb)
        img = QImage(buf.data, tw, len(buf), tw * 4, QImage.Format_RGB32)
        for i, g in enumerate([g for g, _ in lanes] + folded):
            p.drawImage(QRectF(GUTTER, g.y + 1, tw, g.h - 2), img, QRectF(0, i, tw, 1))
        limit = tw // SPARSE_PX_PER_EVENT
        for i, (g, lane) in enumerate(lanes):
            if last[i, -1] - last[i, 0] > limit:  # at least that many start on screen: dense
                continue
            a, b = lane.visible(vp.t0, vp.t1)
            if 0 < b - a <= limit:
                self._paint_rects(p, g, lane, a, b)

    def _paint_folded_summaries(self, out: np.ndarray, folded: list[RowGeom], edges: np.ndarray) -> None:
        """A folded group's row shows how busy its rows are: the mean coverage of (up
        to FOLDED_SAMPLE, evenly spread) rows under it, as intensity."""
        index = self.timeline.index
        bg = np.array([P.GROUP_BG.red(), P.GROUP_BG.green(), P.GROUP_BG.blue()], dtype=np.float32)
        fg = np.array([P.ACCENT.red(), P.ACCENT.green(), P.ACCENT.blue()], dtype=np.float32)
        for i, g in enumerate(folded):
            lanes = [index.lanes[t.track_id] for t in g.row.node.tracks()
                     if t.track_id in index.lanes and t.kind not in ("kernel", "cc")]
            if not lanes:
                out[i] = P.pack_rgb32(bg)
                continue
            pick = np.unique(np.linspace(0, len(lanes) - 1, min(len(lanes), FOLDED_SAMPLE)).astype(int))
            frac = fractions_many([lanes[j].coverage for j in pick], edges)[0].mean(axis=0)
            out[i] = P.pack_rgb32(bg + (fg - bg) * frac[:, None].astype(np.float32))

    def _paint_rects(self, p: QPainter, g: RowGeom, lane, a: int, b: int) -> None:
        tl = self.timeline
        px = self.px_per_ns()
        t0 = tl.viewport.t0
        x = GUTTER + (lane.start[a:b] - t0) * px
        wdt = lane.dur[a:b] * px
        keep = np.flatnonzero(wdt >= MIN_RECT_PX)
        if not len(keep):
            return
        x0 = np.maximum(x[keep], GUTTER - 2.0)
        x1 = np.minimum(x[keep] + wdt[keep], self.width() + 2.0)
        codes = tl.colour_codes.codes[lane.events.name][lane.lo + a:lane.lo + b][keep]
        order = np.argsort(codes, kind="stable")
        codes = codes[order]
        rects = np.empty((len(order), 4), dtype=np.float64)
        rects[:, 0] = x0[order]
        rects[:, 1] = g.y + 1
        rects[:, 2] = x1[order] - x0[order]
        rects[:, 3] = g.h - 2
        bounds = np.r_[0, np.flatnonzero(np.diff(codes)) + 1, len(codes)]
        base = rects.ctypes.data
        for s, e in zip(bounds[:-1], bounds[1:]):
            colour = tl.palette[int(codes[s])]
            p.setBrush(colour)
            p.setPen(QPen(colour.darker(160), 0))
            p.drawRects(shiboken6.wrapInstance(base + int(s) * 32, QRectF), int(e - s))
        if lane.events.name == "collectives":  # the wait part of each rank, hatched
            waits = lane.events.sorted_column("start_ns")[lane.lo + a:lane.lo + b][keep][order]
            wr = rects.copy()
            wr[:, 2] = np.clip(GUTTER + (waits - t0) * px, x0[order], x1[order]) - wr[:, 0]
            wr = np.ascontiguousarray(wr[wr[:, 2] >= 1.0])
            if len(wr):
                p.setBrush(QBrush(P.WAIT, Qt.BDiagPattern))
                p.setPen(QPen(P.WAIT, 0))
                p.drawRects(shiboken6.wrapInstance(wr.ctypes.data, QRectF), len(wr))
        wide = np.flatnonzero(rects[:, 2] >= LABEL_PX)[:MAX_LABELS]
        if len(wide):
            fm = QFontMetrics(self._font)
            names = tl.colour_codes.names
            p.setPen(QColor("#101216"))
            for k in wide:
                name = names[int(codes[k])]
                width = self._text_widths.get(name)
                if width is None:
                    width = self._text_widths[name] = fm.horizontalAdvance(name)
                avail = rects[k, 2] - 6
                text = name if width <= avail else fm.elidedText(name, Qt.ElideRight, int(avail))
                p.drawText(QRectF(rects[k, 0] + 3, rects[k, 1], avail, rects[k, 3]), Qt.AlignVCenter | Qt.AlignLeft, text)

    def _paint_counters(self, p: QPainter, geoms: list[RowGeom], edges: np.ndarray) -> None:
        index = self.timeline.index
        tw = self.track_width
        for g in geoms:
            series = index.counters.get(g.track_id) if g.track_id is not None else None
            if series is None:
                continue
            bins = series.bins(edges)
            ref = index.counter_reference(g.track_id)
            top = max(series.peak, ref or 0.0) or 1.0
            h = g.h - 6
            scale = h / top
            hmax = np.nan_to_num(bins.max * scale, nan=-1.0)
            hmin = np.nan_to_num(bins.min * scale, nan=0.0)
            hmean = np.nan_to_num(bins.mean * scale, nan=-1.0)
            colour = P.ACCENT if "Bandwidth" in series.name else QColor("#c678dd") if "Usage" in series.name else QColor("#e5c07b")
            base = g.y + 3 + h
            x = GUTTER + np.arange(tw, dtype=np.float64) + 0.5
            # the min..max envelope of each pixel (peaks never vanish), then the mean as a filled area
            for top_h, bottom_h, alpha in ((hmax, hmin, 110), (hmean, np.zeros(tw), 210)):
                ok = np.flatnonzero(top_h >= 0)
                if not len(ok):
                    continue
                lines = np.empty((len(ok), 4), dtype=np.float64)
                lines[:, 0] = lines[:, 2] = x[ok]
                lines[:, 1] = base - np.minimum(bottom_h[ok], top_h[ok])
                lines[:, 3] = base - np.maximum(top_h[ok], 0.5)
                c = QColor(colour)
                c.setAlpha(alpha)
                p.setPen(QPen(c, 1))
                p.drawLines(shiboken6.wrapInstance(lines.ctypes.data, QLineF), len(ok))
            if ref and top == ref:  # 100% of the hardware peak
                p.setPen(QPen(QColor(224, 108, 117, 160), 1, Qt.DashLine))
                p.drawLine(GUTTER, g.y + 3, self.width(), g.y + 3)
            p.setPen(QPen(P.GRID, 1))
            p.drawLine(GUTTER, g.y + g.h - 1, self.width(), g.y + g.h - 1)

    def _paint_overlays(self, p: QPainter, geoms: list[RowGeom]) -> None:
        tl = self.timeline
        p.save()
        p.setClipRect(QRect(GUTTER, 0, self.track_width, self.height()))
        area = tl.area
        if area is not None:
            xa, xb = self.x_of(area.t0), self.x_of(area.t1)
            sel = set(area.track_ids)
            for g in geoms:
                tracks = [t.track_id for t in g.row.node.tracks()] if g.row.node.is_group else [g.track_id]
                if any(t in sel for t in tracks):
                    p.fillRect(QRectF(xa, g.y, xb - xa, g.h), P.AREA)
            p.setPen(QPen(P.ACCENT, 1, Qt.DashLine))
            p.drawLine(QPointF(xa, 0), QPointF(xa, self.height()))
            p.drawLine(QPointF(xb, 0), QPointF(xb, self.height()))
        ref = tl.selected
        if ref is not None and not self.counters:
            lane, _ = tl.index.locate(ref)
            g = next((g for g in geoms if g.track_id == lane.track.track_id), None)
            if g is not None:
                s, e = tl.index.interval(ref)
                xa, xb = self.x_of(s), self.x_of(e)
                if xb - xa < 3:
                    xa, xb = (xa + xb) / 2 - 1.5, (xa + xb) / 2 + 1.5
                p.setBrush(Qt.NoBrush)
                p.setPen(QPen(P.SELECTED, 2))
                p.drawRect(QRectF(xa, g.y + 0.5, xb - xa, g.h - 1))
                self._paint_flows(p, ref, g, geoms)
        if self._band is not None:
            xa, xb = sorted(self._band)
            colour = QColor(255, 255, 255, 40) if self._drag == "zoom" else P.AREA
            p.fillRect(QRectF(xa, 0, xb - xa, self.height()), colour)
        if tl.hover_t is not None:
            p.setPen(QPen(QColor(255, 255, 255, 70), 1))
            x = self.x_of(tl.hover_t)
            p.drawLine(QPointF(x, 0), QPointF(x, self.height()))
        p.restore()

    def _paint_flows(self, p: QPainter, ref: EventRef, g: RowGeom, geoms: list[RowGeom]) -> None:
        """Arrows from the selected event's dependencies to it (and to what it unblocks)."""
        tl = self.timeline
        deps = tl.selected_dependencies
        if not deps:
            return
        s, e = tl.index.interval(ref)
        by_track = {gg.track_id: gg for gg in geoms if gg.track_id is not None}
        p.setRenderHint(QPainter.Antialiasing, True)
        for dep in deps[:64]:
            if dep.ref is None:
                continue
            lane, _ = tl.index.locate(dep.ref)
            og = by_track.get(lane.track.track_id)
            if og is None:
                continue
            ds, de = tl.index.interval(dep.ref)
            if dep.direction == "waits for":
                a, b = QPointF(self.x_of(de), og.y + og.h / 2), QPointF(self.x_of(s), g.y + g.h / 2)
            else:
                a, b = QPointF(self.x_of(e), g.y + g.h / 2), QPointF(self.x_of(ds), og.y + og.h / 2)
            p.setPen(QPen(QColor("#ffd166"), 1.4))
            p.drawLine(a, b)
            v = b - a
            n = max((v.x() ** 2 + v.y() ** 2) ** 0.5, 1e-6)
            u = QPointF(v.x() / n, v.y() / n)
            side = QPointF(-u.y(), u.x())
            head = QPolygonF([b, b - u * 7 + side * 3.5, b - u * 7 - side * 3.5])
            p.setBrush(QColor("#ffd166"))
            p.drawPolygon(head)
        p.setRenderHint(QPainter.Antialiasing, False)

    def _paint_cached_gutter(self, p: QPainter, rows: list[RowGeom], pinned: list[RowGeom]) -> None:
        """The labels only change when rows do: keep them as a pixmap between frames."""
        key = (self.height(), self.scroll_y, self._layout_version, self._drop_y, id(self.timeline.index),
               self.devicePixelRatioF())
        if key != self._gutter_key or self._gutter is None:
            dpr = self.devicePixelRatioF()
            pm = QPixmap(int(GUTTER * dpr), int(self.height() * dpr))
            pm.setDevicePixelRatio(dpr)
            gp = QPainter(pm)
            gp.setFont(self._font)
            self._paint_gutter(gp, rows, pinned)
            gp.end()
            self._gutter, self._gutter_key = pm, key
        p.drawPixmap(0, 0, self._gutter)

    def _paint_gutter(self, p: QPainter, rows: list[RowGeom], pinned: list[RowGeom]) -> None:
        h = self.height()
        p.fillRect(0, 0, GUTTER, h, P.GUTTER_BG)
        index = self.timeline.index
        fm = QFontMetrics(self._font)
        for geoms, clip_top in ((rows, self.pinned_height), (pinned, 0)):
            p.save()
            p.setClipRect(QRect(0, clip_top, GUTTER, h - clip_top) if geoms is rows else QRect(0, 0, GUTTER, h))
            for g in geoms:
                node = g.row.node
                indent = 8 + 12 * node.depth
                if node.is_group:
                    p.fillRect(0, g.y, GUTTER, g.h, P.GROUP_BG)
                    p.setPen(P.TEXT)
                    p.setFont(self._bold)
                    tri = "\u25b8" if node.collapsed else "\u25be"
                    n = len(node.tracks())
                    p.drawText(QRect(indent, g.y, GUTTER - indent - 4, g.h), Qt.AlignVCenter, f"{tri} {node.label}")
                    p.setPen(P.TEXT_DIM)
                    p.setFont(self._font)
                    p.drawText(QRect(0, g.y, GUTTER - 8, g.h), Qt.AlignVCenter | Qt.AlignRight, f"{n} rows")
                    continue
                p.setPen(P.TEXT)
                label = node.label
                if g.row.pinned and node.track is not None:
                    t = node.track
                    label = f"{label}  \u00b7 c{t.chip}" + (f".{t.core}" if t.core >= 0 else "")
                text_rect = QRect(indent + 10, g.y, GUTTER - indent - 14 - PIN_W, g.h if not self.counters else 16)
                p.drawText(text_rect, Qt.AlignVCenter, fm.elidedText(label, Qt.ElideRight, text_rect.width()))
                if self.counters and node.track is not None:
                    series = index.counters.get(node.track.track_id)
                    if series is not None:
                        ref = index.counter_reference(node.track.track_id)
                        unit = series.unit or ""
                        peak = f"peak {format_value(series.peak, unit)}"
                        if ref:
                            peak += f" ({100 * series.peak / ref:.0f}% of hw)"
                        p.setPen(P.TEXT_DIM)
                        p.drawText(QRect(indent + 10, g.y + 16, GUTTER - indent - 14, 16), Qt.AlignVCenter,
                                   fm.elidedText(peak, Qt.ElideRight, GUTTER - indent - 14))
                self._paint_pin(p, g)
            p.restore()
        if self._drop_y is not None:
            p.setPen(QPen(P.ACCENT, 2))
            p.drawLine(0, self._drop_y, GUTTER, self._drop_y)
        p.setPen(QPen(P.GRID, 1))
        p.drawLine(GUTTER - 1, 0, GUTTER - 1, h)

    def _paint_pin(self, p: QPainter, g: RowGeom) -> None:
        pinned = self.tree is not None and self.tree.is_pinned(g.row.key)
        cx, cy = GUTTER - PIN_W // 2 - 2, g.y + min(g.h, ROW_H) // 2
        p.setRenderHint(QPainter.Antialiasing, True)
        p.setPen(QPen(P.ACCENT if pinned else QColor(255, 255, 255, 45), 1.2))
        p.setBrush(P.ACCENT if pinned else Qt.NoBrush)
        p.drawEllipse(QPointF(cx, cy - 2), 3, 3)
        p.drawLine(QPointF(cx, cy + 1), QPointF(cx, cy + 6))
        p.setRenderHint(QPainter.Antialiasing, False)

    # -- hit testing -----------------------------------------------------------------
    def event_at(self, pos: QPointF) -> EventRef | None:
        g = self.geom_at(pos.y())
        index = self.timeline.index
        if g is None or g.track_id is None or index is None or pos.x() < GUTTER or self.counters:
            return None
        lane = index.lanes.get(g.track_id)
        if lane is None:
            return None
        k = lane.at(self.t_of(pos.x()), slack_ns=3.0 / self.px_per_ns())
        return None if k is None else index.ref(lane, k)

    def point_for(self, ref: EventRef) -> QPoint:
        """Where an event is drawn (its row revealed and scrolled into view)."""
        index = self.timeline.index
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
        index = self.timeline.index
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
            text = f"{series.name}: {format_value(v, u)} at {format_ns(t - index.span[0])}"
            ref = index.counter_reference(g.track_id)
            if ref:
                text += f"\n{100 * v / ref:.1f}% of the hardware peak ({format_value(ref, u)})"
            px_ns = 1.0 / self.px_per_ns()
            b = series.bins(np.array([t - px_ns / 2, t + px_ns / 2]))
            if not np.isnan(b.max[0]):
                text += (f"\nthis pixel: min {format_value(b.min[0], u)}, max {format_value(b.max[0], u)}, "
                         f"mean {format_value(b.mean[0], u)}")
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
        vp = self.timeline.viewport
        self._drag_start = (vp.t0, vp.t1, self.scroll_y)
        self._drag = None

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        pos = event.position()
        if self._press is None:
            self.timeline.set_hover(self.t_of(pos.x()) if pos.x() >= GUTTER else None)
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
            self.timeline.viewport.set_range(t0 - dt, t1 - dt)
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
            self.timeline.viewport.set_range(self.t_of(a), self.t_of(b))
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
                self.timeline.select(None)
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
        self.timeline.select(self.event_at(pos), reveal=False)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802
        ref = self.event_at(event.position())
        if ref is not None:
            self.timeline.select(ref, reveal=False)
            self.timeline.fit_selection()

    def _set_area_from_drag(self, p0: QPointF, p1: QPointF, *, final: bool) -> None:
        pinned, rows = self.visible_geoms()
        ya, yb = sorted((p0.y(), p1.y()))
        tracks: list[int] = []
        for g in pinned + rows:
            if g.y + g.h > ya and g.y <= yb:
                tracks += [t.track_id for t in g.row.node.tracks()]
        ta, tb = sorted((self.t_of(max(p0.x(), GUTTER)), self.t_of(max(p1.x(), GUTTER))))
        sel = area_scope(tuple(dict.fromkeys(tracks)), int(ta), int(np.ceil(tb)))
        self.timeline.set_area(sel, final=final)

    def wheelEvent(self, event) -> None:  # noqa: N802
        delta = event.angleDelta()
        pos = event.position()
        if event.modifiers() & Qt.ShiftModifier or pos.x() < GUTTER:
            self.set_scroll(self.scroll_y - (delta.y() or delta.x()) // 2)
        elif delta.x() and not delta.y():
            self.timeline.viewport.pan(-delta.x() / 120 * 0.1 * self.timeline.viewport.width)
        elif delta.y():
            self.timeline.viewport.zoom(0.8 ** (delta.y() / 120), self.t_of(pos.x()))
        event.accept()

    def leaveEvent(self, event) -> None:  # noqa: N802
        self.timeline.set_hover(None)
        super().leaveEvent(event)
