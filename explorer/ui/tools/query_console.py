"""QtQueryConsole (objectName `query-console`): SQL over the open trace, off the GUI thread.

The same `explorer.model.query.TraceQuery` as `trnx query`: each table a read-only
DuckDB view. Ctrl+Enter runs; the query runs on the tools' worker and Cancel
interrupts it; the result shows as a table (its first rows), and when it has start and
duration (or end) columns it can be pinned as a row above the timeline
(`QtQueryTracks`). Double-clicking a result row goes to its event (an `id` column) or
its interval. Saved queries live in the user's settings, by name.
"""

from __future__ import annotations

import json
import math
import time

import pyarrow as pa
from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox, QHBoxLayout, QInputDialog, QLabel, QPlainTextEdit, QPushButton, QToolButton, QVBoxLayout, QWidget,
)

from explorer.model.query import Intervals, TraceQuery, intervals_of
from explorer.model.query_track import QueryTrack
from explorer.model.units import plural
from explorer.ui.frame_table import Column, FrameTableModel, make_table, number, text
from explorer.ui.panes import fill, split, stack
from explorer.ui.tools.background import run_tool
from explorer.ui.tools.confirm import replace_ok

SHOWN_ROWS = 5000  # the table shows this many rows; the pinned track gets all of them
SAVED_KEY = "query/saved"
EXAMPLES = {
    "Slowest kernels": "SELECT name, start_ns, dur_ns, chip, core FROM kernels ORDER BY dur_ns DESC LIMIT 50",
    "Time per opcode": "SELECT opcode, count(*) AS n, sum(dur_ns) AS total_ns, avg(dur_ns) AS mean_ns\n"
                       "FROM instructions GROUP BY opcode ORDER BY total_ns DESC",
    "Collective waits": "SELECT kind, chip, arrive_ns AS start_ns, wait_ns AS dur_ns FROM collectives WHERE wait_ns > 0",
}


def _fmt(t: pa.DataType):
    return number if pa.types.is_floating(t) else text


