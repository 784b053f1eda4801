"""A read-only, sortable Qt table over a pandas DataFrame, with per-column formatting.

The analysis panels (kernel details, dependencies, compare) show model tables as
they are; this model only formats them: `Column(key, header, fmt, tip)` picks a
DataFrame column, the text a person reads and the tooltip explaining it. Sorting
(header click) sorts by the raw values, not the text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from explorer.model.units import format_bytes, format_count, format_ns, format_rate_gbps
from explorer.ui import roles as R
from explorer.ui.text_cells import TextCells
from explorer.ui.worker import soon


_ROLES = frozenset((R.DISPLAY, R.USER, R.TOOLTIP, R.FOREGROUND, R.ALIGNMENT))  # the roles a frame table answers


def natural_key(v: Any) -> tuple:
    """Text with its digit runs as numbers ("layer 2" before "layer 10"); missing last."""
    if _missing(v):
        return ((2, 0, ""),)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", str(v)) if p)


def _alignment(v: Any) -> int:
    """Numbers to the right, text to the left."""
    return R.ALIGN_RIGHT if isinstance(v, (int, float)) and not isinstance(v, bool) else R.ALIGN_LEFT


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def text(v: Any) -> str:
    return "" if _missing(v) else str(v)


def ns(v: Any) -> str:
    return "" if _missing(v) else format_ns(v)


def signed_ns(v: Any) -> str:
    return "" if _missing(v) else ("+" if v > 0 else "") + format_ns(v)


def nbytes(v: Any) -> str:
    return "" if _missing(v) else format_bytes(v)


def count(v: Any) -> str:
    return "" if _missing(v) else f"{int(v):,}"


def flops(v: Any) -> str:
    return "" if _missing(v) else (f"{format_count(v)}FLOP" if abs(v) >= 1000 else f"{v:.0f} FLOP")


def percent(v: Any) -> str:
    return "" if _missing(v) else f"{v:.3g} %"


def signed_percent(v: Any) -> str:
    return "" if _missing(v) else f"{v:+.3g} pp"


def ratio(v: Any) -> str:
    return "" if _missing(v) else f"{v:.3g}x"


def gbps(v: Any) -> str:
    return "" if _missing(v) else format_rate_gbps(v)


def number(v: Any) -> str:
    return "" if _missing(v) else f"{v:.4g}"


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    fmt: Callable[[Any], str] = text
    tip: str = ""
    colour: Callable[[dict[str, Any]], QColor | None] | None = None
    cell_tip: str = ""  # a record key whose text is the cell's own tooltip (e.g. why a delta is flagged)


@dataclass(frozen=True)
class TableRows:
    """A DataFrame as a `FrameTableModel` shows it (index reset, one dict per row): made by
    `table_rows` on a worker, so showing a result costs the GUI thread no pandas work."""

    frame: pd.DataFrame
    records: list[dict[str, Any]]


def table_rows(frame: pd.DataFrame | None) -> TableRows:
    f = frame.reset_index(drop=True) if frame is not None else pd.DataFrame()
    return TableRows(f, f.to_dict("records"))


class FrameTableModel(QAbstractTableModel):
    """Rows of a DataFrame, formatted per `Column`; `Qt.UserRole` gives the raw value."""

    def __init__(self, columns: Sequence[Column], parent=None) -> None:
        super().__init__(parent)
        self.columns = list(columns)
        self.frame = pd.DataFrame()
        self.records: list[dict[str, Any]] = []

    def set_frame(self, frame: pd.DataFrame | TableRows | None) -> None:
        rows = frame if isinstance(frame, TableRows) else table_rows(frame)
        self.beginResetModel()
        self.frame, self.records = rows.frame, rows.records
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.records)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return len(self.columns)

    def data(self, index: QModelIndex, role: int = R.DISPLAY) -> Any:
        if role not in _ROLES or not index.isValid():  # (a repaint or a fit asks ~7 roles of each cell)
            return None
        col = self.columns[index.column()]
        rec = self.records[index.row()]
        v = rec.get(col.key)
        if role == R.DISPLAY:
            return col.fmt(v)
        if role == R.USER:
            return None if _missing(v) else v
        if role == R.TOOLTIP:
            own = rec.get(col.cell_tip) if col.cell_tip else None
            return own or col.tip or None
        if role == R.FOREGROUND and col.colour is not None:
            return col.colour(rec)
        if role == R.ALIGNMENT:
            return _alignment(v)
        return None

    def cell(self, index: QModelIndex) -> tuple[str, int, QColor | None]:
        """A cell's text, alignment and foreground in one call (what `text_cells.TextCells` paints)."""
        col = self.columns[index.column()]
        rec = self.records[index.row()]
        v = rec.get(col.key)
        return col.fmt(v), _alignment(v), None if col.colour is None else col.colour(rec)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = R.DISPLAY) -> Any:  # noqa: N802
        if orientation != R.HORIZONTAL or not 0 <= section < len(self.columns):
            return None
        if role == R.DISPLAY:
            return self.columns[section].header
        if role == R.TOOLTIP:
            return self.columns[section].tip or None
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.AscendingOrder) -> None:
        if not 0 <= column < len(self.columns) or self.frame.empty:
            return
        key = self.columns[column].key
        if key not in self.frame.columns:
            return
        self.layoutAboutToBeChanged.emit()
        text = self.frame[key].dtype == object
        self.frame = self.frame.sort_values(key, ascending=order == Qt.AscendingOrder, kind="stable",
                                            na_position="last",
                                            key=(lambda c: c.map(natural_key)) if text else None).reset_index(drop=True)
        self.records = self.frame.to_dict("records")
        self.layoutChanged.emit()

    def record(self, row: int) -> dict[str, Any]:
        return self.records[row]

    def cell_text(self, row: int, key: str) -> str:
        """The shown text of a cell by column key (tests, scripting)."""
        col = next(c for c in self.columns if c.key == key)
        return col.fmt(self.records[row].get(col.key))

    def find(self, key: str, value: Any) -> int:
        """The first row whose column `key` equals `value`, -1 if none."""
        return next((i for i, r in enumerate(self.records) if r.get(key) == value), -1)


