"""StripGridAxis: a pyqtgraph axis whose grid costs a blit, not a line per tick.

pyqtgraph draws a plot's grid as its axes' tick lines stretched over the view, each a
translucent cosmetic line. Qt blends such a line pixel by pixel (a vertical one is a span of one
pixel per row): the roofline's ~100 grid lines took 1.5-2 ms of a 3-5 ms paint at 460x264, and
every kernel shown paints a new range. Every row a vertical grid line crosses looks the same, and
so does every column of the horizontal ones; so this axis has Qt draw its lines, with their own
pens and at their own sub-pixel places, over three rows (or columns) of a transparent strip, and
stretches the middle one over the rows (columns) the lines cover, found by drawing one whole line.
The strip is then one `drawImage`, blended by Qt with the same source-over arithmetic, between the
axis line and the tick labels, as pyqtgraph orders them. Where the painter is not a plain
translation (an export at another scale), the axis draws its grid as pyqtgraph does.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QPointF, Qt
from PySide6.QtGui import QImage, QPainter, QPicture, QTransform

_MARGIN = 2  # pixels of strip either side of the lines
_TRANSLATE = QTransform.TxTranslate.value


def _covered(line: QLineF, pen, vertical: bool) -> tuple[int, int] | None:
    """The first and last device rows (columns, for a horizontal line) one aliased `line` covers."""
    if vertical:
        y0, y1 = sorted((line.y1(), line.y2()))
        origin = math.floor(y0) - _MARGIN
        size = (3 + 2 * _MARGIN, math.ceil(y1) - origin + _MARGIN + 1)
        shift = QPointF(_MARGIN + 1 - math.floor(line.x1()), -origin)
    else:
        x0, x1 = sorted((line.x1(), line.x2()))
        origin = math.floor(x0) - _MARGIN
        size = (math.ceil(x1) - origin + _MARGIN + 1, 3 + 2 * _MARGIN)
        shift = QPointF(-origin, _MARGIN + 1 - math.floor(line.y1()))
    img = _draw(size, [(pen, line.translated(shift))])
    alpha = _alpha(img)
    hit = np.flatnonzero(alpha.any(axis=1 if vertical else 0))
    if not len(hit):
        return None
    return origin + int(hit[0]), origin + int(hit[-1])


def _draw(size: tuple[int, int], lines) -> QImage:
    img = QImage(size[0], size[1], QImage.Format_ARGB32_Premultiplied)
    img.fill(0)
    p = QPainter(img)
    p.setRenderHint(QPainter.Antialiasing, False)
    for pen, line in lines:
        p.setPen(pen)
        p.drawLine(line)
    p.end()
    return img


def _alpha(img: QImage) -> np.ndarray:
    a = np.frombuffer(img.constBits(), np.uint32, img.bytesPerLine() // 4 * img.height())
    return (a.reshape(img.height(), img.bytesPerLine() // 4)[:, :img.width()] >> 24).astype(np.uint8)


def grid_strips(lines: list[tuple[object, QLineF]]) -> list[tuple[QImage, int, int]] | None:
    """The grid `lines` (pens and device-space lines, all vertical or all horizontal, over the same
    span) as images and their device positions, to be drawn in order; None when they are not such
    a set. Lines that could share a pixel (closer than 1.5 px) go to separate images, in their
    order, so each pixel is blended line after line as drawing the lines one by one does."""
    if not lines:
        return None
    vertical = all(ln.x1() == ln.x2() for _, ln in lines)
    if not vertical and not all(ln.y1() == ln.y2() for _, ln in lines):
        return None
    first = lines[0][1]
    span = (first.y1(), first.y2()) if vertical else (first.x1(), first.x2())
    if any(((ln.y1(), ln.y2()) if vertical else (ln.x1(), ln.x2())) != span for _, ln in lines):
        return None
    extent = _covered(first, lines[0][0], vertical)
    if extent is None:
        return None
    groups: list[list[tuple[object, float]]] = [[]]
    for pen, ln in lines:
        at = ln.x1() if vertical else ln.y1()
        if any(abs(at - other) < 1.5 for _, other in groups[-1]):
            groups.append([])
        groups[-1].append((pen, at))
    return [_strip(group, extent, vertical) for group in groups]


def _strip(group: list[tuple[object, float]], extent: tuple[int, int], vertical: bool) -> tuple[QImage, int, int]:
    """Lines at `group`'s places, drawn across a strip three pixels deep whose middle row (column)
    is then stretched over `extent`."""
    across = [at for _, at in group]
    lo = math.floor(min(across)) - _MARGIN
    width = math.ceil(max(across)) - lo + _MARGIN + 1
    depth = extent[1] - extent[0] + 1
    if vertical:
        strip = _draw((width, 3), [(pen, QLineF(at - lo, -5.0, at - lo, 8.0)) for pen, at in group])
        img = strip.copy(0, 1, width, 1).scaled(width, depth, Qt.IgnoreAspectRatio, Qt.FastTransformation)
        return img, lo, extent[0]
    strip = _draw((3, width), [(pen, QLineF(-5.0, at - lo, 8.0, at - lo)) for pen, at in group])
    img = strip.copy(1, 0, 1, width).scaled(depth, width, Qt.IgnoreAspectRatio, Qt.FastTransformation)
    return img, extent[0], lo


class StripGridAxis(pg.AxisItem):
    """An AxisItem that draws its grid (when shown) as one strip image; see the module docstring."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._text_picture: QPicture | None = None
        self._ticks: list = []
        self._strip: tuple | None = None  # (device translation, [(strip image, x, y)] or None)

    def paint(self, p: QPainter, opt, widget) -> None:  # noqa: D102
        if self.grid is False:
            super().paint(p, opt, widget)
            return
        if self.picture is None:
            self._record()
        t = p.transform()
        if t.type().value > _TRANSLATE:  # (not a plain shift: pyqtgraph's own lines)
            self.picture.play(p)
            self._play_ticks(p)
            self._text_picture.play(p)
            return
        key = (t.dx(), t.dy())
        if self._strip is None or self._strip[0] != key:
            lines = [(pen, QLineF(QPointF(a.x() + key[0], a.y() + key[1]), QPointF(b.x() + key[0], b.y() + key[1])))
                     for pen, a, b in self._ticks]
            self._strip = (key, grid_strips(lines))
        self.picture.play(p)
        strips = self._strip[1]
        if strips is None:
            self._play_ticks(p)
        else:
            p.save()
            p.resetTransform()
            for img, x, y in strips:
                p.drawImage(x, y, img)
            p.restore()
        self._text_picture.play(p)

    def _play_ticks(self, p: QPainter) -> None:
        p.save()
        p.setRenderHint(QPainter.Antialiasing, False)
        for pen, a, b in self._ticks:
            p.setPen(pen)
            p.drawLine(a, b)
        p.restore()

    def _record(self) -> None:
        """pyqtgraph's drawing specs, as its `paint` makes them, kept in three parts: the axis
        line (a picture), the grid lines (drawn by `paint`) and the tick labels (a picture)."""
        line, text = QPicture(), QPicture()
        painter = QPainter(line)
        try:
            if self.style["tickFont"]:
                painter.setFont(self.style["tickFont"])
            specs = self.generateDrawSpecs(painter)
            self._ticks, self._strip = [], None
            if specs is not None:
                axis_spec, self._ticks, text_specs = specs
                painter.setRenderHint(QPainter.Antialiasing, False)
                painter.setRenderHint(QPainter.TextAntialiasing, True)
                pen, p1, p2 = axis_spec
                painter.setPen(pen)
                painter.drawLine(p1, p2)
        finally:
            painter.end()
        painter = QPainter(text)
        try:
            painter.setRenderHint(QPainter.Antialiasing, False)
            painter.setRenderHint(QPainter.TextAntialiasing, True)
            if self.style["tickFont"]:
                painter.setFont(self.style["tickFont"])
            if specs is not None:
                painter.setPen(self.textPen())
                painter.setClipRect(self.boundingRect().toAlignedRect())
                for rect, flags, label in text_specs:
                    painter.drawText(rect, int(flags), label)
        finally:
            painter.end()
        self.picture, self._text_picture = line, text
