"""The operator table's columns: readable headers at the dock's width, and the user's choice of columns.

Eighteen columns at fixed widths ran off the dock's edge (the bound and roofline columns, the
answers, were the ones out of sight). So each column is as wide as its header (sort arrow
included) or its widest usual value, whichever is wider; the answers come first; columns a
row's name or its tooltip already says (level, dtype, chip.core), that the bound and roofline
columns sum up (intensity) or that few need at a glance (start, instructions) start hidden, so the rest fit the dock of a 1920-pixel-wide window; the
name column takes what is left of the dock, never less than `MIN_NAME`, until the user
drags a divider. Right-click the header to show or hide any column (remembered between runs,
`SETTING`) or to restore the defaults; drag a header to reorder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject, QPoint, Qt
from PySide6.QtWidgets import QHeaderView, QMenu, QTreeView

from explorer.model.analysis.metrics import format_metric
from explorer.model.units import format_bytes, format_ns, format_rate_gbps
from explorer.ui.recent import settings as app_settings

SETTING = "operators/hidden_columns"
MIN_NAME = 160
MAX_NAME = 420
PADDING = 12  # cell margins either side of the text
# the order a column is shown in: answers first, the text columns beside each other (a left-aligned
# header right after a right-aligned one reads as one label); keys not listed follow in model order
VISUAL_ORDER = ("name", "bound", "dur_ns", "share_percent", "roofline_percent", "mfu_percent", "mfu_bf16_percent",
                "mbu_percent", "tflops", "gbps", "arithmetic_intensity", "flops", "hbm_bytes", "dtype", "where",
                "level", "start_ns", "instruction_count")
DEFAULT_HIDDEN = frozenset({"level", "dtype", "where", "start_ns", "instruction_count", "arithmetic_intensity"})


def significant(v: float) -> str:
    """3 significant digits without scientific notation below a million (2560, 195, 1.1): the
    TFLOPS and intensity cells (operators_view.format_cell)."""
    return f"{v:,.0f}" if 1000 <= abs(v) < 1e6 else f"{v:.3g}"


def _span(fmt: Callable[[float], str], lo: int, hi: int) -> list[str]:
    """`fmt` over 1.2345e{lo}..9.8765e{hi-1}: the texts a column of such values shows."""
    return [fmt(m * 10.0 ** k) for k in range(lo, hi) for m in (1.2345, 9.8765)]


# the texts a column usually shows, in the table's own formats (its width fits the widest): times
# from 1 ns to 10 s, FLOPs from 1 kFLOP, bytes to 10 TB, rates from 0.1 GB/s, intensities from 0.01
USUAL = {
    "level": ["instruction"], "dur_ns": _span(format_ns, 0, 10), "share_percent": ["100 %", "0.00091 %", "0.000005 %",
                                                                                  format_metric(4e-9, "%")],
    "flops": _span(lambda v: format_metric(v, "FLOP"), 3, 15), "hbm_bytes": _span(format_bytes, 0, 13),
    "tflops": _span(significant, -2, 5), "gbps": _span(format_rate_gbps, -1, 5),
    "arithmetic_intensity": _span(lambda v: f"{significant(v)} FLOP/B", -2, 5),
    **{k: ["100.0 %", "0.05 %"] for k in ("mfu_percent", "mfu_bf16_percent", "mbu_percent", "roofline_percent")},
    "bound": ["dma_latency", "collective"], "dtype": ["mxfp8", "bf16"], "where": ["15.7"],
    "start_ns": _span(format_ns, 0, 10), "instruction_count": ["999,999"],
}


class OperatorColumns(QObject):
    """Widths, order and visibility of a QTreeView's columns `keys` (see the module docstring)."""

    def __init__(self, view: QTreeView, keys: Sequence[str], store=None) -> None:
        super().__init__(view)
        self.view = view
        self.keys = tuple(keys)
        self.store = store or app_settings()
        self.header: QHeaderView = view.header()
        self.name_fixed = False  # True once the user sizes the name column: it stops following the dock
        self._fitting = False
        h = self.header
        h.setSectionsMovable(True)
        h.setFirstSectionMovable(False)  # the tree's branch lines belong to the name column
        h.setTextElideMode(Qt.ElideRight)
        h.setMinimumSectionSize(36)
        h.setContextMenuPolicy(Qt.CustomContextMenu)
        h.customContextMenuRequested.connect(self.show_menu)
        h.sectionResized.connect(self._resized)
        view.viewport().installEventFilter(self)
        self.reset_order()
        self.size_to_contents()
        self.set_hidden(self._saved_hidden(), save=False)

    # -- widths and order ----------------------------------------------------------------
    def size_to_contents(self) -> None:
        """Each column (but the name) as wide as its header with the sort arrow, or its widest usual value."""
        fm = self.view.fontMetrics()
        for i, key in enumerate(self.keys):
            if key == "name":
                continue
            widest = max((fm.horizontalAdvance(t) for t in USUAL.get(key, [])), default=0)
            self.header.resizeSection(i, max(self.header.sectionSizeHint(i), widest + PADDING))
        self.fit_name()

    def reset_order(self) -> None:
        order = [k for k in VISUAL_ORDER if k in self.keys] + [k for k in self.keys if k not in VISUAL_ORDER]
        for visual, key in enumerate(order):
            self.header.moveSection(self.header.visualIndex(self.keys.index(key)), visual)

    def fit_name(self) -> None:
        """The name column takes the dock's width the shown columns leave (MIN_NAME..MAX_NAME)."""
        if self.name_fixed or "name" not in self.keys:
            return
        name = self.keys.index("name")
        others = sum(self.header.sectionSize(i) for i in range(len(self.keys))
                     if i != name and not self.header.isSectionHidden(i))
        width = min(MAX_NAME, max(MIN_NAME, self.view.viewport().width() - others))
        self._fitting = True
        try:
            self.header.resizeSection(name, width)
        finally:
            self._fitting = False

    def _resized(self, logical: int, _old: int, _new: int) -> None:
        if not self._fitting and self.keys[logical] == "name":
            self.name_fixed = True  # the user dragged its divider (nothing else sizes it)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Resize:  # the dock was resized: the name column follows
            self.fit_name()
        return False

    # -- visibility ----------------------------------------------------------------------
    def hidden(self) -> set[str]:
        return {k for i, k in enumerate(self.keys) if self.header.isSectionHidden(i)}

    def set_hidden(self, keys: set[str] | frozenset[str], save: bool = True) -> None:
        for i, key in enumerate(self.keys):
            self.header.setSectionHidden(i, key in keys and key != "name")
        if save:
            self.store.setValue(SETTING, ",".join(sorted(self.hidden())) or "-")
        self.fit_name()

    def _saved_hidden(self) -> set[str]:
        value = self.store.value(SETTING)
        if not isinstance(value, str) or not value:
            return set(DEFAULT_HIDDEN)
        return {k for k in value.split(",") if k in self.keys}

    def toggle(self, key: str) -> None:
        hidden = self.hidden()
        self.set_hidden(hidden - {key} if key in hidden else hidden | {key})

    def restore_defaults(self) -> None:
        self.name_fixed = False
        self.reset_order()
        self.size_to_contents()
        self.set_hidden(set(DEFAULT_HIDDEN))

    def menu(self) -> QMenu:
        """Show or hide each column (in the order shown), and restore the defaults."""
        model = self.view.model()
        m = QMenu(self.view)
        m.setObjectName("operators-columns-menu")
        m.setToolTipsVisible(True)
        hidden = self.hidden()
        for visual in range(len(self.keys)):
            i = self.header.logicalIndex(visual)
            key = self.keys[i]
            act = m.addAction(str(model.headerData(i, Qt.Horizontal, Qt.DisplayRole)))
            act.setObjectName(f"column-{key}")
            act.setCheckable(True)
            act.setChecked(key not in hidden)
            act.setEnabled(key != "name")
            act.setToolTip(str(model.headerData(i, Qt.Horizontal, Qt.ToolTipRole) or ""))
            act.toggled.connect(lambda _on, key=key: self.toggle(key))
        m.addSeparator()
        m.addAction("Default columns", self.restore_defaults).setObjectName("columns-default")
        return m

    def show_menu(self, pos: QPoint) -> None:
        self.menu().popup(self.header.mapToGlobal(pos))
