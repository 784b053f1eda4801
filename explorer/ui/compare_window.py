"""QtCompare (objectName `compare`): a second trace against the first, as `trnx diff A B` compares them.

Two timelines (the same `TimelineWidget` class as the main window) stacked with a
linked zoom, and the deltas of `explorer.model.analysis.diff.diff(A, B)`: summary metrics,
per-engine active time, per-op and per-kernel time. Clicking an op or kernel row
zooms both timelines to that op and aligns them on it (B's time is mapped onto A's
so the op lines up even when B runs it faster); "Align starts" goes back to the same
times in both. B loads with the main window's `TraceLoader` (off the GUI thread)
and the diff runs on the analysis worker.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox, QHBoxLayout, QLabel, QMainWindow, QPushButton, QSplitter, QTabWidget, QVBoxLayout, QWidget,
)

from explorer.model.analysis.diff import TraceDiff, diff, matching
from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.analysis.metrics import METRIC_BY_NAME, format_metric, label, tooltip
from explorer.model.analysis.summary import Summary
from explorer.ui import frame_table as F
from explorer.ui.analysis_session import run_in_background
from explorer.ui.loader import LoadedTrace, TraceLoader
from explorer.ui.state_links import connect_while_alive
from explorer.model.timeline.view_state import ViewState
from explorer.ui.timeline import TimelineWidget

BETTER = QColor("#98c379")
WORSE = QColor("#e06c75")


def _delta_colour(rec) -> QColor | None:
    better = rec.get("better")
    return BETTER if better == "b" else WORSE if better == "a" else None


def _time_colour(rec) -> QColor | None:
    d = rec.get("delta_ns")
    if d is None or (isinstance(d, float) and np.isnan(d)) or d == 0:
        return None
    return BETTER if d < 0 else WORSE


METRIC_COLUMNS = (
    F.Column("label", "metric", cell_tip="tip", tip="Summary metric (docs/metrics.md); hover for its Neuron-style name."),
    F.Column("group", "group"),
    F.Column("a_text", "A"),
    F.Column("b_text", "B"),
    F.Column("delta_text", "B \u2212 A", colour=_delta_colour, cell_tip="why",
             tip="Green: B is better, red: A is better, where the metric says so for these two runs (hover a "
                 "cell for the reason: a share of a shorter run, or a rate over different work, is neither)."),
    F.Column("ratio", "B / A", F.ratio),
)
ENGINE_COLUMNS = (
    F.Column("engine", "engine"),
    F.Column("a_active_ns", "A active", F.ns),
    F.Column("b_active_ns", "B active", F.ns),
    F.Column("delta_ns", "B \u2212 A", F.signed_ns, colour=_time_colour),
    F.Column("a_percent", "A %", F.percent),
    F.Column("b_percent", "B %", F.percent),
    F.Column("delta_percent", "\u0394 %", F.signed_percent, "Percentage points."),
)
OP_COLUMNS = (
    F.Column("path", "op", tip="Matched by position in the hierarchy: path of names below the model + occurrence."),
    F.Column("level", "level"),
    F.Column("kind", "kind"),
    F.Column("a_dur_ns", "A time", F.ns),
    F.Column("b_dur_ns", "B time", F.ns),
    F.Column("delta_ns", "B \u2212 A", F.signed_ns, colour=_time_colour),
    F.Column("ratio", "B / A", F.ratio),
    F.Column("status", "status", tip="matched, only_a or only_b"),
)
BY_NAME_COLUMNS = (
    F.Column("level", "level", tip="layer, op or kernel: each level is aligned by name (explorer.model.analysis.name_diff)."),
    F.Column("name", "name"),
    F.Column("a_count", "A count", F.count),
    F.Column("b_count", "B count", F.count),
    F.Column("a_time_ns", "A time", F.ns, "Summed over every row of that level with that name."),
    F.Column("b_time_ns", "B time", F.ns),
    F.Column("delta_ns", "B \u2212 A", F.signed_ns, colour=_time_colour),
    F.Column("ratio", "B / A", F.ratio, "Simulated / measured when A is a measurement and B a simulation."),
    F.Column("status", "status", tip="matched, only_a or only_b"),
)
KERNEL_COLUMNS = (
    F.Column("op_key", "op", tip="The matched op's key."),
    F.Column("name", "kernel"),
    F.Column("a_count", "A count", F.count),
    F.Column("b_count", "B count", F.count),
    F.Column("a_time_ns", "A time", F.ns, "Summed over the op's instances of this kernel."),
    F.Column("b_time_ns", "B time", F.ns),
    F.Column("delta_ns", "B \u2212 A", F.signed_ns, colour=_time_colour),
    F.Column("ratio", "B / A", F.ratio),
    F.Column("a_max_ns", "A longest", F.ns),
    F.Column("b_max_ns", "B longest", F.ns),
    F.Column("status", "status"),
)


def metric_rows(d: TraceDiff) -> pd.DataFrame:
    """The metric deltas with A, B and B - A as `format_metric` writes them (the CLI's text)."""
    m = d.metrics.copy()

    def missing(v) -> bool:
        return v is None or (isinstance(v, float) and np.isnan(v))

    def delta(v, unit: str) -> str:
        if missing(v):
            return "n/a"
        if unit == "%":
            return f"{v:+.4g} pp" if v else "0 pp"  # a difference of percents is in percentage points
        return ("+" if v > 0 else "") + format_metric(v, unit)

    m["label"] = [label(n) for n in m["metric"]]
    m["tip"] = [tooltip(METRIC_BY_NAME[n]) for n in m["metric"]]
    m["a_text"] = [format_metric(v, u) for v, u in zip(m["a"], m["unit"])]
    m["b_text"] = [format_metric(v, u) for v, u in zip(m["b"], m["unit"])]
    m["delta_text"] = [delta(v, u) for v, u in zip(m["delta"], m["unit"])]
    return m


class _Side(QWidget):
    """A caption over a timeline."""

    def __init__(self, tag: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.caption = QLabel(tag)
        self.caption.setObjectName(f"compare-caption-{tag[0].lower()}")
        self.view = ViewState()  # each side has its own view; _sync links their viewports
        self.timeline = TimelineWidget(self, self.view)
        self.timeline.setObjectName(f"compare-timeline-{tag[0].lower()}")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(1)
        lay.addWidget(self.caption)
        lay.addWidget(self.timeline, 1)


class QtCompare(QMainWindow):
    """B against A: deltas and two linked timelines. Emits `ready` when the diff is shown, `failed(message)`."""

    ready = Signal()
    failed = Signal(str)

    def __init__(self, a: LoadedTrace, b_path: str | Path, parent: QWidget | None = None, *,
                 summary_a: Summary | None = None, hierarchy_a: Hierarchy | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("compare")
        self.setAttribute(Qt.WA_DeleteOnClose)
        self.a = a
        self.b: LoadedTrace | None = None
        self.b_path = Path(b_path)
        self.diff: TraceDiff | None = None
        self.hierarchy_a = hierarchy_a
        self.summary_a = summary_a
        self.hierarchy_b: Hierarchy | None = None
        self.map = (0.0, 1.0)  # t_b = offset + scale * t_a
        self._syncing = False
        self.setWindowTitle(f"Compare {a.path.name} (A) with {self.b_path.name} (B) \u2014 Trn3 Explorer")
        self.resize(1500, 950)

        self.headline = QLabel(f"Loading {self.b_path.name}\u2026")
        self.headline.setObjectName("compare-headline")
        self.headline.setWordWrap(True)
        self.headline.setTextFormat(Qt.RichText)
        self.link = QCheckBox("link zoom")
        self.link.setObjectName("compare-link")
        self.link.setChecked(True)
        self.link.setToolTip("Zooming or panning one timeline moves the other to the matching time.")
        self.align_button = QPushButton("Align starts")
        self.align_button.setObjectName("compare-align")
        self.align_button.setToolTip("Show the same times in both timelines, at one time scale (undo an alignment).")
        self.align_button.clicked.connect(self.align_starts)
        self.stretch_button = QPushButton("Stretch B to A")
        self.stretch_button.setObjectName("compare-stretch")
        self.stretch_button.setToolTip("Draw B's whole trace as wide as A's (hides how much faster one is).")
        self.stretch_button.clicked.connect(self.stretch)
        self.align_label = QLabel("")
        self.align_label.setObjectName("compare-alignment")
        self.side_a = _Side(f"A: {a.path}")
        self.side_b = _Side(f"B: {self.b_path}")
        self.side_a.timeline.set_index(a.index)

        self.metrics = F.FrameTableModel(METRIC_COLUMNS, self)
        self.engines = F.FrameTableModel(ENGINE_COLUMNS, self)
        self.ops = F.FrameTableModel(OP_COLUMNS, self)
        self.kernels = F.FrameTableModel(KERNEL_COLUMNS, self)
        self.by_name = F.FrameTableModel(BY_NAME_COLUMNS, self)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("compare-tabs")
        self.views = {}
        for model, name, title in ((self.metrics, "compare-metrics", "Summary metrics"),
                                   (self.engines, "compare-engines", "Engines"),
                                   (self.ops, "compare-ops", "Ops"), (self.kernels, "compare-kernels", "Kernels"),
                                   (self.by_name, "compare-by-name", "By name")):
            view = F.make_table(model, name)
            self.views[name] = view
            self.tabs.addTab(view, title)
        self.views["compare-ops"].clicked.connect(self._op_clicked)
        self.views["compare-kernels"].clicked.connect(self._kernel_clicked)

        bar = QHBoxLayout()
        bar.addWidget(self.headline, 1)
        bar.addWidget(self.align_label)
        bar.addWidget(self.link)
        bar.addWidget(self.align_button)
        bar.addWidget(self.stretch_button)
        split = QSplitter(Qt.Vertical)
        split.setObjectName("compare-splitter")
        split.addWidget(self.side_a)
        split.addWidget(self.side_b)
        split.addWidget(self.tabs)
        split.setSizes([330, 330, 290])
        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(bar)
        lay.addWidget(split, 1)
        self.setCentralWidget(central)

        # bound methods: the view states hold them weakly, so closing the window frees it
        connect_while_alive(self.side_a.view.viewport.changed, self._follow_a)
        connect_while_alive(self.side_b.view.viewport.changed, self._follow_b)

        self.loader = TraceLoader(self.b_path, self.side_a.view.colour_mode, self)
        self.loader.loaded.connect(self._loaded)
        self.loader.failed.connect(self._failed)
        self.loader.refused.connect(self._damaged)
        self.loader.damaged.connect(self._damaged)
        self.loader.start()

    def _follow_a(self) -> None:
        self._sync(self.side_a, self.side_b)

    def _follow_b(self) -> None:
        self._sync(self.side_b, self.side_a)

    # -- loading -------------------------------------------------------------------
    def _loaded(self, result: LoadedTrace) -> None:
        self.side_b.timeline.set_index(result.index)
        self.b = result  # (after set_index: B's first fit must not move A)
        self.side_b.caption.setText(f"B: {result.path}")
        self.headline.setText(f"Comparing {self.b_path.name} against {self.a.path.name}\u2026")
        # one time scale: a faster B is visibly shorter (each side may show as long as the longer trace)
        (a0, a1), (b0, b1) = self.a.index.span, result.index.span
        length = max(a1 - a0, b1 - b0)
        self._syncing = True
        try:
            self.side_a.view.viewport.set_limits(a0, a0 + length)
            self.side_b.view.viewport.set_limits(b0, b0 + length)
        finally:
            self._syncing = False
        self.align_starts(fit=True)
        a_trace, b_trace = self.a.index.trace, result.index.trace
        sa, ha = self.summary_a, self.hierarchy_a

        def work():
            d = diff(a_trace, b_trace, summary_a=sa, hierarchy_a=ha)
            hb = Hierarchy(b_trace)
            _ = hb.ops
            h_a = ha or Hierarchy(a_trace)
            _ = h_a.ops
            return d, h_a, hb

        run_in_background(work, self._diffed)

    def _failed(self, message: str) -> None:
        message = message or "loading was cancelled."
        self.headline.setText(f"Cannot compare: {message}")
        self.failed.emit(message)

    def _damaged(self, path: Path, message: str) -> None:
        self._failed(message)

    def _diffed(self, ok: bool, value) -> None:
        if not ok:
            self._failed(value)
            return
        d, self.hierarchy_a, self.hierarchy_b = value
        self.diff = d
        self.metrics.set_frame(metric_rows(d))
        self.engines.set_frame(d.engines)
        self.ops.set_frame(d.ops)
        self.kernels.set_frame(d.kernels)
        self.by_name.set_frame(d.by_name)
        if d.measured_vs_simulated:  # where the simulator is wrong: names, not positions, line the two up
            self.tabs.setCurrentWidget(self.views["compare-by-name"])
        self.headline.setText(self._headline_text(d))
        self.ready.emit()

    def _headline_text(self, d: TraceDiff) -> str:
        m = d.metrics.set_index("metric")
        parts = []
        for name in ("total_time_ns", "mfu_estimated_percent", "achieved_tflops", "hbm_bandwidth_gbps"):
            if name not in m.index:
                continue
            r = m.loc[name]
            unit = METRIC_BY_NAME[name].unit
            ratio = "" if pd.isna(r["ratio"]) else f" ({r['ratio']:.3g}x)"
            parts.append(f"{name.replace('_', ' ')} <b>{format_metric(r['a'], unit)}</b> \u2192 "
                         f"<b>{format_metric(r['b'], unit)}</b>{ratio}")
        if d.measured_vs_simulated:
            which = {True: "measured", False: "simulated"}
            named = matching(d.by_name[d.by_name["level"] == "op"])
            return (f"B = {self.b_path.name} ({which[d.measured[1]]}) against A = {self.a.path.name} "
                    f"({which[d.measured[0]]}): " + "; ".join(parts)
                    + f". {named.matched} of {named.rows} op names in both; By name lists them largest difference first.")
        ops = matching(d.ops)
        return (f"B = {self.b_path.name} against A = {self.a.path.name}: " + "; ".join(parts)
                + f". {ops.matched} of {ops.rows} ops matched. Click an op or kernel row to line both timelines up on it.")

    # -- linked zoom ---------------------------------------------------------------
    def _sync(self, src: _Side, dst: _Side) -> None:
        if self._syncing or not self.link.isChecked() or self.b is None:
            return
        off, scale = self.map
        vp = src.view.viewport
        if src is self.side_a:
            t0, t1 = off + scale * vp.t0, off + scale * vp.t1
        else:
            t0, t1 = (vp.t0 - off) / scale, (vp.t1 - off) / scale
        self._syncing = True
        try:
            dst.view.viewport.set_range(t0, t1)
        finally:
            self._syncing = False

    def align_starts(self, fit: bool = False) -> None:
        """Same times in both timelines (B's start on A's start, one time scale); with `fit`, show
        the longer of the two traces whole."""
        if self.b is None:
            return
        (a0, a1), (b0, b1) = self.a.index.span, self.b.index.span
        self.map = (float(b0 - a0), 1.0)
        self.align_label.setText("aligned on the starts, same time scale")
        if fit:
            length = max(a1 - a0, b1 - b0)
            pad = max(length * 0.02, 20.0)
            self.side_a.view.viewport.set_range(a0 - pad, a0 + length + pad)
        self._sync(self.side_a, self.side_b)

    def stretch(self) -> None:
        """B's whole trace drawn as wide as A's."""
        if self.b is not None:
            self.align_ranges(self.a.index.span, self.b.index.span, "the whole traces")

    def align_ranges(self, a_range: tuple[float, float], b_range: tuple[float, float], what: str = "") -> None:
        """Zoom A to a_range and B to b_range, and keep them aligned while zooming."""
        (a0, a1), (b0, b1) = a_range, b_range
        scale = (b1 - b0) / (a1 - a0) if a1 > a0 and b1 > b0 else 1.0
        self.map = (b0 - scale * a0, scale)
        self.align_label.setText(f"aligned on {what} (B drawn {1 / scale:.3g}x wider)" if what else "")
        pad_a = max((a1 - a0) * 0.05, 20.0)
        self._syncing = True
        try:
            self.side_a.view.viewport.set_range(a0 - pad_a, a1 + pad_a)
            self.side_b.view.viewport.set_range(b0 - pad_a * scale, b1 + pad_a * scale)
        finally:
            self._syncing = False

    def _op_range(self, h: Hierarchy | None, op_id: int) -> tuple[int, int] | None:
        if h is None or op_id < 0:
            return None
        return h.time_range(f"op:{op_id}")

    def show_op(self, a_op_id: int, b_op_id: int) -> None:
        """Both timelines on an op: its starts lined up at one time scale, the longer of the two in view."""
        ra = self._op_range(self.hierarchy_a, a_op_id)
        rb = self._op_range(self.hierarchy_b, b_op_id)
        if ra and rb:
            name = self.hierarchy_a.ops.loc[self.hierarchy_a.ops["op_id"] == a_op_id, "name"].iloc[0]
            length = max(ra[1] - ra[0], rb[1] - rb[0])
            self.align_ranges((ra[0], ra[0] + length), (rb[0], rb[0] + length), f"op {name}")
            self.align_label.setText(f"aligned on op {name}, same time scale")
        elif ra:
            self.side_a.timeline.zoom_to(*ra)
        elif rb:
            self.side_b.timeline.zoom_to(*rb)

    def _op_clicked(self, idx: QModelIndex) -> None:
        rec = self.ops.record(idx.row())
        self.show_op(int(rec["a_op_id"]), int(rec["b_op_id"]))

    def _kernel_clicked(self, idx: QModelIndex) -> None:
        rec = self.kernels.record(idx.row())
        row = self.ops.find("key", rec["op_key"])
        if row >= 0:
            op = self.ops.record(row)
            self.show_op(int(op["a_op_id"]), int(op["b_op_id"]))

    def closeEvent(self, event) -> None:  # noqa: N802
        if self.loader.isRunning():
            self.loader.cancel()
            self.loader.wait(10000)
        super().closeEvent(event)

    def delta_text(self, metric: str) -> str:
        """The shown B - A of a summary metric (tests, scripting)."""
        row = self.metrics.find("metric", metric)
        return self.metrics.cell_text(row, "delta_text") if row >= 0 else ""
