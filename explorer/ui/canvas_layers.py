"""What a timeline canvas draws, as layers: each paints inside its bounds and keeps its own cache.

A canvas builds one `Frame` per paint (the view state, the visible rows, the pixel
edges of the time axis) and hands it to its layers in order: `GridLayer` (tick lines),
`RowsLayer` (engine lanes or counters, scrolled rows then pinned ones), `OverlayLayer`
(area selection, selected event and its flows, drag band, hover line) and
`GutterLayer` (row labels, kept as a pixmap between frames). A new kind of drawing
(warning bands, a query track, annotations) is one more layer; no layer reads the
others or any widget.

Lanes are painted straight from arrays: per visible row, `Lane.visible` (two
`searchsorted`) and `fractions_many` (one pass over the pixel edges per row, compiled:
explorer.model.timeline.lod_kernels) give a coverage line drawn as one row of an RGB32
image; rows with few visible intervals get crisp rectangles with one `QPainter.drawRects`
per colour (for all such rows at once) over a float64 buffer wrapped with
`shiboken6.wrapInstance`, and labels where wide. Counter rows bin each pixel's min, max and
mean (explorer.model.timeline.counter_bins) and draw them as two translucent layers of vertical
lines, painted as two images a row (the pixels Qt's lines light, blended as its pen blends).
Nothing loops over events, so a frame costs about the same on a 1k- or a 100M-event trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import shiboken6
from PySide6.QtCore import QLineF, QPoint, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QImage, QPainter, QPen, QPixmap, QPolygonF

from explorer.model.timeline.counter_labels import caption as counter_caption
from explorer.model.timeline.lod import compiled_loops, fractions_many, last_started
from explorer.model.timeline.time_axis import tick_times
from explorer.model.timeline.track_tree import Row, TrackTree
from explorer.model.timeline.trace_index import EventRef
from explorer.model.analysis.metrics import format_quantity
from explorer.model.timeline.view_state import ViewState
from explorer.ui import palette as P

HAVE_NUMBA = True  # blend and counter lines with lod_kernels' compiled loops once they are loaded
GUTTER = 240
PIN_W = 18
ROW_H = 18
GROUP_H = 20
COUNTER_H = 44
SPARSE_PX_PER_EVENT = 5  # at most width/5 visible intervals: also draw them as outlined rectangles
MIN_RECT_PX = 2.0  # narrower intervals are shown (exactly) by the coverage line only
LABEL_PX = 36.0
MAX_LABELS = 400
FOLDED_SAMPLE = 8  # rows sampled for a folded group's activity line
MAX_FLOWS = 64
COUNTER_ALPHAS = (110, 210)  # a counter row's min..max envelope, then its mean over it
PEAK_COLOUR = QColor(224, 108, 117, 160)  # a counter row's dashed line at 100% of the hardware peak
COUNTER_IMAGES = True  # counter rows' lines as two blended images a row (False: Qt's drawLines, the same pixels)


@dataclass
class RowGeom:
    row: Row
    y: int
    h: int

    @property
    def track_id(self) -> int | None:
        t = self.row.node.track
        return None if t is None else t.track_id


@dataclass
class Frame:
    """What one paint of a canvas needs; layers read nothing else."""

    state: ViewState
    colours: P.CategoryColours
    tree: TrackTree
    counters: bool
    width: int
    height: int
    pinned: list[RowGeom]
    rows: list[RowGeom]
    pinned_height: int
    font: QFont
    bold: QFont
    band: tuple[float, float] | None = None  # x range of a zoom/area drag
    drag: str | None = None
    drop_y: int | None = None  # where a dragged label would land
    scroll_y: int = 0
    layout_version: int = 0
    dpr: float = 1.0

    @property
    def track_width(self) -> int:
        return max(self.width - GUTTER, 1)

    @property
    def px_per_ns(self) -> float:
        return self.track_width / self.state.viewport.width

    def x_of(self, t: float) -> float:
        return GUTTER + (t - self.state.viewport.t0) * self.px_per_ns

    def edges(self) -> np.ndarray:
        """The time at each pixel edge of the track area."""
        vp, tw = self.state.viewport, self.track_width
        return vp.t0 + (vp.t1 - vp.t0) * (np.arange(tw + 1, dtype=np.float64) / tw)

    @property
    def track_rect(self) -> QRect:
        return QRect(GUTTER, 0, self.track_width, self.height)

    def static_key(self) -> tuple:
        """Everything the static layers (grid, rows) read: same key, same picture."""
        st, vp = self.state, self.state.viewport
        return (vp.t0, vp.t1, st.origin, self.width, self.height, self.dpr, self.scroll_y, self.layout_version,
                id(st.index), id(st.colour_codes), id(self.colours.colours), id(self.tree),
                P.BACKGROUND.rgba(), P.GROUP_BG.rgba(), P.GRID.rgba(), P.ACCENT.rgba())


class Layer:
    """One thing drawn on a canvas: it paints inside `bounds`, and drops its cache on `invalidate`.

    A `static` layer draws only what `Frame.static_key` names (the view, the rows, the colours):
    the canvas keeps the leading static layers as one picture and repaints them only when that
    key changes, so a click, the hover line or a search's hits repaint the overlays alone.
    """

    static = False

    def bounds(self, f: Frame) -> QRect:
        return f.track_rect

    def paint(self, p: QPainter, f: Frame) -> None:
        raise NotImplementedError

    def invalidate(self) -> None:
        """Forget anything cached (rows, theme or font changed)."""


class GridLayer(Layer):
    """Vertical lines at the ruler's ticks."""

    static = True

    def paint(self, p: QPainter, f: Frame) -> None:
        vp = f.state.viewport
        p.setPen(QPen(P.GRID, 1))
        for t in tick_times(vp.t0, vp.t1, f.track_width, f.state.origin):
            x = int(f.x_of(t))
            p.drawLine(x, 0, x, f.height)


