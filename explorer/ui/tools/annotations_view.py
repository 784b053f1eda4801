"""QtAnnotations (objectName `annotations`): markers and ranges with notes, and their layer.

`explorer.model.annotations` keeps them in the trace directory (`annotations.json`,
written atomically on every change). M drops a marker at the pointer, snapped to the
nearest event edge of the row under it; "Range" annotates the area selection (or the
visible range). The list shows them in time order: a click shows one, a double-click
edits its note, and with two selected the line under it gives the time between them and
what ran in between (computed on the tools' worker). `AnnotationsLayer` draws markers as
lines across the rows and ranges as bands.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractItemView, QGridLayout, QInputDialog, QLabel, QToolButton, QVBoxLayout, QWidget,
)

from explorer.model import annotations as A
from explorer.model.analysis.metrics import format_quantity
from explorer.model.timeline.view_state import ViewState
from explorer.model.units import format_bytes, format_count, format_ns
from explorer.ui.canvas_layers import Frame, Layer
from explorer.ui.frame_table import Column, FrameTableModel, make_table, ns, text
from explorer.ui.tools.background import run_tool
from simcore.errors import UserError

MARKER = QColor("#ff8c42")
RANGE = QColor(255, 140, 66, 40)
SNAP_PX = 6


class AnnotationsLayer(Layer):
    """Markers as lines across every row (their note at the top), ranges as bands."""

    def __init__(self, items: Callable[[], list[A.Annotation]]) -> None:
        self.items = items

    def paint(self, p: QPainter, f: Frame) -> None:
        notes = self.items()
        if not notes:
            return
        vp = f.state.viewport
        p.save()
        p.setClipRect(f.track_rect)
        pen = QPen(MARKER, 1, Qt.DashLine)
        for a in notes:
            if a.t1 < vp.t0 or a.t0 > vp.t1:
                continue
            x0 = f.x_of(a.t0)
            if a.kind == "range":
                x1 = f.x_of(a.t1)
                p.fillRect(QRectF(x0, 0, max(x1 - x0, 1.0), f.height), RANGE)
                p.setPen(MARKER)
                p.drawLine(int(x0), 0, int(x0), f.height)
                p.drawLine(int(x1), 0, int(x1), f.height)
            else:
                p.setPen(pen)
                p.drawLine(int(x0), 0, int(x0), f.height)
            p.setPen(MARKER)
            p.setFont(f.bold)
            p.drawText(QRectF(x0 + 3, f.pinned_height + 1, 220, 14), Qt.AlignLeft | Qt.AlignVCenter,
                       f"#{a.id} {a.note}"[:40])
        p.restore()


def _frame(items: list[A.Annotation], origin: float) -> pd.DataFrame:
    return pd.DataFrame({
        "id": [a.id for a in items],
        "kind": [a.kind for a in items],
        "at": [a.t0 - origin for a in items],
        "duration": [a.duration_ns if a.kind == "range" else None for a in items],
        "note": [a.note for a in items],
    })


class QtAnnotations(QWidget):
    """The annotations list with Marker, Range, Note and Delete, and the delta between two."""

    changed = Signal()
    range_requested = Signal(float, float)
    failed = Signal(str)

    def __init__(self, state: ViewState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("annotations")
        self.state = state
        self.store: A.AnnotationSet | None = None
        self.delta: object | None = None  # the last SelectionSummary between two annotations
        self.unusable = ""  # why the open trace cannot be annotated (its annotations file is damaged)
        self._generation = 0
        self.model = FrameTableModel([
            Column("id", "#", text), Column("kind", "kind", text),
            Column("at", "at", ns, "time from the trace's start"), Column("duration", "duration", ns),
            Column("note", "note", text, "double-click to edit"),
        ])
        self.table = make_table(self.model, "annotations-table", sortable=False)
        self.table.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._selection_changed())
        self.table.clicked.connect(lambda idx: self.show_row(idx.row()))
        self.table.doubleClicked.connect(lambda idx: self.ask_note(idx.row()))
        buttons = []
        for name, label, tip, slot in (
            ("annotate-marker", "Marker", "Drop a marker at the middle of the view (M on the timeline: at the pointer, snapped to the nearest event edge)", lambda: self.add_marker_here()),
            ("annotate-range", "Range", "Annotate the selected area (Shift+drag), else the visible range", self.add_range_here),
            ("annotate-note", "Note\u2026", "Edit the selected annotation's note", lambda: self.ask_note()),
            ("annotate-delete", "Delete", "Delete the selected annotations", self.delete_selected),
        ):
            b = QToolButton(text=label, objectName=name, toolTip=tip)
            b.clicked.connect(slot)
            buttons.append(b)
        self.delta_label = QLabel("", objectName="annotations-delta")
        self.delta_label.setWordWrap(True)
        self.delta_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        top = QGridLayout()  # two by two: the right dock stays as narrow as its other panels
        for i, b in enumerate(buttons):
            top.addWidget(b, i // 2, i % 2)
        top.setColumnStretch(2, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.delta_label)

    # -- data --------------------------------------------------------------------------
    @property
    def items(self) -> list[A.Annotation]:
        return self.store.items if self.store is not None else []

    def set_trace_dir(self, path) -> None:
        """Show the annotations of the trace in `path` (None: none). A damaged annotations file is
        said once and kept as the reason nothing can be annotated (the file is never rewritten)."""
        self.store = None
        self.unusable = ""
        try:
            self.store = A.AnnotationSet(path) if path is not None else None
        except UserError as exc:
            self.unusable = str(exc)
            self.failed.emit(self.unusable)
        self._refresh()

    def _refresh(self) -> None:
        self.model.set_frame(_frame(self.items, self.state.origin))
        self.delta_label.setText(self.unusable)
        self.changed.emit()

    def _do(self, fn, *args):
        if self.store is None:
            self.failed.emit(self.unusable or "open a trace first: annotations belong to a trace.")
            return None
        try:
            out = fn(*args)
        except UserError as exc:
            self.failed.emit(str(exc))
            return None
        self._refresh()
        return out

    # -- adding ------------------------------------------------------------------------
    def add_marker(self, t: float, track_id: int | None = None, note: str = "", *, snap_ns: float = 0.0) -> A.Annotation | None:
        """A marker at `t` (snapped within `snap_ns` to an event edge on `track_id`)."""
        index = self.state.index
        if index is not None and snap_ns > 0:
            t = A.snap(index, t, track_id, snap_ns)
        return self._do(lambda: self.store.add_marker(int(round(t)), note, track_id))

    def add_marker_here(self, track_id: int | None = None, ns_per_px: float = 0.0) -> A.Annotation | None:
        """M: a marker at the pointer's time (else the view's middle), snapped within a few pixels to an
        event edge on the row under the pointer (`track_id`, `ns_per_px`: what the window's canvas says)."""
        vp = self.state.viewport
        t = self.state.hover_t if self.state.hover_t is not None else (vp.t0 + vp.t1) / 2
        return self.add_marker(t, track_id, snap_ns=SNAP_PX * ns_per_px)

    def add_range(self, t0: int, t1: int, note: str = "") -> A.Annotation | None:
        return self._do(lambda: self.store.add_range(int(t0), int(t1), note))

    def add_range_here(self) -> A.Annotation | None:
        area = self.state.area
        t0, t1 = (area.t0, area.t1) if area is not None else (self.state.viewport.t0, self.state.viewport.t1)
        return self._do(lambda: self.store.add_range(int(t0), int(t1)))

    # -- editing -----------------------------------------------------------------------
    def selected_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [int(self.model.record(r)["id"]) for r in rows]

    def ask_note(self, row: int | None = None) -> None:
        ids = [int(self.model.record(row)["id"])] if row is not None else self.selected_ids()[:1]
        if not ids or self.store is None:
            return
        a = self.store.get(ids[0])
        note, ok = QInputDialog.getText(self, "Annotation note", f"Note for #{a.id}:", text=a.note)
        if ok:
            self.set_note(a.id, note)

    def set_note(self, ident: int, note: str) -> None:
        self._do(lambda: self.store.set_note(ident, note))

    def delete_selected(self) -> None:
        for ident in self.selected_ids():
            self._do(lambda i=ident: self.store.remove(i))

    def show_row(self, row: int) -> None:
        a = self.store.get(int(self.model.record(row)["id"])) if self.store else None
        if a is None:
            return
        pad = max(a.duration_ns * 0.1, 5000.0)
        self.range_requested.emit(a.t0 - pad, a.t1 + pad)

    # -- deltas ------------------------------------------------------------------------
    def _selection_changed(self) -> None:
        ids = self.selected_ids()
        if len(ids) != 2 or self.store is None or self.state.index is None:
            self.delta_label.setText(self.unusable)
            return
        a, b = (self.store.get(i) for i in ids)
        index = self.state.index
        self._generation += 1
        gen = self._generation
        self.delta_label.setText(f"\u0394 {format_ns(abs(b.t0 - a.t0))} between #{a.id} and #{b.id}\u2026")
        run_tool(lambda: A.between(index, a, b), lambda ok, v: self._delta_done(gen, a, b, ok, v))

    def _delta_done(self, gen: int, a: A.Annotation, b: A.Annotation, ok: bool, s) -> None:
        if gen != self._generation:
            return
        if not ok:
            self.delta_label.setText(s)
            return
        self.delta = s
        parts = [f"\u0394 {format_ns(abs(b.t0 - a.t0))} between #{a.id} and #{b.id}",
                 f"{s.instructions:,} instructions", f"{format_count(s.flops)}FLOP",
                 f"{s.dma_transfers:,} DMA transfers ({format_bytes(s.dma_bytes)}, {format_quantity(s.dma_gbps, 'GB/s')})"]
        if s.collectives:
            parts.append(f"{s.collectives} collectives waiting {format_ns(s.collective_wait_ns)}")
        self.delta_label.setText(", ".join(parts))
