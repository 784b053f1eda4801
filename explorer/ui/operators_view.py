"""QtOperators (objectName `operators`): the model -> layer -> op -> kernel -> instruction tree.

`OperatorTreeModel` is a lazy `QAbstractItemModel` over `explorer.model.analysis.hierarchy.
Hierarchy`: a node's children are asked for (`Hierarchy.children`) only when it is
expanded, and handed to the view in chunks (`canFetchMore`/`fetchMore`), so a
kernel with a million instructions costs nothing until it is opened and then only
what is scrolled to. Sorting and filtering happen in the model, on each node's
whole child table (pandas), so they are right for rows not yet fetched too.
Double-click (or Enter) zooms the timeline to a row; the timeline's selection
selects the matching row (`select_node`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QHBoxLayout, QLabel, QLineEdit, QTreeView, QVBoxLayout, QWidget,
)

from explorer.model.analysis.hierarchy import COLUMN_DOCS, ROW_COLUMNS, Hierarchy, filter_closure
from explorer.model.analysis.metrics import format_metric
from explorer.model.units import format_bytes, format_ns, format_rate_gbps
from explorer.ui import roles as R
from explorer.ui.operator_columns import OperatorColumns, significant
from explorer.ui.selection_worker import latest
from explorer.ui.text_cells import TextCells
from explorer.ui.themes import current_theme
from explorer.ui.worker import after_repaint
from simcore.errors import UserError

CHUNK = 500  # children handed to the view per fetchMore
KERNEL_ROWS_KEPT = 8  # kernels whose event rows stay read (a re-sort or re-filter does not read them again)
AUTO_EXPAND_MATCHES = 60  # a filter expands the path to at most this many matching rows
# Following the timeline to an event further down its kernel than this selects the kernel's row
# instead: Qt lays out every row before the one shown, ~20 us each (a 28k-row kernel: ~300 ms).
MAX_ROWS_BEFORE = 1000

# (key, header): key is a Hierarchy row column, or "where" (chip.core)
COLUMNS: tuple[tuple[str, str], ...] = (
    ("name", "name"), ("level", "level"), ("dur_ns", "time"), ("share_percent", "share"),
    ("flops", "FLOPs"), ("hbm_bytes", "bytes"), ("tflops", "TFLOPS"), ("gbps", "GB/s"),
    ("arithmetic_intensity", "intensity"), ("mfu_percent", "MFU"), ("mfu_bf16_percent", "MFU bf16"),
    ("mbu_percent", "MBU"), ("roofline_percent", "roofline"),
    ("bound", "bound"), ("dtype", "dtype"), ("where", "chip.core"),
    ("start_ns", "start"), ("instruction_count", "instructions"),
)
COLUMN_KEYS = tuple(k for k, _ in COLUMNS)
TEXT_COLUMNS = {"name", "level", "bound", "dtype", "where"}
PERCENT_COLUMNS = {"mfu_percent", "mfu_bf16_percent", "mbu_percent", "roofline_percent"}
_ALIGNMENTS = tuple(R.ALIGN_LEFT if k in TEXT_COLUMNS else R.ALIGN_RIGHT for k in COLUMN_KEYS)
_ROLES = frozenset((R.DISPLAY, R.USER, R.ALIGNMENT, R.FOREGROUND, R.TOOLTIP))  # the roles the tree answers
# per theme: the dark theme's pastel text is unreadable on white, the light theme's dark on black
_BOUND_COLOURS = {
    "dark": {"compute": "#61afef", "hbm": "#e5c07b", "dma_latency": "#e06c75", "collective": "#c678dd",
             "unknown": "#7f848e"},
    "light": {"compute": "#1f5fbf", "hbm": "#9a6700", "dma_latency": "#c0392b", "collective": "#8250df",
              "unknown": "#57606a"},
}
_LEVEL_COLOURS = {
    "dark": {"model": "#e6e6e6", "layer": "#d7dae0", "op": "#c8ccd4", "kernel": "#98c379", "instruction": "#abb2bf"},
    "light": {"model": "#1f2328", "layer": "#24292f", "op": "#32383f", "kernel": "#1a7f37", "instruction": "#57606a"},
}


class _ThemeColours:
    """name -> QColor in the current theme's colours (explorer.ui.themes), looked up at paint time."""

    def __init__(self, table: dict[str, dict[str, str]]) -> None:
        self.table = {theme: {k: QColor(v) for k, v in colours.items()} for theme, colours in table.items()}

    def _now(self) -> dict[str, QColor]:
        # (imported at the top: an import statement here ran shiboken's import hook on every
        # call, ~2 ms of each repaint of the operator tree)
        return self.table.get(current_theme(), self.table["dark"])

    def get(self, key: str, default: QColor | None = None) -> QColor | None:
        return self._now().get(key, default)

    def __getitem__(self, key: str) -> QColor:
        return self._now()[key]