def make_table(model: FrameTableModel, name: str, parent: QWidget | None = None, *, sortable: bool = True) -> QTableView:
    """A compact read-only table view over `model`."""
    view = _Table(parent)
    view.setObjectName(name)
    view.setModel(model)
    view.setItemDelegate(TextCells(model.cell, view))  # (one model call a cell, texts laid out once)
    view.setSelectionBehavior(QAbstractItemView.SelectRows)
    view.setSelectionMode(QAbstractItemView.SingleSelection)
    view.setEditTriggers(QAbstractItemView.NoEditTriggers)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(20)
    view.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
    view.horizontalHeader().setStretchLastSection(True)
    if sortable:
        view.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)
        view.setSortingEnabled(True)
    view.horizontalHeader().setResizeContentsPrecision(50)  # fit to the first rows, not all of them
    view.fitter = _Fitter(view)
    model.modelReset.connect(view.fitter.reset)  # (the connection ends with the view)
    return view


class _Table(QTableView):
    """A frame table's view: tells its fitter when it is shown (a table behind a tab is fitted then)."""

    fitter: _Fitter

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self.fitter.shown()


class _Fitter(QObject):
    """Fits a table's columns to new rows in later passes of the event loop, one column measured
    per pass and every width set at once after the last, however many resets came first.

    Measuring 50 rows of every column in one go took 10-60 ms of the GUI thread a table at 28M
    events (three tables per selection in the dependencies panel, three in kernel details), and a
    hidden table (behind a tab) is measured on every row, Qt's precision notwithstanding: so a
    hidden table is fitted when it is shown.
    """

    def __init__(self, view: QTableView) -> None:
        super().__init__(view)
        self.view = view
        self.pending = False  # a step is queued
        self.stale = False  # rows came that the widths do not fit yet
        self.todo: list[int] | None = None  # columns left to measure (None: start over)
        self.widths: dict[int, int] = {}

    def reset(self) -> None:
        self.stale, self.todo = True, None
        self._queue()

    def shown(self) -> None:
        if self.stale:
            self._queue()

    def _queue(self) -> None:
        if not self.pending:
            self.pending = True
            soon(self._step)

    def _step(self) -> None:
        self.pending = False
        view = self.view
        if not self.stale or not view.isVisible():
            return  # (hidden: `shown` comes back)
        header = view.horizontalHeader()
        if self.todo is None:
            n = header.count()
            last = max((c for c in range(n) if not header.isSectionHidden(c)), default=-1)
            stretched = last if header.stretchLastSection() else -1  # its width is the rest: nothing to fit
            self.todo = [c for c in range(n) if not header.isSectionHidden(c) and c != stretched]
            self.widths = {}
        if self.todo:  # one column per pass (as QTableView.resizeColumnToContents measures it)
            c = self.todo.pop(0)
            self.widths[c] = max(view.sizeHintForColumn(c), header.sectionSizeHint(c) if not header.isHidden() else 0)
        if self.todo:
            self._queue()
            return
        self.stale, self.todo = False, None
        for c, width in self.widths.items():
            header.resizeSection(c, width)