class QtQueryConsole(QWidget):
    """An SQL editor, Run/Cancel, saved queries, a results table and "Pin as track"."""

    pin_requested = Signal(object)  # QueryTrack
    event_requested = Signal(int)  # an instructions/dma id
    range_requested = Signal(float, float)

    def __init__(self, settings: QSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("query-console")
        self.settings = settings
        self.trace = None  # simcore Trace of the open trace
        self._query: TraceQuery | None = None
        self._query_trace = None
        self._running = False
        self._started = 0.0
        self.result: pa.Table | None = None
        self.intervals: Intervals | None = None
        self.last_sql = ""
        self._generation = 0  # bumped per trace: a result that arrives after the trace changed is dropped

        self.saved = QComboBox(objectName="query-saved")
        self.saved.setToolTip("Saved queries (yours, kept between runs) and examples")
        self.saved.activated.connect(self._load_saved)
        self.save_button = QToolButton(text="Save\u2026", objectName="query-save")
        self.save_button.clicked.connect(self.ask_save)
        self.delete_button = QToolButton(text="Delete", objectName="query-delete")
        self.delete_button.clicked.connect(self.delete_current)
        self.run_button = QPushButton("Run", objectName="query-run")
        self.run_button.setToolTip("Run the query (Ctrl+Enter)")
        self.run_button.clicked.connect(lambda: self.run())  # not run(checked): clicked's bool is no SQL
        self.cancel_button = QPushButton("Cancel", objectName="query-cancel", enabled=False)
        self.cancel_button.clicked.connect(self.cancel)
        self.pin_button = QPushButton("Pin as track", objectName="query-pin", enabled=False)
        self.pin_button.setToolTip("Show the result's intervals as a row above the timeline (needs start and duration or end columns)")
        self.pin_button.clicked.connect(self.pin)

        self.editor = QPlainTextEdit(objectName="query-editor")
        mono = QFont("monospace")
        mono.setStyleHint(QFont.Monospace)
        self.editor.setFont(mono)
        self.editor.setPlaceholderText("SELECT opcode, count(*), sum(dur_ns) FROM instructions GROUP BY 1 ORDER BY 3 DESC"
                                       "   -- tables: tracks, instructions, dma, kernels, ops, collectives, counters, flows")
        QShortcut(QKeySequence("Ctrl+Return"), self.editor, self.run, context=Qt.WidgetWithChildrenShortcut)
        QShortcut(QKeySequence("Ctrl+Enter"), self.editor, self.run, context=Qt.WidgetWithChildrenShortcut)
        self.status = QLabel("", objectName="query-status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.model = FrameTableModel([])
        self.table = make_table(self.model, "query-results")
        self.table.doubleClicked.connect(self._activated)

        self.saved.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.saved.setMinimumContentsLength(10)
        top = QHBoxLayout()
        top.addWidget(QLabel("Saved"))
        top.addWidget(self.saved, 1)
        top.addWidget(self.save_button)
        top.addWidget(self.delete_button)
        buttons = QVBoxLayout()
        for b in (self.run_button, self.cancel_button, self.pin_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        editing = stack(self.editor, buttons, horizontal=True, stretch_first=True)
        fill(self, top, split(Qt.Vertical, editing, stack(self.status, self.table), stretch=(0, 3)))
        self._fill_saved()

    # -- trace -------------------------------------------------------------------------
    def set_trace(self, trace) -> None:
        """Query this trace (a `simcore.trace.Trace`, or None). A query still running over the
        previous trace is interrupted and its result dropped: its rows (and a pinned track of
        them) would otherwise show under the new trace."""
        if self._running:
            self.cancel()
        self._generation += 1
        self._running = False
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.trace = trace
        self.result = None
        self.intervals = None
        self.model.columns = []
        self.model.set_frame(None)
        self.pin_button.setEnabled(False)
        self.status.setText("")

    # -- running -----------------------------------------------------------------------
    def run(self, sql: str | None = None) -> None:
        """Run `sql` (default: the editor's text) off the GUI thread."""
        if sql is not None:
            self.editor.setPlainText(sql)
        sql = self.editor.toPlainText()
        if self.trace is None:
            self._show_error("open a trace first: queries run over its tables.")
            return
        if self._running:
            return
        self._running = True
        self.last_sql = sql
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.status.setStyleSheet("")
        self.status.setText("running\u2026")
        self._started = time.perf_counter()
        trace = self.trace
        generation = self._generation

        def work() -> tuple[pa.Table, Intervals | None]:
            if self._query is None or self._query_trace is not trace:
                if self._query is not None:
                    self._query.close()
                self._query, self._query_trace = TraceQuery(trace), trace
            table = self._query.run(sql)
            return table, intervals_of(table)

        run_tool(work, lambda ok, value: self._done(ok, value) if generation == self._generation else None)

    def cancel(self) -> None:
        if self._running and self._query is not None:
            self._query.interrupt()

    def _done(self, ok: bool, value) -> None:
        self._running = False
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        if not ok:
            self._show_error(value)
            return
        table, where = value
        ms = (time.perf_counter() - self._started) * 1e3
        self.result, self.intervals = table, where
        shown = table.slice(0, SHOWN_ROWS)
        self.model.columns = [Column(f.name, f.name, _fmt(f.type)) for f in shown.schema]
        self.model.set_frame(shown.to_pandas())
        more = f" (showing the first {SHOWN_ROWS:,})" if table.num_rows > SHOWN_ROWS else ""
        hint = "; Pin as track shows its intervals on the timeline" if where else ""
        self.status.setText(f"{plural(table.num_rows, 'row')} in {ms:,.0f} ms{more}{hint}")
        self.pin_button.setEnabled(where is not None)

    def _show_error(self, message: str) -> None:
        self.status.setStyleSheet("color: #e06c75")
        self.status.setText(message)

    # -- results -----------------------------------------------------------------------
    def pin(self) -> QueryTrack | None:
        """Pin the current result as a track (named after its saved query, else its first words)."""
        if self.result is None or self.intervals is None:
            return None
        name = self.saved.currentText() if self._saved_sql().get(self.saved.currentText()) == self.last_sql else ""
        name = name or " ".join(self.last_sql.split())[:40]
        track = QueryTrack.from_result(name, self.result, self.intervals)
        if track is not None:
            self.pin_requested.emit(track)
        return track

    def _activated(self, index) -> None:
        rec = {k: _value(v) for k, v in self.model.record(index.row()).items()}
        if rec.get("id") is not None:
            self.event_requested.emit(int(rec["id"]))
        elif self.intervals is not None:
            w = self.intervals
            s = rec.get(w.start)
            e = rec.get(w.end) if w.end else (s + rec.get(w.duration) if s is not None and rec.get(w.duration) is not None else None)
            if s is not None and e is not None:
                pad = max((e - s) * 0.25, 50.0)
                self.range_requested.emit(float(s) - pad, float(e) + pad)

    # -- saved queries -----------------------------------------------------------------
    def _store(self) -> QSettings:
        from explorer.ui.recent import settings

        return self.settings or settings()

    def _saved_sql(self) -> dict[str, str]:
        return {**EXAMPLES, **self._user_saved()}

    def _user_saved(self) -> dict[str, str]:
        raw = self._store().value(SAVED_KEY, "")
        try:
            saved = json.loads(raw) if raw else {}
        except (TypeError, json.JSONDecodeError):
            saved = {}
        return {str(k): str(v) for k, v in saved.items()} if isinstance(saved, dict) else {}

    def _fill_saved(self, current: str = "") -> None:
        self.saved.blockSignals(True)
        self.saved.clear()
        self.saved.addItem("")  # nothing chosen: the editor holds an unsaved query
        self.saved.addItems(sorted(self._saved_sql()))
        if current:
            self.saved.setCurrentText(current)
        self.saved.blockSignals(False)

    def _load_saved(self, _i: int = 0) -> None:
        sql = self._saved_sql().get(self.saved.currentText())
        if sql is not None:
            self.editor.setPlainText(sql)

    def save_as(self, name: str, overwrite: bool = False) -> bool:
        """Save the editor's query under `name`; one of yours of that name is replaced only with
        `overwrite` (False returned: nothing saved)."""
        name = name.strip()
        if not name:
            return False
        saved = self._user_saved()
        if name in saved and not overwrite:
            return False
        saved[name] = self.editor.toPlainText()
        store = self._store()
        store.setValue(SAVED_KEY, json.dumps(saved))
        store.sync()
        self._fill_saved(name)
        return True

    def ask_save(self) -> None:
        """Ask for a name; one of your saved queries of that name is replaced only if you say so."""
        name, ok = QInputDialog.getText(self, "Save query", "Name:", text=self.saved.currentText())
        name = name.strip()
        if not ok or not name:
            return
        overwrite = name in self._user_saved()
        if overwrite and not replace_ok(self, "saved query", name):
            return
        self.save_as(name, overwrite)

    def delete_current(self) -> None:
        saved = self._user_saved()
        if saved.pop(self.saved.currentText(), None) is not None:
            store = self._store()
            store.setValue(SAVED_KEY, json.dumps(saved))
            store.sync()
            self._fill_saved()

    def saved_names(self) -> list[str]:
        return [self.saved.itemText(i) for i in range(self.saved.count())]


def _value(v):
    """A result cell as a number or None: SQL NULL arrives as None or NaN (an outer join's id)."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v
