"""QtEventDetails: the selected event's fields and its dependencies, with jumps."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QHeaderView, QLabel, QListWidget, QListWidgetItem, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from explorer.model.timeline.event_details import Dependency, EventDetails, event_details
from explorer.model.timeline.trace_index import EventRef, TraceIndex


class QtEventDetails(QWidget):
    """Shows `explorer.model.timeline.event_details` for the selected event.

    The fields show at once (`show_event`); the dependencies when the window's selection
    worker has found them (`show_dependencies`, from `ViewState.dependencies_changed`).
    Clicking a dependency emits `jump_requested(EventRef)`; the window forwards it to
    `TimelineWidget.highlight`.
    """

    jump_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("details")
        self.index: TraceIndex | None = None
        self.details: EventDetails | None = None
        self.title = QLabel("Click an event in the timeline to see its details.")
        self.title.setObjectName("details-title")
        self.title.setWordWrap(True)
        f = self.title.font()
        f.setPointSizeF(f.pointSizeF() * 1.25)
        f.setBold(True)
        self.title.setFont(f)
        self.fields = QTableWidget(0, 2)
        self.fields.setObjectName("details-fields")
        self.fields.horizontalHeader().setVisible(False)
        self.fields.verticalHeader().setVisible(False)
        self.fields.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeToContents)
        self.fields.horizontalHeader().setStretchLastSection(True)
        self.fields.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.fields.setSelectionMode(QAbstractItemView.NoSelection)
        self.fields.setShowGrid(False)
        self.fields.setWordWrap(False)
        self.deps_label = QLabel("Dependencies")
        self.deps = QListWidget()
        self.deps.setObjectName("details-dependencies")
        self.deps.itemClicked.connect(self._clicked)
        self.deps.itemActivated.connect(self._clicked)
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.fields, 3)
        lay.addWidget(self.deps_label)
        lay.addWidget(self.deps, 2)

    def set_index(self, index: TraceIndex | None) -> None:
        self.index = index
        self.show_event(None)

    def show_event(self, ref: EventRef | None) -> None:
        self.fields.setRowCount(0)
        self.deps.clear()
        self.details = None
        if ref is None or self.index is None:
            self.title.setText("Click an event in the timeline to see its details.")
            self.deps_label.setText("Dependencies")
            return
        d = self.details = event_details(self.index, ref, with_dependencies=False)
        self.title.setText(d.title)
        self.fields.setRowCount(len(d.fields))
        for i, (k, v) in enumerate(d.fields):
            key = QTableWidgetItem(k)
            key.setForeground(self.palette().placeholderText())
            self.fields.setItem(i, 0, key)
            self.fields.setItem(i, 1, QTableWidgetItem(v))
        self.fields.resizeRowsToContents()
        self.deps_label.setText("Dependencies: finding\u2026" if ref.table in ("instructions", "dma")
                                else "Dependencies: only instructions and DMA have flows")

    def show_dependencies(self, ref: EventRef, deps: list[Dependency]) -> None:
        """The shown event's dependencies arrived (ignored if another event is shown by now)."""
        d = self.details
        if d is None or d.ref != ref:
            return
        d.dependencies = deps
        self.deps.clear()
        waits = sum(1 for x in deps if x.direction == "waits for")
        self.deps_label.setText(f"Dependencies: waits for {waits}, unblocks {len(deps) - waits} (click to jump)")
        for dep in deps:
            arrow = "\u2190" if dep.direction == "waits for" else "\u2192"
            item = QListWidgetItem(f"{arrow} {dep.direction} ({dep.kind}): {dep.label}")
            item.setData(Qt.UserRole, dep.ref)
            if dep.ref is None:
                item.setFlags(item.flags() & ~Qt.ItemIsEnabled)
            self.deps.addItem(item)

    def field(self, name: str) -> str | None:
        """The shown value of a field (for tests and scripting)."""
        for i in range(self.fields.rowCount()):
            if self.fields.item(i, 0).text() == name:
                return self.fields.item(i, 1).text()
        return None

    def _clicked(self, item: QListWidgetItem) -> None:
        ref = item.data(Qt.UserRole)
        if ref is not None:
            self.jump_requested.emit(ref)
