"""QtSearchBar: find events by name (or #id) and step through the hits."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from explorer.model.timeline.search import SearchHits, search
from explorer.model.timeline.trace_index import EventRef, TraceIndex


class QtSearchBar(QWidget):
    """Enter searches (or goes to the next hit), Shift+Enter goes back; hits are
    ordered by time. Emits `hit_selected(EventRef)` for the timeline to highlight."""

    hit_selected = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.index: TraceIndex | None = None
        self.hits: SearchHits | None = None
        self.current: tuple[int, int] | None = None  # (start, track) of the current hit
        self.edit = QLineEdit()
        self.edit.setObjectName("search")
        self.edit.setPlaceholderText("Search opcode, kernel, op, layer or #id  (Ctrl+F)")
        self.edit.setClearButtonEnabled(True)
        self.edit.setMinimumWidth(320)
        self.edit.installEventFilter(self)
        self.edit.textChanged.connect(self._changed)
        self.prev = QToolButton(text="\u25b2", toolTip="Previous hit (Shift+Enter)")
        self.next = QToolButton(text="\u25bc", toolTip="Next hit (Enter)")
        self.prev.setObjectName("search-prev")
        self.next.setObjectName("search-next")
        self.prev.clicked.connect(lambda: self.step(-1))
        self.next.clicked.connect(lambda: self.step(1))
        self.status = QLabel("")
        self.status.setObjectName("search-status")
        self.status.setMinimumWidth(110)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.edit)
        lay.addWidget(self.prev)
        lay.addWidget(self.next)
        lay.addWidget(self.status)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        """Enter: next hit; Shift+Enter: previous hit."""
        if obj is self.edit and event.type() == QEvent.KeyPress and event.key() in (Qt.Key_Return, Qt.Key_Enter):
            self.step(-1 if event.modifiers() & Qt.ShiftModifier else 1)
            return True
        return super().eventFilter(obj, event)

    def set_index(self, index: TraceIndex | None) -> None:
        self.index = index
        self._changed()

    def _changed(self, *_: object) -> None:
        self.hits = None
        self.current = None
        self.status.setText("")

    def run(self, text: str) -> None:
        """Search `text` now and go to the first hit."""
        self.edit.setText(text)
        self.step(1)

    def step(self, direction: int) -> EventRef | None:
        if self.index is None:
            return None
        if self.hits is None or self.hits.query != self.edit.text().strip():
            self.hits = search(self.index, self.edit.text())
            self.current = None
            if not self.hits.query:
                self.status.setText("")
                return None
        got = self.hits.step(self.current, direction)
        if got is None:
            self.status.setText("no match")
            return None
        ref, rank = got
        start, _ = self.index.interval(ref)
        lane, _ = self.index.locate(ref)
        self.current = (start, lane.track.track_id)
        self.status.setText(f"{rank + 1:,} / {self.hits.count:,}")
        self.hit_selected.emit(ref)
        return ref