class RowsLayer(Layer):
    """Engine lanes (coverage lines, rectangles, labels) or counter rows; pinned rows on top."""

    static = True

    def __init__(self) -> None:
        self._text_widths: dict[str, int] = {}
        self._elided: dict[tuple[str, int], str] = {}  # (name, width) -> the name elided to it

    def bounds(self, f: Frame) -> QRect:
        return QRect(0, 0, f.width, f.height)

    def invalidate(self) -> None:
        self._text_widths.clear()
        self._elided.clear()

    def paint(self, p: QPainter, f: Frame) -> None:
        edges = f.edges()
        self._paint_rows(p, f, f.rows, edges)
        if f.pinned:
            p.fillRect(0, 0, f.width, f.pinned_height, P.BACKGROUND)
            self._paint_rows(p, f, f.pinned, edges)
            p.setPen(QPen(P.ACCENT, 1))
            p.drawLine(0, f.pinned_height - 2, f.width, f.pinned_height - 2)

    def _paint_rows(self, p: QPainter, f: Frame, geoms: list[RowGeom], edges: np.ndarray) -> None:
        for g in geoms:
            if g.row.node.is_group:
                p.fillRect(GUTTER, g.y, f.width - GUTTER, g.h, P.GROUP_BG)
        p.save()
        p.setClipRect(f.track_rect)
        if f.counters:
            self._paint_counters(p, f, geoms, edges)
        else:
            self._paint_lanes(p, f, geoms, edges)
        p.restore()

    def _paint_lanes(self, p: QPainter, f: Frame, geoms: list[RowGeom], edges: np.ndarray) -> None:
        index = f.state.index
        colours = f.state.colour_codes
        pal = f.colours.rgb
        vp = f.state.viewport
        tw = f.track_width
        lanes = [(g, index.lanes[g.track_id]) for g in geoms if g.track_id in index.lanes]
        folded = [g for g in geoms if g.row.node.is_group and g.row.node.collapsed]
        if not lanes and not folded:
            return
        bg = np.array([P.BACKGROUND.red(), P.BACKGROUND.green(), P.BACKGROUND.blue()], dtype=np.float32)
        buf = np.empty((len(lanes) + len(folded), tw), dtype=np.uint32)
        self._paint_folded_summaries(f, buf[len(lanes):], folded, edges)
        last = np.zeros((0, 1), dtype=np.int64)
        if lanes:
            # every row's pixels at once: coverage fraction and the category under each pixel
            frac, last = fractions_many([lane.coverage for _, lane in lanes], edges)
            for i, (_, lane) in enumerate(lanes):
                if not lane.disjoint:  # coverage runs are merged: find the colour in the events
                    last[i] = last_started(lane.start, edges)
            code = self._lane_codes([lane for _, lane in lanes], last, colours)
            if P.COVERAGE_GAMMA != 1.0:
                frac = frac ** P.COVERAGE_GAMMA
            if HAVE_NUMBA and compiled_loops():  # the same float32 blend, one compiled pass
                from explorer.model.timeline.lod_kernels import blend_rgb32

                blend_rgb32(pal, code, frac, bg, buf[:len(lanes)])
            else:
                buf[:len(lanes)] = P.pack_rgb32(bg + (pal[code] - bg) * frac[:, :, None].astype(np.float32))
        img = QImage(buf.data, tw, len(buf), tw * 4, QImage.Format_RGB32)
        for i, g in enumerate([g for g, _ in lanes] + folded):
            p.drawImage(QRectF(GUTTER, g.y + 1, tw, g.h - 2), img, QRectF(0, i, tw, 1))
        limit = tw // SPARSE_PX_PER_EVENT
        sparse = []
        for i, (g, lane) in enumerate(lanes):
            if last[i, -1] - last[i, 0] > limit:  # at least that many start on screen: dense
                continue
            a, b = lane.visible(vp.t0, vp.t1)
            if 0 < b - a <= limit:
                sparse.append((g, lane, a, b))
        if sparse:
            self._paint_rects(p, f, sparse)

    @staticmethod
    def _lane_codes(lanes: list, last: np.ndarray, colours) -> np.ndarray:
        """The colour code of the interval `last[i]` names at each pixel of row i (0 for an
        empty lane): one lookup per table for all its rows, their lanes in row order so the
        positions asked ascend (each chunk of the trace read as one stretch), instead of one per row."""
        code = np.zeros(last.shape, dtype=np.int32)
        by_table: dict[str, list[int]] = {}
        for i, lane in enumerate(lanes):
            if lane.count:
                by_table.setdefault(lane.events.name, []).append(i)
        for name, rows in by_table.items():
            rows.sort(key=lambda i: lanes[i].lo)
            lo = np.array([lanes[i].lo for i in rows], dtype=np.int64)[:, None]
            top = np.array([lanes[i].count - 1 for i in rows], dtype=np.int64)[:, None]
            pos = lo + np.minimum(np.maximum(last[rows], 0), top)
            code[rows] = colours.codes[name][pos.ravel()].reshape(pos.shape)
        return code

    @staticmethod
    def _paint_folded_summaries(f: Frame, out: np.ndarray, folded: list[RowGeom], edges: np.ndarray) -> None:
        """A folded group's row shows how busy its rows are: the mean coverage of (up
        to FOLDED_SAMPLE, evenly spread) rows under it, as intensity."""
        index = f.state.index
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

    def _paint_rects(self, p: QPainter, f: Frame, sparse: list[tuple[RowGeom, object, int, int]]) -> None:
        """Outlined rectangles (and labels where wide) of the visible intervals of sparse rows
        [(row, lane, a, b)]: one `drawRects` per colour for all the rows (rows never overlap, so
        drawing colour by colour across rows paints what row by row did, in far fewer calls)."""
        px = f.px_per_ns
        t0 = f.state.viewport.t0
        rows, waits = [], []
        for g, lane, a, b in sparse:
            x = GUTTER + (lane.start[a:b] - t0) * px
            wdt = lane.dur[a:b] * px
            keep = np.flatnonzero(wdt >= MIN_RECT_PX)
            if not len(keep):
                continue
            x0 = np.maximum(x[keep], GUTTER - 2.0)
            x1 = np.minimum(x[keep] + wdt[keep], f.width + 2.0)
            codes = f.state.colour_codes.codes[lane.events.name][lane.lo + a:lane.lo + b][keep]
            order = np.argsort(codes, kind="stable")  # a row's rectangles, waits and labels go colour by colour
            codes = codes[order]
            rects = np.empty((len(order), 4), dtype=np.float64)
            rects[:, 0] = x0[order]
            rects[:, 1] = g.y + 1
            rects[:, 2] = x1[order] - x0[order]
            rects[:, 3] = g.h - 2
            rows.append((codes, rects))
            if lane.events.name == "collectives":  # the wait part of each rank, hatched
                w = lane.events.sorted_column("start_ns")[lane.lo + a:lane.lo + b][keep][order]
                wr = rects.copy()
                wr[:, 2] = np.clip(GUTTER + (w - t0) * px, x0[order], x1[order]) - wr[:, 0]
                waits.append(wr[wr[:, 2] >= 1.0])
        if not rows:
            return
        codes = np.concatenate([c for c, _ in rows])
        order = np.argsort(codes, kind="stable")  # by colour; within one, row by row, each in its order
        codes = codes[order]
        rects = np.ascontiguousarray(np.concatenate([r for _, r in rows])[order])
        bounds = np.r_[0, np.flatnonzero(np.diff(codes)) + 1, len(codes)]
        base = rects.ctypes.data
        for s, e in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            colour = f.colours.colours[int(codes[s])]
            p.setBrush(colour)
            p.setPen(QPen(colour.darker(160), 0))
            p.drawRects(shiboken6.wrapInstance(base + s * 32, QRectF), e - s)
        wr = np.ascontiguousarray(np.concatenate(waits)) if waits else np.zeros((0, 4))
        if len(wr):
            p.setBrush(QBrush(P.WAIT, Qt.BDiagPattern))
            p.setPen(QPen(P.WAIT, 0))
            p.drawRects(shiboken6.wrapInstance(wr.ctypes.data, QRectF), len(wr))
        self._paint_labels(p, f, rows)

    def _paint_labels(self, p: QPainter, f: Frame, rows: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Each wide rectangle's name (up to MAX_LABELS a row, colour by colour), elided to fit."""
        fm = None
        names = f.state.colour_codes.names
        for codes, rects in rows:
            wide = np.flatnonzero(rects[:, 2] >= LABEL_PX)[:MAX_LABELS]
            if not len(wide):
                continue
            if fm is None:
                fm = QFontMetrics(f.font)
                p.setPen(QColor("#101216"))
            for k in wide.tolist():
                name = names[int(codes[k])]
                width = self._text_widths.get(name)
                if width is None:
                    width = self._text_widths[name] = fm.horizontalAdvance(name)
                avail = rects[k, 2] - 6
                if width <= avail:
                    text = name
                else:  # (a zoom walk elides the same names to the same widths frame after frame)
                    key = (name, int(avail))
                    text = self._elided.get(key)
                    if text is None:
                        if len(self._elided) > 20_000:
                            self._elided.clear()
                        text = self._elided[key] = fm.elidedText(name, Qt.ElideRight, int(avail))
                p.drawText(QRectF(rects[k, 0] + 3, rects[k, 1], avail, rects[k, 3]), Qt.AlignVCenter | Qt.AlignLeft, text)

    @staticmethod
    def _counter_lines(bins, scale: float, base: int, tw: int) -> tuple[np.ndarray, np.ndarray]:
        """A counter row's vertical lines (x1, y1, x2, y2) per pixel with a value: its min..max
        envelope, and its mean down to the baseline."""
        if HAVE_NUMBA and compiled_loops():  # the same float64 arithmetic in one compiled pass
            from explorer.model.timeline.lod_kernels import counter_lines

            envelope, mean = np.empty((tw, 4)), np.empty((tw, 4))
            n_env, n_mean = counter_lines(bins.min, bins.max, bins.mean, scale, float(base), float(GUTTER),
                                          envelope, mean)
            return envelope[:n_env], mean[:n_mean]
        hmax = np.nan_to_num(bins.max * scale, nan=-1.0)
        hmin = np.nan_to_num(bins.min * scale, nan=0.0)
        hmean = np.nan_to_num(bins.mean * scale, nan=-1.0)
        x = GUTTER + np.arange(tw, dtype=np.float64) + 0.5
        out = []
        for top_h, bottom_h in ((hmax, hmin), (hmean, np.zeros(tw))):
            ok = np.flatnonzero(top_h >= 0)
            lines = np.empty((len(ok), 4), dtype=np.float64)
            lines[:, 0] = lines[:, 2] = x[ok]
            lines[:, 1] = base - np.minimum(bottom_h[ok], top_h[ok])
            lines[:, 3] = base - np.maximum(top_h[ok], 0.5)
            out.append(lines)
        return out[0], out[1]

    @staticmethod
    def _paint_counters(p: QPainter, f: Frame, geoms: list[RowGeom], edges: np.ndarray) -> None:
        index = f.state.index
        tw = f.track_width
        # the lines as images where the compiled loops are there and one unit is one pixel
        as_images = HAVE_NUMBA and COUNTER_IMAGES and f.dpr == 1.0 and compiled_loops()
        for g in geoms:
            series = index.counters.get(g.track_id) if g.track_id is not None else None
            if series is None:
                continue
            bins = series.bins(edges)
            ref = index.counter_reference(g.track_id)
            top = max(series.peak, ref or 0.0) or 1.0
            h = g.h - 6
            scale = h / top
            colour = P.ACCENT if "Bandwidth" in series.name else QColor("#c678dd") if "Usage" in series.name else QColor("#e5c07b")
            base = g.y + 3 + h
            # the min..max envelope of each pixel (peaks never vanish), then the mean as a filled area
            if as_images:
                RowsLayer._paint_counter_images(p, f, bins, scale, base, colour)
            for lines, alpha in zip(() if as_images else RowsLayer._counter_lines(bins, scale, base, tw), COUNTER_ALPHAS):
                if not len(lines):
                    continue
                c = QColor(colour)
                c.setAlpha(alpha)
                p.setPen(QPen(c, 1))
                p.drawLines(shiboken6.wrapInstance(lines.ctypes.data, QLineF), len(lines))
            if ref and top == ref:  # 100% of the hardware peak
                if as_images:  # the same dashes, blended the same way, without Qt dashing them again
                    p.drawImage(QPoint(0, g.y + 3), peak_line(f.width))
                else:
                    p.setPen(QPen(PEAK_COLOUR, 1, Qt.DashLine))
                    p.drawLine(GUTTER, g.y + 3, f.width, g.y + 3)
            p.setPen(QPen(P.GRID, 1))
            p.drawLine(GUTTER, g.y + g.h - 1, f.width, g.y + g.h - 1)

    @staticmethod
    def _paint_counter_images(p: QPainter, f: Frame, bins, scale: float, base: int, colour: QColor) -> None:
        """A counter row's two layers of vertical lines (`_counter_lines`) as two images blended over
        the picture, one per layer: the pixels each line lights (`lod_kernels.counter_pixel_rows`,
        Qt's rule for a one-pixel line) in the pen's premultiplied colour, transparent elsewhere.
        Blending that over a pixel is what filling it with the translucent pen does, so the picture
        is the same as `drawLines` painted, without Qt rasterising ~3,000 lines a row."""
        from explorer.model.timeline.lod_kernels import counter_pixel_rows, fill_rows

        tw = f.track_width
        rows = np.empty((tw, 4), dtype=np.int64)
        counter_pixel_rows(bins.min, bins.max, bins.mean, scale, float(base), rows)
        first, stop = rows[:, 0::2], rows[:, 1::2]
        drawn = stop > first
        if not drawn.any():
            return
        y0, y1 = max(int(first[drawn].min()), 0), min(int(stop[drawn].max()), f.height)
        if y1 <= y0:
            return
        for col, alpha in zip((0, 2), COUNTER_ALPHAS):
            img = np.zeros((y1 - y0, tw), dtype=np.uint32)
            fill_rows(rows, col, y0, np.uint32(premultiplied(colour, alpha)), img)
            p.drawImage(QPointF(GUTTER, y0), QImage(img.data, tw, y1 - y0, tw * 4, QImage.Format_ARGB32_Premultiplied))


def peak_line(width: int) -> QImage:
    """A counter row's dashed line at 100% of the hardware peak, from GUTTER to `width`, as Qt's pen
    draws it over nothing: an image whose pixels are the pen's premultiplied colour where a dash is,
    which blends over a row as the pen does. A line's dashes start at its first end, so every row's
    line is the same pixels: drawn once per width."""
    img = _PEAK_LINES.get(width)
    if img is None:
        img = QImage(width, 1, QImage.Format_ARGB32_Premultiplied)
        img.fill(0)
        q = QPainter(img)
        q.setClipRect(QRect(GUTTER, 0, max(width - GUTTER, 1), 1))  # (the rows' clip, as where they are drawn)
        q.setPen(QPen(PEAK_COLOUR, 1, Qt.DashLine))
        q.drawLine(GUTTER, 0, width, 0)
        q.end()
        if len(_PEAK_LINES) > 8:
            _PEAK_LINES.clear()
        _PEAK_LINES[width] = img
    return img


_PEAK_LINES: dict[int, QImage] = {}


def premultiplied(colour: QColor, alpha: int) -> int:
    """`colour` at `alpha` as a premultiplied ARGB32 pixel, rounded as Qt premultiplies a pen's colour
    (each channel c * alpha / 255, the way qPremultiply rounds it)."""
    out = alpha << 24
    for shift, c in ((16, colour.red()), (8, colour.green()), (0, colour.blue())):
        t = c * alpha
        out |= ((t + (t >> 8) + 0x80) >> 8) << shift
    return out


class OverlayLayer(Layer):
    """The area selection, the selected event with its dependency arrows, the drag band, the hover line."""

    def paint(self, p: QPainter, f: Frame) -> None:
        st = f.state
        geoms = f.pinned + f.rows
        area = st.area
        if area is not None:
            xa, xb = f.x_of(area.t0), f.x_of(area.t1)
            sel = set(area.track_ids or ())
            for g in geoms:
                tracks = [t.track_id for t in g.row.node.tracks()] if g.row.node.is_group else [g.track_id]
                if any(t in sel for t in tracks):
                    p.fillRect(QRectF(xa, g.y, xb - xa, g.h), P.AREA)
            p.setPen(QPen(P.ACCENT, 1, Qt.DashLine))
            p.drawLine(QPointF(xa, 0), QPointF(xa, f.height))
            p.drawLine(QPointF(xb, 0), QPointF(xb, f.height))
        ref = st.selected
        if ref is not None and not f.counters:
            lane, _ = st.index.locate(ref)
            g = next((g for g in geoms if g.track_id == lane.track.track_id), None)
            if g is not None:
                s, e = st.index.interval(ref)
                xa, xb = f.x_of(s), f.x_of(e)
                if xb - xa < 3:
                    xa, xb = (xa + xb) / 2 - 1.5, (xa + xb) / 2 + 1.5
                p.setBrush(Qt.NoBrush)
                p.setPen(QPen(P.SELECTED, 2))
                p.drawRect(QRectF(xa, g.y + 0.5, xb - xa, g.h - 1))
                self._paint_flows(p, f, ref, g, geoms)
        if f.band is not None:
            xa, xb = sorted(f.band)
            colour = QColor(255, 255, 255, 40) if f.drag == "zoom" else P.AREA
            p.fillRect(QRectF(xa, 0, xb - xa, f.height), colour)
        if st.hover_t is not None:
            p.setPen(QPen(QColor(255, 255, 255, 70), 1))
            x = f.x_of(st.hover_t)
            p.drawLine(QPointF(x, 0), QPointF(x, f.height))

    @staticmethod
    def _paint_flows(p: QPainter, f: Frame, ref: EventRef, g: RowGeom, geoms: list[RowGeom]) -> None:
        """Arrows from the selected event's dependencies to it (and to what it unblocks)."""
        st = f.state
        deps = st.selected_dependencies
        if not deps:
            return
        s, e = st.index.interval(ref)
        by_track = {gg.track_id: gg for gg in geoms if gg.track_id is not None}
        p.setRenderHint(QPainter.Antialiasing, True)
        for dep in deps[:MAX_FLOWS]:
            if dep.ref is None:
                continue
            lane, _ = st.index.locate(dep.ref)
            og = by_track.get(lane.track.track_id)
            if og is None:
                continue
            ds, de = st.index.interval(dep.ref)
            if dep.direction == "waits for":
                a, b = QPointF(f.x_of(de), og.y + og.h / 2), QPointF(f.x_of(s), g.y + g.h / 2)
            else:
                a, b = QPointF(f.x_of(e), g.y + g.h / 2), QPointF(f.x_of(ds), og.y + og.h / 2)
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


class GutterLayer(Layer):
    """Row labels, pins and counter peaks; they only change when rows do, so they are kept as a pixmap."""

    def __init__(self) -> None:
        self._pixmap: QPixmap | None = None
        self._key: tuple = ()

    def bounds(self, f: Frame) -> QRect:
        return QRect(0, 0, GUTTER, f.height)

    def invalidate(self) -> None:
        self._pixmap, self._key = None, ()

    def paint(self, p: QPainter, f: Frame) -> None:
        key = (f.height, f.scroll_y, f.layout_version, f.drop_y, id(f.state.index), f.dpr)
        if key != self._key or self._pixmap is None:
            pm = QPixmap(int(GUTTER * f.dpr), int(f.height * f.dpr))
            pm.setDevicePixelRatio(f.dpr)
            gp = QPainter(pm)
            gp.setFont(f.font)
            self._paint_labels(gp, f)
            gp.end()
            self._pixmap, self._key = pm, key
        p.drawPixmap(0, 0, self._pixmap)

    def _paint_labels(self, p: QPainter, f: Frame) -> None:
        h = f.height
        p.fillRect(0, 0, GUTTER, h, P.GUTTER_BG)
        index = f.state.index
        fm = QFontMetrics(f.font)
        for geoms, clip_top in ((f.rows, f.pinned_height), (f.pinned, 0)):
            p.save()
            p.setClipRect(QRect(0, clip_top, GUTTER, h - clip_top) if geoms is f.rows else QRect(0, 0, GUTTER, h))
            for g in geoms:
                node = g.row.node
                indent = 8 + 12 * node.depth
                if node.is_group:
                    p.fillRect(0, g.y, GUTTER, g.h, P.GROUP_BG)
                    p.setPen(P.TEXT)
                    p.setFont(f.bold)
                    tri = "\u25b8" if node.collapsed else "\u25be"
                    n = len(node.tracks())
                    p.drawText(QRect(indent, g.y, GUTTER - indent - 4, g.h), Qt.AlignVCenter, f"{tri} {node.label}")
                    p.setPen(P.TEXT_DIM)
                    p.setFont(f.font)
                    p.drawText(QRect(0, g.y, GUTTER - 8, g.h), Qt.AlignVCenter | Qt.AlignRight, f"{n} rows")
                    continue
                p.setPen(P.TEXT)
                label = node.label
                if g.row.pinned and node.track is not None:
                    t = node.track
                    label = f"{label}  \u00b7 c{t.chip}" + (f".{t.core}" if t.core >= 0 else "")
                text_rect = QRect(indent + 10, g.y, GUTTER - indent - 14 - PIN_W, g.h if not f.counters else 16)
                p.drawText(text_rect, Qt.AlignVCenter, fm.elidedText(label, Qt.ElideRight, text_rect.width()))
                if f.counters and node.track is not None:
                    series = index.counters.get(node.track.track_id)
                    if series is not None:
                        ref = index.counter_reference(node.track.track_id)
                        low = float(series.value.min()) if len(series.value) else 0.0
                        peak = counter_caption(series.name, series.peak, low, ref,
                                               lambda v, u=series.unit or "": format_quantity(v, u))
                        p.setPen(P.TEXT_DIM)
                        p.drawText(QRect(indent + 10, g.y + 16, GUTTER - indent - 14, 16), Qt.AlignVCenter,
                                   fm.elidedText(peak, Qt.ElideRight, GUTTER - indent - 14))
                self._paint_pin(p, f, g)
            p.restore()
        if f.drop_y is not None:
            p.setPen(QPen(P.ACCENT, 2))
            p.drawLine(0, f.drop_y, GUTTER, f.drop_y)
        p.setPen(QPen(P.GRID, 1))
        p.drawLine(GUTTER - 1, 0, GUTTER - 1, h)

    @staticmethod
    def _paint_pin(p: QPainter, f: Frame, g: RowGeom) -> None:
        pinned = f.tree.is_pinned(g.row.key)
        cx, cy = GUTTER - PIN_W // 2 - 2, g.y + min(g.h, ROW_H) // 2
        p.setRenderHint(QPainter.Antialiasing, True)
        p.setPen(QPen(P.ACCENT if pinned else QColor(255, 255, 255, 45), 1.2))
        p.setBrush(P.ACCENT if pinned else Qt.NoBrush)
        p.drawEllipse(QPointF(cx, cy - 2), 3, 3)
        p.drawLine(QPointF(cx, cy + 1), QPointF(cx, cy + 6))
        p.setRenderHint(QPainter.Antialiasing, False)


def default_layers() -> list[Layer]:
    """The layers of a timeline canvas, bottom to top."""
    return [GridLayer(), RowsLayer(), OverlayLayer(), GutterLayer()]
