"""QtSearchBar: find events by name (or #id) or by fields, and step through the hits.

Plain words search names (`explorer.model.timeline.search`); fields and comparisons
(`opcode:MultiplyMoving dtype:fp8 dur>10us kernel:matmul_* chip:3`) go to
`explorer.model.timeline.field_search`. Big traces are searched on the tools' worker,
so typing never blocks the window; `hits_changed` tells the timeline to outline them.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from explorer.model.timeline.field_search import field_search, is_field_query
from explorer.model.timeline.search import SearchHits, search
from explorer.model.timeline.trace_index import EventRef, TraceIndex

SYNC_EVENTS = 250_000  # smaller traces are searched at once (a few ms); bigger ones off the GUI thread


def find(index: TraceIndex, text: str) -> SearchHits:
    """The hits of `text`: a field search when it names fields, else the plain name search."""
    return field_search(index, text) if is_field_query(text) else search(index, text)


class QtSearchBar(QWidget):
    """Enter searches (or goes to the next hit), Shift+Enter goes back; hits are
    ordered by time. Emits `hit_selected(EventRef)` for the timeline to highlight and
    `hits_changed(SearchHits | None)` when the set of hits changes."""

    hit_selected = Signal(object)
    hits_changed = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.index: TraceIndex | None = None
        self.hits: SearchHits | None = None
        self.current: tuple[int, int] | None = None  # (start, track) of the current hit
        self.searching: str | None = None  # the query being searched off the GUI thread
        self._pending_step = 0
        self.edit = QLineEdit()
        self.edit.setObjectName("search")
        self.edit.setPlaceholderText("Search names or #id, or fields: opcode:X dtype:fp8 dur>10us kernel:matmul_* chip:3  (/)")
        self.edit.setToolTip("Words match names (opcode, kernel, op, layer); fields narrow: name opcode dtype kernel op layer "
                             "kind src dst engine type chip core track_id id dur start bytes flops partitions opdur opstart. key:a,b lists, * and ? are "
                             "wildcards, dur>10us / bytes>=64KiB compare, -key:x excludes. Enter: next hit, Shift+Enter: previous.")
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
        had = self.hits is not None
        self.hits = None
        self.current = None
        self.status.setText("")
        self.status.setToolTip("")
        if had:
            self.hits_changed.emit(None)

    def run(self, text: str) -> None:
        """Search `text` now and go to the first hit."""
        self.edit.setText(text)
        self.step(1)

    def _set_hits(self, hits: SearchHits) -> None:
        self.hits = hits
        self.current = None
        self.hits_changed.emit(hits)

    def _error(self, message: str) -> None:
        self.status.setText("bad search")
        self.status.setToolTip(message)
        self.status.setStyleSheet("color: #e06c75")

    def step(self, direction: int) -> EventRef | None:
        """Go to the next (1) or previous (-1) hit, searching first when the text changed."""
        from simcore.errors import UserError

        if self.index is None:
            return None
        text = self.edit.text().strip()
        self.status.setStyleSheet("")
        if self.hits is None or self.hits.query != text:
            if not text:
                self._changed()
                return None
            if self.index.event_count > SYNC_EVENTS:
                self._search_in_background(text, direction)
                return None
            try:
                self._set_hits(find(self.index, text))
            except UserError as exc:
                self._error(str(exc))
                return None
        return self._go(direction)

    def _search_in_background(self, text: str, direction: int) -> None:
        from explorer.ui.tools.background import run_tool

        self._pending_step = direction
        if self.searching == text:
            return
        self.searching = text
        self.status.setText("searching\u2026")
        index = self.index
        run_tool(lambda: find(index, text), lambda ok, value: self._searched(index, text, ok, value))

    def _searched(self, index: TraceIndex, text: str, ok: bool, value) -> None:
        if self.searching == text:
            self.searching = None
        if index is not self.index or text != self.edit.text().strip():
            return  # the trace or the text changed meanwhile
        if not ok:
            self._error(value)
            return
        self._set_hits(value)
        self._go(self._pending_step or 1)

    def _go(self, direction: int) -> EventRef | None:
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
