"""QtMemoryView (objectName `memory-view`): SBUF or PSUM allocations per core over the timeline's window.

`explorer.model.memory` reads `sbuf_allocations` and rasterises each core's lane for the window the
timeline shows (on the tools' worker); this widget only draws those images, one lane per core:
partitions (or byte addresses) down, time across, each allocation coloured by what it holds.
Hover names the owner (tensor, kind, kernel, bytes, partitions, address, time); a click selects
the kernel on the timeline. A trace without the table says why there is nothing to draw.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QScrollArea, QToolTip, QVBoxLayout, QWidget

from explorer.model import memory as M
from explorer.model.units import format_bytes, format_ns, plural
from explorer.ui import palette as P
from explorer.ui.tools.background import run_tool

LANE_H = 96      # a lane's least height; above it the lanes share all of the dock's height
GAMMA = 0.45     # display only: a pixel's brightness is fill ** GAMMA, so a tenth full still shows
LABEL_H = 18
GUTTER = 8
DEBOUNCE_MS = 40
KIND_COLOURS = dict(zip(M.ALLOCATION_KINDS, ("#4e9be6", "#59a14f", "#f28e2b", "#e15759", "#9c9ea8", "#b07aa1",
                                             "#edc948")))


def kind_colour(kind: str) -> QColor:
    return QColor(KIND_COLOURS.get(kind, P.NONE_COLOUR))


LEVELS = 64  # shades of fill per kind


def shades(colours: np.ndarray) -> np.ndarray:
    """(kinds + 1, LEVELS) packed pixels: the empty colour (`colours[0]`) blended towards each kind's colour."""
    f = np.linspace(0.0, 1.0, LEVELS)[None, :, None]
    return P.pack_rgb32(colours[0][None, None, :] * (1.0 - f) + colours[:, None, :] * f)


def to_image(r: M.Raster, lut: np.ndarray) -> QImage:
    """A lane's pixels from its raster and `shades()`. Made on the tools' worker (a QImage, unlike a
    pixmap, may be made off the GUI thread)."""
    rgb = lut[r.kind, np.rint(np.power(r.fill, GAMMA) * (LEVELS - 1)).astype(np.intp)]
    h, w = rgb.shape
    return QImage(np.ascontiguousarray(rgb).data, w, h, 4 * w, QImage.Format_RGB32).copy()  # (owns its pixels)