BOUND_COLOURS = _ThemeColours(_BOUND_COLOURS)
LEVEL_COLOURS = _ThemeColours(_LEVEL_COLOURS)


def _foreground(node: _Node, key: str) -> QColor | None:
    """A cell's text colour in the current theme: the bound's and the level's; None: the palette's."""
    if key == "bound":
        return BOUND_COLOURS.get(node.get("bound"))
    if key == "name":
        return LEVEL_COLOURS.get(node.get("level"))
    return None


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def format_cell(key: str, row, origin: int) -> str:
    """The text of one cell: readable units, empty where the value does not apply."""
    if key == "where":
        return "" if row["chip"] < 0 else f"{row['chip']}.{row['core']}" if row["core"] >= 0 else f"{row['chip']}"
    v = row.get(key)
    if _nan(v):
        return ""
    if key == "dur_ns":
        return format_ns(v)
    if key == "start_ns":
        return format_ns(v - origin)
    if key == "share_percent":  # never "5.3e-06 %": a 53 ns instruction of a 1 s trace reads 0.000005 %
        text = f"{v:.2g}" if v < 0.1 else f"{v:.3g}"
        return f"{text} %" if "e" not in text else format_metric(v, "%")
    if key == "flops":
        return format_metric(v, "FLOP")
    if key == "hbm_bytes":
        return format_bytes(v)
    if key == "tflops":
        return significant(v)
    if key == "gbps":
        return format_rate_gbps(v)
    if key == "arithmetic_intensity":
        return f"{significant(v)} FLOP/B"
    if key == "instruction_count":
        return f"{int(v):,}"
    if key in PERCENT_COLUMNS:
        return f"{v:.1f} %" if abs(v) >= 0.1 or v == 0 else f"{v:.2f} %"
    return str(v)


class _Node:
    """One tree row. Its cells are read from its parent's child table (`cols`), not copied."""

    __slots__ = ("key", "parent", "row", "has_children", "frame", "cols", "positions", "children", "alive", "texts")

    def __init__(self, key: str, parent: _Node | None, row: int, has_children: bool) -> None:
        self.key = key
        self.parent = parent
        self.row = row  # its row in the parent's frame (children are materialised in frame order)
        self.has_children = has_children
        self.frame: pd.DataFrame | None = None  # every child row (filtered, sorted); None until expanded
        self.cols: dict[str, np.ndarray] | None = None  # the frame's columns, what children's cells read
        self.positions: dict[str, int] | None = None  # child key -> row in frame
        self.children: list[_Node] = []
        self.alive = True
        self.texts: list[str | None] | None = None  # its cells' text, formatted when first painted

    def get(self, column: str, default: Any = None) -> Any:
        p = self.parent
        col = None if p is None or p.cols is None else p.cols.get(column)
        return default if col is None else col[self.row]

    def __getitem__(self, column: str) -> Any:
        return self.get(column)

    @property
    def values(self) -> dict[str, Any]:
        """The row as plain Python values (ROW_COLUMNS)."""
        return {c: (v.item() if hasattr(v, "item") else v) for c in ROW_COLUMNS for v in (self.get(c),)}


