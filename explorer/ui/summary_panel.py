"""QtSummary (objectName `summary`): the summary metrics, as `trnx summary --json` has them.

Three columns over the same `METRICS` rows: the whole trace (`summarize(trace)`),
one chip (`summarize_per_chip`, chosen in a combo box) and the current selection
(`summarize(trace, time_range=..., track_ids=...)` for an area selection, else for
the visible range). Metrics read by their display names (`metrics.label`), values
are `format_metric`'s text with units, the CLI's; each metric's tooltip gives its
Neuron-style name (the key of `trnx summary --json`) and definition, an unavailable
value's says why. The name column keeps a fixed width; the chip and selection columns
fold away (the "chip" and "selection" buttons) so the panel reads at a dock's width.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QComboBox, QHBoxLayout, QHeaderView, QLabel, QToolButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget,
)

from explorer.model.analysis.metrics import GROUPS, METRIC_BY_NAME, METRICS, format_metric, label, tooltip
from explorer.model.analysis.step_breakdown import CATEGORIES, LABELS, breakdown_line, shown_part
from explorer.model.scope import Scope
from explorer.model.timeline.selection import covers_trace, is_area, selection_scope
from explorer.model.analysis.summary import Summary, summarize
from explorer.model.units import format_ns, plural
from explorer.ui.analysis_session import Latest, TraceAnalysis

COLUMNS = ("trace", "chip", "selection")
HEADLINE = (("total_time_ns", "time"), ("mfu_percent", "MFU"), ("mfu_estimated_percent", "MFU bf16"),
            ("mbu_estimated_percent", "MBU"),
            ("achieved_tflops", "achieved"), ("hbm_bandwidth_gbps", "HBM"),
            ("tensor_engine_active_time_percent", "tensor engine active"))
SELECTION_DEBOUNCE_MS = 300
NAME_MAX_WIDTH = 210  # px: the name column fits the longest display name, up to this


class QtSummary(QWidget):
    """The summary metrics of the whole trace, one chip and the selection, side by side."""

    selection_computed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("summary")
        self.analysis: TraceAnalysis | None = None
        self.summaries: dict[str, Summary | None] = dict.fromkeys(COLUMNS)
        self.visible_range: tuple[float, float] | None = None
        self.area: Scope | None = None
        self.selection_scope: Scope | None = None
        self._latest = Latest()
        self._items: dict[str, QTreeWidgetItem] = {}

        self.headline = QLabel("Open a trace to see its summary.")
        self.headline.setObjectName("summary-headline")
        self.headline.setWordWrap(True)
        self.headline.setTextFormat(Qt.RichText)
        self.chip_combo = QComboBox()
        self.chip_combo.setObjectName("summary-chip")
        self.chip_combo.setToolTip("The chip the middle column summarises (summarize_per_chip, `trnx summary --per-chip`).")
        self.chip_combo.currentIndexChanged.connect(self._chip_changed)
        self.scope_label = QLabel("")
        self.scope_label.setObjectName("summary-scope")
        self.scope_label.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setObjectName("summary-table")
        self.tree.setColumnCount(4)
        self.tree.setHeaderLabels(["metric", "whole trace", "chip", "selection"])
        head = self.tree.headerItem()
        head.setToolTip(1, "summarize(trace): the same numbers as `trnx summary TRACE --json`.")
        head.setToolTip(2, "summarize_per_chip: the chip chosen above (`trnx summary --per-chip`).")
        head.setToolTip(3, "The area selection (Shift+drag on the timeline) if there is one, else the visible range "
                           "(`trnx summary --range T0:T1`).")
        for c in (1, 2, 3):
            head.setTextAlignment(c, Qt.AlignRight | Qt.AlignVCenter)
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        # the display names keep a fixed column; the values take their own width after it
        self.tree.setTextElideMode(Qt.ElideRight)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.Interactive)
        longest = max(self.tree.fontMetrics().horizontalAdvance(label(m.name)) for m in METRICS)
        header.resizeSection(0, min(longest + 2 * self.tree.indentation() + 12, NAME_MAX_WIDTH))
        header.setMinimumSectionSize(60)
        for c in (1, 2, 3):
            header.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        self._build_rows()

        top = QHBoxLayout()
        self.chip_label = QLabel("chip")
        top.addWidget(self.chip_label)
        top.addWidget(self.chip_combo)
        top.addStretch(1)
        self.column_buttons: dict[str, QToolButton] = {}
        for name, col in (("chip", 2), ("selection", 3)):
            b = QToolButton()
            b.setText(name)
            b.setObjectName(f"summary-show-{name}")
            b.setCheckable(True)
            b.setChecked(True)
            b.setToolTip(f"Show or fold the {name} column.")
            b.toggled.connect(lambda on, c=col: self._column_toggled(c, on))
            top.addWidget(b)
            self.column_buttons[name] = b
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.headline)
        lay.addLayout(top)
        lay.addWidget(self.scope_label)
        lay.addWidget(self.tree, 1)
        self._timer = QTimer(self, singleShot=True, interval=SELECTION_DEBOUNCE_MS)
        self._timer.timeout.connect(self._compute_selection)

    def _build_rows(self) -> None:
        bold = QFont(self.tree.font())
        bold.setBold(True)
        for group in GROUPS:
            g = QTreeWidgetItem(self.tree, [group])
            g.setFont(0, bold)
            g.setFirstColumnSpanned(True)
            for spec in (s for s in METRICS if s.group == group):
                item = QTreeWidgetItem(g, [label(spec.name), "", "", ""])
                item.setData(0, Qt.UserRole, spec.name)
                tip = tooltip(spec)
                item.setToolTip(0, tip)
                for c in (1, 2, 3):
                    item.setTextAlignment(c, Qt.AlignRight | Qt.AlignVCenter)
                    item.setToolTip(c, tip)
                self._items[spec.name] = item
            g.setExpanded(True)
        # where the whole step's time goes (TraceAnalysis.step_breakdown, `trnx summary`'s section)
        self.breakdown_group = QTreeWidgetItem(["where the step's time goes"])
        self.tree.insertTopLevelItem(0, self.breakdown_group)   # first: the one-look answer
        self.breakdown_group.setFont(0, bold)
        self.breakdown_group.setFirstColumnSpanned(True)
        self.breakdown_group.setToolTip(0, "The whole step on its critical chip (the one that waited least at "
                                           "collectives), split by what each moment went to; the parts sum to "
                                           "the step time (explorer.model.analysis.step_breakdown).")
        self._breakdown: dict[str, QTreeWidgetItem] = {}
        for cat in CATEGORIES:  # one line each, across the columns: the label must not elide away at a dock's width
            item = QTreeWidgetItem(self.breakdown_group, [LABELS[cat]])
            item.setFirstColumnSpanned(True)
            item.setToolTip(0, f"{cat}: {LABELS[cat]}")
            self._breakdown[cat] = item
        self.breakdown_group.setExpanded(True)
        self.breakdown_group.setHidden(True)

    # -- inputs --------------------------------------------------------------------
    def set_analysis(self, analysis: TraceAnalysis | None) -> None:
        self.analysis = analysis
        self._latest.cancel()
        self.area = None
        self.summaries = dict.fromkeys(COLUMNS)
        self.chip_combo.blockSignals(True)
        self.chip_combo.clear()
        if analysis is not None:
            for chip in analysis.per_chip:
                self.chip_combo.addItem(f"chip {chip}", chip)
            self.summaries["trace"] = analysis.summary
            if analysis.per_chip:
                chip, self.summaries["chip"] = next(iter(analysis.per_chip.items()))
                self.tree.headerItem().setText(2, f"chip {chip}")
        self.chip_combo.blockSignals(False)
        # one chip: its column would repeat the whole trace's, leave the room to the metric names
        single = analysis is None or len(analysis.per_chip) <= 1
        self.multi_chip = not single
        self.tree.setColumnHidden(2, single or not self.column_buttons["chip"].isChecked())
        self.chip_combo.setVisible(not single)
        self.chip_label.setVisible(not single)
        self.column_buttons["chip"].setVisible(not single)
        # several chips: the chip column shows and the selection column starts folded, so the values fit
        # a dock's width (one click on "selection" unfolds it)
        self.column_buttons["selection"].setChecked(single)
        self.tree.setColumnHidden(3, not single)
        self._fill("trace")
        self._fill("chip")
        self._fill_breakdown()
        self._headline()
        self._schedule()

    def _column_toggled(self, column: int, on: bool) -> None:
        if column == 2 and not getattr(self, "multi_chip", False):
            return  # one chip: its column would repeat the whole trace's
        self.tree.setColumnHidden(column, not on)

    def set_busy(self, busy: bool) -> None:
        if busy:
            self.headline.setText("Computing the summary\u2026")

    def set_range(self, t0: float, t1: float) -> None:
        """The timeline's visible range changed (the selection column follows it when there is no area)."""
        self.visible_range = (t0, t1)
        if self.area is None:
            self._schedule()

    def show_area(self, area: Scope | None) -> None:
        self.area = area if is_area(area) else None
        self._schedule()

    def _chip_changed(self, _i: int) -> None:
        chip = self.chip_combo.currentData()
        if self.analysis is not None and chip is not None:
            self.summaries["chip"] = self.analysis.per_chip[chip]
            self.tree.headerItem().setText(2, f"chip {chip}")
            self._fill("chip")

    # -- the selection column ----------------------------------------------------------
    @property
    def selection_busy(self) -> bool:
        """The selection column is waiting for its debounce or its worker (a screenshot taken now
        would show it half-made, or not at all)."""
        return self.analysis is not None and (self._timer.isActive() or self._latest.pending is not None)

    def _schedule(self) -> None:
        if self.analysis is not None:
            self._timer.start()

    def _compute_selection(self) -> None:
        a = self.analysis
        if a is None:
            return
        scope = self.selection_scope = selection_scope(a.trace.span_ns, self.area, self.visible_range)
        if covers_trace(scope, a.trace.span_ns):  # the whole trace is in view: it is the whole summary
            self._selection_done(True, a.summary)
            return
        if scope.duration_ns <= 0:
            return
        self.scope_label.setText(f"selection: computing {self._scope_text(scope)}\u2026")
        trace = a.trace
        self._latest.submit(lambda: summarize(trace, time_range=(scope.t0, scope.t1), track_ids=scope.track_ids),
                            self._selection_done)

    def _selection_done(self, ok: bool, value) -> None:
        if not ok:
            self.scope_label.setText(f"selection: {value}")
            return
        self.summaries["selection"] = value
        self.scope_label.setText(f"selection: {self._scope_text(self.selection_scope)}")
        self._fill("selection")
        self.selection_computed.emit()

    def _scope_text(self, scope: Scope) -> str:
        o = self.analysis.trace.span_ns[0]
        where = "visible range" if scope.track_ids is None else f"area of {len(scope.track_ids)} rows"
        return f"{where} {format_ns(scope.t0 - o)} \u2013 {format_ns(scope.t1 - o)} ({format_ns(scope.duration_ns)})"

    # -- output ------------------------------------------------------------------------
    def _fill(self, column: str) -> None:
        c = COLUMNS.index(column) + 1
        s = self.summaries[column]
        # the column fits its contents once, after all rows: fitted on every setText it cost
        # ~0.5 ms a row (~30 ms of the GUI thread per new selection summary at 28M events)
        header = self.tree.header()
        header.setSectionResizeMode(c, QHeaderView.Interactive)
        try:
            for name, item in self._items.items():
                spec = METRIC_BY_NAME[name]
                if s is None:
                    item.setText(c, "")
                    continue
                item.setText(c, format_metric(s.metrics.get(name), spec.unit))
                why = s.unavailable.get(name)
                item.setToolTip(c, tooltip(spec) + (f"\nn/a: {why}" if why else ""))
        finally:
            header.setSectionResizeMode(c, QHeaderView.ResizeToContents)

    def _fill_breakdown(self) -> None:
        b = None if self.analysis is None else self.analysis.step_breakdown
        self.breakdown_group.setHidden(b is None)
        if b is None:
            return
        d = b.to_dict()
        self.breakdown_group.setText(0, f"where the step's time goes (chip {d['chip']}, sums to "
                                        f"{format_ns(d['step_time_ns'])})")
        for p in d["parts"]:
            item = self._breakdown[p["category"]]
            item.setText(0, breakdown_line(p))
            item.setHidden(not shown_part(p))

    def breakdown_text(self, category: str) -> str:
        """A step-breakdown row's text ("" when hidden or absent)."""
        item = self._breakdown[category]
        return "" if item.isHidden() or self.breakdown_group.isHidden() else item.text(0)

    def _headline(self) -> None:
        s = self.summaries["trace"]
        if s is None:
            self.headline.setText("Open a trace to see its summary.")
            return
        parts = [f"{word} <b>{format_metric(s.metrics.get(n), METRIC_BY_NAME[n].unit)}</b>" for n, word in HEADLINE]
        scope = s.scope
        cores, chips = int(scope.get("cores", 0)), int(scope.get("chips_with_work", 0))
        self.headline.setText(
            " \u00b7 ".join(parts) + f"<br>{plural(cores, 'core')} on {plural(chips, 'chip')} did work; "
            "hover a metric for its definition.")

    def value_text(self, metric: str, column: str = "trace") -> str:
        """The text shown for a metric in a column ("trace", "chip" or "selection")."""
        return self._items[metric].text(COLUMNS.index(column) + 1)