class _Lanes(QWidget):
    """The lanes' images; hover and click are answered from the model's arrays."""

    clicked = Signal(int)  # kernel id

    def __init__(self, owner: QtMemoryView) -> None:
        super().__init__(owner)
        self.owner = owner
        self.setMouseTracking(True)
        self.images: list[QImage] = []
        self.tip: str | None = None  # what the hover shows (the tooltip's text)

    def plot_width(self) -> int:
        return max(self.width() - 2 * GUTTER, 1)

    def lane_rect(self, i: int) -> QRect:
        h = self.lane_height()
        return QRect(GUTTER, i * (h + LABEL_H) + LABEL_H, self.plot_width(), h)

    def lane_height(self) -> int:
        """The lanes split the visible height between them (labels included), so the drawing fills the
        panel and grows and shrinks with it; below LANE_H each, the panel scrolls instead."""
        n = max(len(self.owner.lanes()), 1)
        room = (self.owner.scroll.viewport().height() - 2) // n - LABEL_H
        return int(max(room, LANE_H))

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.fillRect(self.rect(), P.BACKGROUND)
        o = self.owner
        for i, lane in enumerate(o.lanes()):
            r = self.lane_rect(i)
            p.setPen(P.TEXT)
            held = f"peak {format_bytes(lane.peak_bytes)} of {format_bytes(o.data.capacity[lane.memory][0])} " \
                   f"at {format_ns(lane.peak_t - o.origin)}"
            label = QRect(GUTTER, r.top() - LABEL_H, r.width(), LABEL_H)
            p.drawText(label, Qt.AlignLeft | Qt.AlignVCenter, f"{lane.label}   {o.axis_text(lane)}   {held}")
            p.setPen(P.TEXT_DIM)
            p.drawText(label, Qt.AlignRight | Qt.AlignVCenter,
                       f"{format_ns(o.t0 - o.origin)} → {format_ns(o.t1 - o.origin)}")
            p.fillRect(r, P.ROW_ALT)
            if i < len(self.images):
                p.drawImage(r, self.images[i])
            p.setPen(P.GRID)
            p.drawRect(r.adjusted(0, 0, -1, -1))
        p.end()

    def lane_at(self, y: float) -> int | None:
        i = int(y // (self.lane_height() + LABEL_H))
        return i if 0 <= i < len(self.owner.lanes()) and self.lane_rect(i).contains(self.lane_rect(i).left(), int(y)) else None

    def rows_at(self, pos) -> tuple[M.Lane, np.ndarray] | None:
        i = self.lane_at(pos.y())
        o = self.owner
        if i is None or o.data is None:
            return None
        r = self.lane_rect(i)
        lane = o.lanes()[i]
        t = o.t0 + (pos.x() - r.left()) / r.width() * (o.t1 - o.t0)
        y = (pos.y() - r.top()) / r.height() * o.data.y_range(lane.memory, o.mode)
        return lane, M.at(o.data, lane, t, y, o.mode)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        hit = self.rows_at(event.position())
        text = self.owner.hover_text(*hit) if hit is not None else None
        self.tip = text
        if text:
            QToolTip.showText(event.globalPosition().toPoint(), text, self)
        else:
            QToolTip.hideText()

    def mousePressEvent(self, event) -> None:  # noqa: N802
        hit = self.rows_at(event.position())
        if hit is not None and len(hit[1]) and event.button() == Qt.LeftButton:
            self.clicked.emit(int(self.owner.data.cols["kernel_id"][hit[1][0]]))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self.owner.schedule()  # (the lanes' width or height changed: new images)


class QtMemoryView(QWidget):
    kernel_requested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("memory-view")
        self.trace = None
        self.data: M.MemoryData | None = None
        self.origin = 0.0
        self.t0, self.t1 = 0.0, 1.0
        self.mode = "partitions"
        self.memory = "sbuf"
        self.stale = False
        self.drawn: tuple | None = None   # (t0, t1, mode, memory, width, lane height) the images show
        self._generation = 0
        self.memories = QComboBox(objectName="memory-memory")
        self.memories.addItems(["SBUF", "PSUM"])
        self.memories.currentTextChanged.connect(self._memory_changed)
        self.axis = QComboBox(objectName="memory-axis")
        self.axis.addItems(["Partitions", "Address"])
        self.axis.setToolTip("y: the partitions an allocation spans, or its byte address in each partition")
        self.axis.currentTextChanged.connect(self._axis_changed)
        self.status = QLabel("", objectName="memory-status")
        self.status.setWordWrap(True)
        self.legend = QLabel("", objectName="memory-legend")
        self.legend.setTextFormat(Qt.RichText)
        self.canvas = _Lanes(self)
        self.canvas.setObjectName("memory-canvas")
        self.canvas.clicked.connect(self.kernel_requested.emit)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(self.canvas)
        self.timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self.timer.timeout.connect(self.refresh)
        top = QHBoxLayout()
        top.addWidget(QLabel("Memory"))
        top.addWidget(self.memories)
        top.addWidget(QLabel("y"))
        top.addWidget(self.axis)
        top.addWidget(self.legend, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.status)
        lay.addWidget(self.scroll, 1)

    # -- what to show ---------------------------------------------------------------------
    def set_trace(self, trace, origin: float = 0.0) -> None:
        self.trace, self.origin = trace, origin
        self.data = None
        self.canvas.images = []
        self.drawn = None
        self._size_canvas()
        self.status.setText("")
        self.stale = trace is not None
        if self.stale and self.isVisible():
            self.refresh()

    def set_window(self, t0: float, t1: float) -> None:
        """Follow the timeline's visible range (redrawn once the range stops changing for a moment)."""
        self.t0, self.t1 = float(t0), float(t1)
        self.schedule()

    def lanes(self) -> list[M.Lane]:
        return self.data.lanes_of(self.memory) if self.data is not None else []

    def axis_text(self, lane: M.Lane) -> str:
        if self.mode == "partitions":
            return f"partitions 0-{self.data.capacity[lane.memory][1] - 1} down"
        return f"bytes 0-{format_bytes(self.data.y_range(lane.memory, 'address'))} of each partition down"

    def hover_text(self, lane: M.Lane, rows: np.ndarray) -> str | None:
        if not len(rows):
            return None
        kid = int(self.data.cols["kernel_id"][rows[0]])
        return M.describe_many(self.data, rows, self.data.kernel_names.get(kid), self.origin) + \
            "\nclick: select the kernel on the timeline"

    # -- computing off the GUI thread --------------------------------------------------------
    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self.stale or self.drawn is None:
            self.refresh()

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange:  # a new theme: the lanes' images hold the old one's colours
            self.schedule()

    def schedule(self) -> None:
        if self.isVisible() and self.data is not None:
            self.timer.start()

    def refresh(self) -> None:
        """Load the trace's allocations (once), then rasterise the lanes for the current window."""
        trace = self.trace
        if trace is None:
            return
        if self.data is None:
            self.stale = False
            self.status.setText("reading allocations\u2026")
            run_tool(lambda: M.load_memory(trace), lambda ok, v: self._loaded(trace, ok, v))
            return
        if self.data.reason is not None:
            return
        self._generation += 1
        gen, data = self._generation, self.data
        key = (self.t0, self.t1, self.mode, self.memory, self.canvas.plot_width(), self.canvas.lane_height())
        lanes = self.lanes()
        lut = shades(P.rgb_array([P.ROW_ALT] + [kind_colour(k) for k in M.ALLOCATION_KINDS]))  # (this theme's)
        run_tool(lambda: [to_image(M.raster(data, lane, key[0], key[1], key[2], key[4], key[5]), lut)
                          for lane in lanes],
                 lambda ok, v: self._drawn(gen, key, ok, v))

    def _loaded(self, trace, ok: bool, value) -> None:
        if trace is not self.trace:
            return
        if not ok:
            self.status.setText(value)
            return
        self.data = value
        if value.reason is not None:
            self.status.setText(value.reason)
            self.legend.setText("")
            self._size_canvas()
            return
        kinds = sorted({M.ALLOCATION_KINDS[k] for k in np.unique(value.cols["kind"]) if k >= 0},
                       key=M.ALLOCATION_KINDS.index)
        self.legend.setText("  ".join(f"<span style='color:{kind_colour(k).name()}'>\u25a0</span> {k.replace('_', ' ')}"
                                      for k in kinds))
        self._summary()
        self._size_canvas()
        self.refresh()

    def _drawn(self, gen: int, key: tuple, ok: bool, value) -> None:
        if gen != self._generation:
            return  # a newer window is on its way
        if not ok:
            self.status.setText(value)
            return
        self.canvas.images = value
        self.drawn = key
        self.canvas.update()

    # -- controls ---------------------------------------------------------------------------
    def _memory_changed(self, text: str) -> None:
        self.memory = text.lower()
        self.canvas.images = []
        if self.data is not None and self.data.reason is None:
            self._summary()
        self._size_canvas()
        self.refresh()

    def _axis_changed(self, text: str) -> None:
        self.mode = text.lower()
        self.refresh()

    def _summary(self) -> None:
        o = M.overview(self.data, self.memory)
        top = o.busiest
        if top is None:
            self.status.setText(f"no {self.memory.upper()} allocations in this trace")
            return
        self.status.setText(f"{o.allocations:,} {self.memory.upper()} allocations on {plural(o.cores, 'core')} "
                            f"(instruction-detail cores); the most held at once: {format_bytes(top.peak_bytes)} of "
                            f"{format_bytes(o.capacity_bytes)} ({o.peak_percent:.0f}%), {top.label} at "
                            f"{format_ns(top.peak_t - self.origin)}. Follows the timeline; hover for the owner, "
                            "click to select its kernel")

    def _size_canvas(self) -> None:
        self.canvas.setMinimumHeight(max(len(self.lanes()) * (LANE_H + LABEL_H) + 4, 40))
        self.schedule()
        self.canvas.update()

    def point_of(self, row: int) -> QPoint:
        """Where an allocation's middle is on the canvas, in the current window (tests, scripts)."""
        c = self.data.cols
        lane_i = next(i for i, lane in enumerate(self.lanes()) if row in set(lane.rows.tolist()))
        lane = self.lanes()[lane_i]
        r = self.canvas.lane_rect(lane_i)
        t = (max(c["start_ns"][row], self.t0) + min(c["end_ns"][row], self.t1)) / 2
        ya, yb = M.y_span(self.data, np.array([row]), self.mode)
        y = (ya[0] + yb[0]) / 2 / self.data.y_range(lane.memory, self.mode)
        return QPoint(int(r.left() + (t - self.t0) / (self.t1 - self.t0) * r.width()), int(r.top() + y * r.height()))