def sorted_rows(frame: pd.DataFrame, sort_key: str | None, ascending: bool) -> pd.DataFrame:
    """A node's child rows in the tree's order (`sort_key` None: as the hierarchy gives them)."""
    if sort_key is None or frame.empty:
        return frame.reset_index(drop=True)
    by = ["chip", "core"] if sort_key == "where" else [sort_key]
    return frame.sort_values(by, ascending=ascending, kind="stable", na_position="last").reset_index(drop=True)


@dataclass(frozen=True)
class KernelTable:
    """A kernel's event rows as the tree reads them -- in an order, as arrays, key -> row -- made
    on the selection's worker with the rows (for a 28k-row kernel, ~30 ms the GUI thread spared)."""

    order: tuple[str | None, bool]  # (sort key, ascending)
    frame: pd.DataFrame
    cols: dict[str, np.ndarray]
    positions: dict[str, int]


def frame_columns(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """A child table's columns as arrays: what its rows' cells read (`_Node.get`)."""
    return {c: frame[c].to_numpy() for c in frame.columns}


def frame_positions(frame: pd.DataFrame) -> dict[str, int]:
    """A child table's node key -> row: how a node is found among its parent's rows."""
    return dict(zip(frame["node"].tolist(), range(len(frame))))


def kernel_table(frame: pd.DataFrame, sort_key: str | None, ascending: bool) -> KernelTable:
    f = sorted_rows(frame, sort_key, ascending)
    return KernelTable((sort_key, ascending), f, frame_columns(f), frame_positions(f))


class OperatorTreeModel(QAbstractItemModel):
    """The operator tree as a lazy Qt item model (see the module docstring)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.h: Hierarchy | None = None
        self.origin = 0
        self.root = _Node("", None, 0, True)
        self.sort_key: str | None = None
        self.ascending = True
        self.shown: set[str] | None = None  # filter: op/kernel nodes to show (None: all)
        self.matches: list[str] = []
        self._kernel_events: dict[int, int] = {}
        self._kernel_rows: dict[str, pd.DataFrame] = {}  # "kernel:K" -> Hierarchy.children, newest last
        self._kernel_tables: dict[str, KernelTable] = {}  # "kernel:K" -> its rows as the tree reads them
        # while `select_node` expands to a node whose rows `index_for` has handed over: Qt, laying
        # out a row it expands, fetches a chunk more when it may, and rows inserted under an
        # expanded row make it lay the whole tree out again at once (every expanded row, a Python
        # call or two each); scrolling to the end of what is there fetches more as ever
        self.fetch_held = False

    # -- data ------------------------------------------------------------------------
    def set_hierarchy(self, h: Hierarchy | None) -> None:
        self.beginResetModel()
        self.h = h
        self.root = _Node("", None, 0, h is not None)
        self.shown, self.matches = None, []
        self._kernel_events = {}
        self._kernel_rows = {}
        self._kernel_tables = {}
        if h is not None:
            self.origin = int(h.trace.span_ns[0])
            k = h.kernels
            self._kernel_events = dict(zip(k["kernel_id"].tolist(),
                                           (k["instruction_count"] + k["dma_count"]).tolist()))
        self.endResetModel()

    def kernel_to_read(self, key: str) -> str | None:
        """The kernel whose event rows showing `key` would read (tens of ms at 28M events), or None."""
        if self.h is None or key.partition(":")[0] not in ("instruction", "dma"):
            return None
        try:
            kernel = next((k for k in self.h.ancestors(key) if k.startswith("kernel:")), None)
        except UserError:
            return None
        return None if kernel is None or kernel in self._kernel_rows else kernel

    def keep_kernel_rows(self, h: Hierarchy, kernel: str, frame: pd.DataFrame, table: KernelTable | None = None) -> None:
        """Rows under `kernel` read off the GUI thread (ignored if the tree shows another trace by now),
        with `table`, the tree's table of them in some order, if that was made there too."""
        if h is self.h:
            self._kernel_rows.pop(kernel, None)
            self._kernel_rows[kernel] = frame
            self._kernel_tables.pop(kernel, None)
            if table is not None:
                self._kernel_tables[kernel] = table
            while len(self._kernel_rows) > KERNEL_ROWS_KEPT:
                gone = next(iter(self._kernel_rows))
                self._kernel_rows.pop(gone)
                self._kernel_tables.pop(gone, None)

    def _children(self, key: str) -> pd.DataFrame:
        if not key.startswith("kernel:"):
            return self.h.children(key)
        frame = self._kernel_rows.get(key)
        if frame is None:
            frame = self.h.children(key)
            self.keep_kernel_rows(self.h, key, frame)
        return frame

    def _child_frame(self, node: _Node) -> pd.DataFrame:
        frame = self._children(node.key)
        if self.shown is not None and node.get("level") != "kernel":
            shown = self.shown  # (a set lookup per child: children tables are small, Series.isin is not)
            frame = frame[np.fromiter((k in shown for k in frame["node"].tolist()), bool, len(frame))]
        return self._sorted(frame)

    def _sorted(self, frame: pd.DataFrame) -> pd.DataFrame:
        return sorted_rows(frame, self.sort_key, self.ascending)

    def _set_frame(self, node: _Node, frame: pd.DataFrame, cols: dict[str, np.ndarray] | None = None,
                   positions: dict[str, int] | None = None) -> None:
        """Give a node its child table and what its rows read: the columns as arrays and key -> row
        (found on first use when not given, see `index_for`). `cols` and `positions` given were
        derived from `frame` already (a kernel's table, made on the worker with its rows). The same
        table again (a kernel's events under a new filter) keeps what was derived from it."""
        if frame is node.frame and cols is None:
            return
        node.frame = frame
        node.cols = frame_columns(frame) if cols is None else cols
        node.positions = positions

    def _ensure_frame(self, node: _Node) -> None:
        if node.frame is not None:
            return
        table = self._kernel_tables.get(node.key)
        if table is not None and table.order == (self.sort_key, self.ascending):  # made on the worker with the rows
            self._set_frame(node, table.frame, table.cols, table.positions)
        elif node.has_children:
            self._set_frame(node, self._child_frame(node))
        else:
            self._set_frame(node, pd.DataFrame(columns=list(ROW_COLUMNS)))

    def _make_nodes(self, node: _Node, lo: int, hi: int, reuse: dict[str, _Node] | None = None) -> list[_Node]:
        cols = node.cols
        keys, levels, ids = cols["node"][lo:hi].tolist(), cols["level"][lo:hi].tolist(), cols["id"][lo:hi].tolist()
        events = self._kernel_events
        out = []
        for i, (key, level, ident) in enumerate(zip(keys, levels, ids), start=lo):
            old = reuse.get(key) if reuse else None
            if old is not None:
                old.row = i
                out.append(old)
            else:
                has = level != "instruction" and (level != "kernel" or events.get(int(ident), 0) > 0)
                out.append(_Node(key, node, i, has))
        return out

    def _index_of(self, node: _Node, column: int = 0) -> QModelIndex:
        return QModelIndex() if node is self.root else self.createIndex(node.row, column, node)

    def _materialize(self, node: _Node, count: int) -> None:
        """Hand the view up to `count` more children of `node`."""
        self._ensure_frame(node)
        lo = len(node.children)
        hi = min(lo + count, len(node.frame))
        if hi <= lo:
            return
        self.beginInsertRows(self._index_of(node), lo, hi - 1)
        node.children.extend(self._make_nodes(node, lo, hi))
        self.endInsertRows()

    def node(self, index: QModelIndex) -> _Node:
        return index.internalPointer() if index.isValid() else self.root

    # -- QAbstractItemModel ------------------------------------------------------------
    def index(self, row: int, column: int, parent: QModelIndex = QModelIndex()) -> QModelIndex:
        p = self.node(parent)
        if 0 <= row < len(p.children) and 0 <= column < len(COLUMNS):
            return self.createIndex(row, column, p.children[row])
        return QModelIndex()

    def parent(self, index: QModelIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        if not index.isValid():
            return QModelIndex()
        p = index.internalPointer().parent
        return QModelIndex() if p is None or p is self.root else self.createIndex(p.row, 0, p)

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self.node(parent).children)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return len(COLUMNS)

    def hasChildren(self, parent: QModelIndex = QModelIndex()) -> bool:  # noqa: N802
        if self.h is None:
            return False
        n = self.node(parent)
        if n.frame is not None:
            return len(n.frame) > 0
        return n.has_children

    def canFetchMore(self, parent: QModelIndex) -> bool:  # noqa: N802
        if self.h is None or self.fetch_held:
            return False
        n = self.node(parent)
        if n.frame is None:
            return n.has_children
        return len(n.children) < len(n.frame)

    def fetchMore(self, parent: QModelIndex) -> None:  # noqa: N802
        if self.h is not None:
            self._materialize(self.node(parent), CHUNK)

    def data(self, index: QModelIndex, role: int = R.DISPLAY) -> Any:
        # (the view paints through `cell`, one call a cell; Qt's delegate, for a size hint or an
        # export, asks ~7 roles of a cell: the roles the tree never sets return first, and a cell's
        # text is formatted once per node)
        if role not in _ROLES or not index.isValid():
            return None
        n: _Node = index.internalPointer()
        col = index.column()
        if role == R.DISPLAY:
            return self._text(n, col)
        if role == R.ALIGNMENT:
            return _ALIGNMENTS[col]
        key = COLUMN_KEYS[col]
        row = n
        if role == R.USER:
            return n.key
        if role == R.FOREGROUND:
            return _foreground(n, key)
        # R.TOOLTIP
        if key == "name":
            where = format_cell("where", row, self.origin)
            dtype = row.get("dtype")
            return (f"{row['name']} ({row['level']}, {row['kind']}) {n.key}" + (f" on chip.core {where}" if where else "")
                    + (f", {dtype}" if isinstance(dtype, str) and dtype else "")
                    + f"\n{format_ns(row['start_ns'] - self.origin)} \u2013 {format_ns(row['end_ns'] - self.origin)}"
                    "\ndouble-click: zoom the timeline to it")
        return COLUMN_DOCS.get(key if key != "where" else "core")

    def _text(self, n: _Node, col: int) -> str:
        """A cell's text, formatted once per node (on its first paint)."""
        texts = n.texts
        if texts is None:
            texts = n.texts = [None] * len(COLUMNS)
        text = texts[col]
        if text is None:
            text = texts[col] = format_cell(COLUMN_KEYS[col], n, self.origin)
        return text

    def cell(self, index: QModelIndex) -> tuple[str, int, QColor | None]:
        """A cell's text, alignment and foreground in one call (what `text_cells.TextCells` paints)."""
        n: _Node = index.internalPointer()
        col = index.column()
        return self._text(n, col), _ALIGNMENTS[col], _foreground(n, COLUMN_KEYS[col])

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = R.DISPLAY) -> Any:  # noqa: N802
        if orientation != R.HORIZONTAL or not 0 <= section < len(COLUMNS):
            return None
        key, label = COLUMNS[section]
        if role == R.DISPLAY:
            return label
        if role == R.TOOLTIP:
            return (f"{key}: {COLUMN_DOCS.get(key if key != 'where' else 'core', '')}\n"
                    "Right-click the header to show or hide columns; drag a header to move it.")
        if role == R.ALIGNMENT:
            return R.ALIGN_LEFT if key in TEXT_COLUMNS else R.ALIGN_RIGHT
        return None

    # (no `flags` override: QAbstractItemModel's is "enabled, selectable" for every valid index, and
    # a Python one was called twice per row on every layout: 20k calls to expand a 5k-instruction kernel)

    # -- sorting -----------------------------------------------------------------------
    def sort(self, column: int, order: Qt.SortOrder = Qt.AscendingOrder) -> None:
        """Sort every node's children (loaded or not) by a column; column -1: time order."""
        key = COLUMN_KEYS[column] if 0 <= column < len(COLUMNS) else None
        ascending = order == Qt.AscendingOrder
        if (key, ascending) == (self.sort_key, self.ascending) or self.h is None:
            self.sort_key, self.ascending = key, ascending
            return
        self.sort_key, self.ascending = key, ascending
        self._relayout(lambda node: self._sorted(node.frame))

    def _relayout(self, new_frame) -> None:
        """Replace loaded nodes' child tables, keeping nodes (and expansion) by key."""
        self.layoutAboutToBeChanged.emit()
        old = self.persistentIndexList()
        old_nodes = [(i.internalPointer() if i.isValid() else None, i.column()) for i in old]
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.frame is None:
                continue
            count = len(node.children)
            if count == len(node.frame):  # fully loaded before: stay so (up to a chunk) if rows appear
                count = max(count, CHUNK)
            reuse = {c.key: c for c in node.children}
            self._set_frame(node, new_frame(node))
            node.children = self._make_nodes(node, 0, min(count, len(node.frame)), reuse)
            kept = {id(c) for c in node.children}
            for c in reuse.values():
                if id(c) not in kept:
                    self._kill(c)
            stack.extend(node.children)
        new = [self.createIndex(n.row, c, n) if n is not None and n.alive else QModelIndex() for n, c in old_nodes]
        self.changePersistentIndexList(old, new)
        self.layoutChanged.emit()

    def _kill(self, node: _Node) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            n.alive = False
            stack.extend(n.children)

    # -- filtering ---------------------------------------------------------------------
    def set_filter(self, text: str) -> int:
        """Show rows whose name, kind, bound, dtype or level contains `text`, with their
        ancestors and everything under them; returns the number of matching rows."""
        if self.h is None:
            return 0
        text = text.strip().lower()
        if not text:
            self.shown, self.matches = None, []
            self._relayout(self._refiltered)
            return 0
        self.shown, self.matches = filter_closure(self.h.rows(), text)
        self._relayout(self._refiltered)
        return len(self.matches)

    def _refiltered(self, node: _Node) -> pd.DataFrame:
        """A node's child table under the new filter (a kernel's events are never filtered: keep them)."""
        if node.get("level") == "kernel":
            return node.frame
        return self._child_frame(node)

    # -- finding a node ----------------------------------------------------------------
    def index_for(self, key: str, max_row: int | None = None) -> QModelIndex:
        """The index of a node, fetching its ancestors' children as needed (invalid if hidden).

        With `max_row`, a node further down its parent's rows than that and not fetched yet
        gives its parent's index instead: handing the view every row before it is what costs."""
        if self.h is None:
            return QModelIndex()
        try:
            path = self.h.ancestors(key)
        except UserError:
            return QModelIndex()
        cur = self.root
        for k in path:
            self._ensure_frame(cur)
            if cur.positions is None:
                cur.positions = frame_positions(cur.frame)
            pos = cur.positions.get(k)
            if pos is None:
                return QModelIndex()
            if max_row is not None and pos > max_row and pos >= len(cur.children):
                return self._index_of(cur)
            if pos >= len(cur.children):
                self._materialize(cur, pos + 1 - len(cur.children) + CHUNK // 2)
            cur = cur.children[pos]
        return self.createIndex(cur.row, 0, cur)

    def rows_for(self, keys: list[str]) -> pd.DataFrame:
        """The Hierarchy rows (ROW_COLUMNS) of some nodes, in the given order (for CSV export)."""
        recs = []
        for k in keys:
            idx = self.index_for(k)
            if idx.isValid():
                recs.append(idx.internalPointer().values)
        return pd.DataFrame.from_records(recs)


class QtOperators(QWidget):
    """The operator tree with a filter box. Emits `node_selected` and `node_activated` (double-click)."""

    node_selected = Signal(str)
    node_activated = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("operators")
        self.model = OperatorTreeModel(self)
        self.filter = QLineEdit()
        self.filter.setObjectName("operators-filter")
        self.filter.setPlaceholderText("filter by name, kind, bound (hbm, compute, \u2026) or dtype")
        self.filter.setToolTip("Shows matching model/layer/op/kernel rows, their parents and everything under them.")
        self.filter.setClearButtonEnabled(True)
        self.status = QLabel("")
        self.status.setObjectName("operators-status")
        self.view = QTreeView()
        self.view.setObjectName("operators-tree")
        self.view.setModel(self.model)
        # cells painted from the model's formatted texts, laid out once (Qt's delegate asked seven
        # roles a cell and shaped every text twice a repaint: 10-13 ms a jump at 1920x1080)
        self.view.setItemDelegate(TextCells(self.model.cell, self.view))
        self.view.setUniformRowHeights(True)
        self.view.setIndentation(14)  # five levels deep, an instruction's name still reads in the name column
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.view.setExpandsOnDoubleClick(False)  # double-click zooms the timeline
        self.view.setAllColumnsShowFocus(True)
        self.view.header().setSortIndicator(-1, Qt.AscendingOrder)
        self.view.setSortingEnabled(True)
        self.view.header().setSortIndicatorClearable(True)
        self.view.header().setStretchLastSection(False)
        self.columns = OperatorColumns(self.view, COLUMN_KEYS)  # widths, order, right-click to show/hide
        self.view.activated.connect(self._activated)
        self.view.selectionModel().currentRowChanged.connect(self._current_changed)
        self._rows = latest()  # a kernel's rows, read on the selection's worker
        self._wanted: str | None = None
        self._following: str | None = None  # the node a queued `follow` step will select
        self._filter_timer = QTimer(self, singleShot=True, interval=200)
        self._filter_timer.timeout.connect(self._apply_filter)
        self.filter.textChanged.connect(lambda _t: self._filter_timer.start())
        self.filter.returnPressed.connect(self._apply_filter)
        top = QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.status)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.view, 1)
        self._selecting = False
        self._status_before: str | None = None  # the status a "rows down" note replaced

    def set_hierarchy(self, h: Hierarchy | None) -> None:
        self.filter.blockSignals(True)
        self.filter.clear()
        self.filter.blockSignals(False)
        self.model.set_hierarchy(h)
        self._status_before = None
        self.status.setText("" if h is None else f"{len(h.rows()):,} ops and kernels")
        if h is not None:
            self.expand(QModelIndex())  # the top level, and the model's layers under it
            root = self.model.index(0, 0)
            if root.isValid():
                self.expand(root)

    def expand(self, idx: QModelIndex) -> None:
        """Expand a row with its first chunk of children already there (not on the next layout)."""
        if self.model.canFetchMore(idx) and self.model.rowCount(idx) == 0:
            self.model.fetchMore(idx)
        if idx.isValid():
            self.view.expand(idx)

    def current_node(self) -> str | None:
        idx = self.view.currentIndex()
        return self.model.data(idx, Qt.UserRole) if idx.isValid() else None

    def selected_nodes(self) -> list[str]:
        rows = self.view.selectionModel().selectedRows(0)
        return [self.model.data(i, Qt.UserRole) for i in rows]

    def follow(self, key: str) -> None:
        """`select_node_soon` in a later pass of the event loop than the caller's (a jump or a click
        elsewhere): expanding the tree to a node and repainting it cost 15-35 ms of the GUI thread at
        28M events, which on top of the jump's own repaint froze the window for their sum. A newer
        selection by then (a click in the tree, another jump) wins."""
        self._wanted = key
        if self._following is not None:
            self._following = key  # the step already queued takes the newest
            return
        self._following = key

        def step() -> None:
            key, self._following = self._following, None
            if key is not None and key == self._wanted and self.model.h is not None:
                self.select_node_soon(key)

        after_repaint(step)

    def select_node_soon(self, key: str) -> None:
        """`select_node`, after reading the rows under the node's kernel on the selection's worker
        when the tree has not read them yet (a jump to an instruction of a kernel never expanded)."""
        self._wanted = key
        h, kernel = self.model.h, self.model.kernel_to_read(key)
        if kernel is None:
            self._rows.cancel()
            self.select_node(key)
            return

        def read(ok: bool, value) -> None:
            if h is not self.model.h:
                return  # another trace by now
            if ok:
                self.model.keep_kernel_rows(h, kernel, *value)
            if key != self._wanted:
                return  # another selection by now: keep the rows, do not move the tree back
            if not ok:
                self.status.setText(value)
                return
            self.select_node(key)

        order = (self.model.sort_key, self.model.ascending)

        def work() -> tuple[pd.DataFrame, KernelTable]:
            frame = h.children(kernel)
            return frame, kernel_table(frame, *order)

        self._rows.submit(work, read)

    def select_node(self, key: str) -> bool:
        """Expand to a node and select it (the timeline's selection); False if it is filtered out."""
        self._wanted = key
        if key == self.current_node():
            return True
        idx = self.model.index_for(key, MAX_ROWS_BEFORE)
        if not idx.isValid() and self.model.shown is not None:
            self.filter.clear()
            self._apply_filter()
            idx = self.model.index_for(key, MAX_ROWS_BEFORE)
        if not idx.isValid():
            return False
        shown = self.model.data(idx, Qt.UserRole)
        if shown != key:  # too far down its kernel: the kernel's row stands for it, and says so
            if self._status_before is None:
                self._status_before = self.status.text()
            self.status.setText(f"{key}: more than {MAX_ROWS_BEFORE:,} rows down {shown}; expand it and scroll to list it")
        elif self._status_before is not None:
            self.status.setText(self._status_before)
            self._status_before = None
        p = idx.parent()
        chain = []
        while p.isValid():
            chain.append(p)
            p = p.parent()
        self._selecting = self.model.fetch_held = True  # (the rows up to it are there: see `fetch_held`)
        try:
            for p in reversed(chain):
                self.expand(p)
            self.view.setCurrentIndex(idx)
            self.view.scrollTo(idx, QAbstractItemView.PositionAtCenter)
        finally:
            self._selecting = self.model.fetch_held = False
        return True

    def _apply_filter(self) -> None:
        self._filter_timer.stop()
        self._status_before = None
        text = self.filter.text()
        n = self.model.set_filter(text)
        if not text.strip():
            self.status.setText("" if self.model.h is None else f"{len(self.model.h.rows()):,} ops and kernels")
            return
        self.status.setText(f"{n:,} match")
        for key in self.model.matches[:AUTO_EXPAND_MATCHES]:
            idx = self.model.index_for(key)
            p = idx.parent()
            chain = []
            while p.isValid():
                chain.append(QPersistentModelIndex(p))
                p = p.parent()
            for q in reversed(chain):
                self.expand(QModelIndex(q))

    def _activated(self, idx: QModelIndex) -> None:
        key = self.model.data(idx, Qt.UserRole)
        if key:
            self.node_activated.emit(key)

    def _current_changed(self, cur: QModelIndex, _prev: QModelIndex) -> None:
        key = self.model.data(cur, Qt.UserRole) if cur.isValid() else None
        if key and not self._selecting:
            self.node_selected.emit(key)
