"""QtDependencies (objectName `dependencies`): why an event started when it did.

For the selected instruction or DMA transfer: what it waited for and what it
unblocked (`Dependencies.predecessors` / `successors`, from `flows`) and the chain
of binding constraints that made it wait (`wait_chain_back`), newest first: the
immediate cause on top, back to the first wait on another engine or queue, with
"Show more" to go on. For its kernel: the
critical path (`critical_path`), computed on the analysis worker and highlighted on
the timeline. A click on a row jumps the timeline there and keeps this panel on
its event; a double-click makes the clicked event the panel's subject. Clearing the
timeline's selection (or choosing a kernel or op) empties the Waits tab; a critical
path the user asked for stays with its kernel.
"""

from __future__ import annotations

import html

import pandas as pd
from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QHBoxLayout, QLabel, QPushButton, QSplitter, QTabWidget, QVBoxLayout, QWidget,
)

from explorer.model.analysis.dependencies import CriticalPath, Dependencies, WaitChain
from explorer.model.units import format_ns
from explorer.ui import frame_table as F
from explorer.ui.analysis_session import Latest, TraceAnalysis

PROMPT = "Select an instruction or DMA transfer to see what it waited for."
CHAIN_STEPS = 200  # steps listed at first; "Show more" doubles it

EDGE_COLUMNS = (
    F.Column("name", "event", tip="Instruction opcode or DMA direction."),
    F.Column("kind", "edge", tip="flows.kind: semaphore, data, ..."),
    F.Column("track", "row"),
    F.Column("start_ns", "start", F.ns),
    F.Column("end_ns", "end", F.ns),
    F.Column("slack_ns", "slack", F.ns, "Gap between the end of what was waited for and the start of what waited: "
                                         "latency beyond the dependency itself."),
    F.Column("node", "node"),
)
STEP_COLUMNS = (
    F.Column("step", "step", F.count),
    F.Column("name", "event"),
    F.Column("track", "row"),
    F.Column("start_ns", "start", F.ns),
    F.Column("dur_ns", "duration", F.ns),
    F.Column("edge", "waited on next by", tip="How this step waited on the row below it: semaphore, data or "
                                              "engine_order (the previous event on the same engine or queue)."),
    F.Column("slack_ns", "slack", F.ns, "This step's start minus the end of what it waited for."),
    F.Column("node", "node"),
)
TRACK_COLUMNS = (
    F.Column("track", "row"),
    F.Column("busy_ns", "time on the path", F.ns),
    F.Column("percent", "% of the path", F.percent),
)


class QtDependencies(QWidget):
    """Predecessors, successors, wait chain and the kernel's critical path.

    Signals: `jump(node)` (go there on the timeline, keep this panel), `follow(node)`
    (make it the subject), `path_changed(steps DataFrame | None, label)` (what the
    timeline overlay should outline), `critical_path_requested(kernel_id)`.
    """

    jump = Signal(str)
    follow = Signal(str)
    path_changed = Signal(object, str)
    critical_path_ready = Signal()
    shown = Signal(str)  # an event's dependencies are on screen

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dependencies")
        self.analysis: TraceAnalysis | None = None
        self.node: str | None = None
        self.kernel_id: int | None = None
        self.critical: CriticalPath | None = None
        self.chain: pd.DataFrame | None = None  # the listed wait chain, newest first
        self.wait: WaitChain | None = None
        self.holding = False  # True while our own jump moves the timeline
        self._latest = Latest()  # critical paths
        self._events_latest = Latest()  # an event's flows and wait chain

        self.title = QLabel(PROMPT)
        self.title.setObjectName("dependencies-title")
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.RichText)
        self.show_chain = QCheckBox("outline the wait chain on the timeline")
        self.show_chain.setObjectName("dependencies-show-chain")
        self.show_chain.setChecked(True)
        self.show_chain.toggled.connect(lambda _on: self._emit_path())
        self.preds = F.FrameTableModel(EDGE_COLUMNS, self)
        self.succs = F.FrameTableModel(EDGE_COLUMNS, self)
        self.steps = F.FrameTableModel(STEP_COLUMNS, self)
        self.pred_view = F.make_table(self.preds, "dependencies-predecessors")
        self.succ_view = F.make_table(self.succs, "dependencies-successors")
        self.chain_view = F.make_table(self.steps, "dependencies-chain", sortable=False)
        self.pred_label = QLabel("waits for")
        self.succ_label = QLabel("unblocks")
        self.chain_label = QLabel("wait chain (newest first)")
        self.chain_label.setWordWrap(True)  # (a long count must not widen the whole window)
        self.more_button = QPushButton("Show more")
        self.more_button.setObjectName("dependencies-chain-more")
        self.more_button.setToolTip("Follow the chain back past the next wait on another engine or queue.")
        self.more_button.setEnabled(False)
        self.more_button.clicked.connect(self.show_more)

        deps = QWidget()
        dl = QVBoxLayout(deps)
        dl.setContentsMargins(0, 0, 0, 0)
        edges = QSplitter(Qt.Horizontal)
        for label, view in ((self.pred_label, self.pred_view), (self.succ_label, self.succ_view)):
            box = QWidget()
            bl = QVBoxLayout(box)
            bl.setContentsMargins(0, 0, 0, 0)
            bl.addWidget(label)
            bl.addWidget(view)
            edges.addWidget(box)
        dl.addWidget(self.title)
        dl.addWidget(edges, 2)
        row = QHBoxLayout()
        row.addWidget(self.chain_label, 1)
        row.addWidget(self.more_button)
        row.addWidget(self.show_chain)
        dl.addLayout(row)
        dl.addWidget(self.chain_view, 3)

        self.cp_title = QLabel("Select a kernel or one of its instructions.")
        self.cp_title.setObjectName("critical-path-title")
        self.cp_title.setWordWrap(True)
        self.cp_button = QPushButton("Find the critical path")
        self.cp_button.setObjectName("critical-path-button")
        self.cp_button.setToolTip("Follow binding constraints back from the kernel's last-finishing event and "
                                  "outline the chain on the timeline.")
        self.cp_button.setEnabled(False)
        self.cp_button.clicked.connect(self.request_critical_path)
        self.cp_steps = F.FrameTableModel(STEP_COLUMNS, self)
        self.cp_tracks = F.FrameTableModel(TRACK_COLUMNS, self)
        self.cp_view = F.make_table(self.cp_steps, "critical-path-steps", sortable=False)
        self.cp_track_view = F.make_table(self.cp_tracks, "critical-path-tracks")
        cp = QWidget()
        cl = QVBoxLayout(cp)
        cl.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(self.cp_title, 1)
        top.addWidget(self.cp_button)
        cl.addLayout(top)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.cp_view)
        split.addWidget(self.cp_track_view)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        cl.addWidget(split, 1)

        self.tabs = QTabWidget()
        self.tabs.setObjectName("dependencies-tabs")
        self.tabs.addTab(deps, "Waits")
        self.tabs.addTab(cp, "Critical path")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.tabs)

        for view, model in ((self.pred_view, self.preds), (self.succ_view, self.succs), (self.chain_view, self.steps),
                            (self.cp_view, self.cp_steps)):
            view.clicked.connect(lambda idx, m=model: self._clicked(m, idx, follow=False))
            view.doubleClicked.connect(lambda idx, m=model: self._clicked(m, idx, follow=True))

    # -- inputs --------------------------------------------------------------------
    def set_analysis(self, analysis: TraceAnalysis | None) -> None:
        self.analysis = analysis
        self._latest.cancel()
        self.kernel_id = None
        self.critical = None
        self._clear_waits(PROMPT)
        for m in (self.cp_steps, self.cp_tracks):
            m.set_frame(None)
        self.cp_title.setText("Select a kernel or one of its instructions.")
        self.cp_button.setEnabled(False)

    def show_node(self, node: str) -> None:
        """Show a node's dependencies (an instruction or DMA) and arm its kernel's critical path."""
        if self.holding or self.analysis is None or node == self.node:
            return
        a = self.analysis
        level, _, ident = node.partition(":")
        kernel = a.kernel_of_node(node)
        if kernel != self.kernel_id:
            self.kernel_id = kernel
            self.critical = None
            self.cp_steps.set_frame(None)
            self.cp_tracks.set_frame(None)
            self.cp_button.setEnabled(kernel is not None)
            self.cp_title.setText(
                f"Kernel {html.escape(self._kernel_name(kernel))} #{kernel}: find the chain of waits that set its "
                "end time." if kernel is not None else "Select a kernel or one of its instructions.")
        if level not in ("instruction", "dma"):  # a kernel or op: no wait chain of its own
            self._clear_waits(f"{html.escape(node)}: select one of its instructions or DMA transfers to see what "
                              "it waited for.")
            self.node = node
            return
        self.node = node
        self.chain = self.wait = None
        self.more_button.setEnabled(False)
        self._query(node, causes=1, max_steps=CHAIN_STEPS)

    def clear_event(self) -> None:
        """The timeline's selection was cleared: the Waits tab described the selected event, so it
        empties (a chain still listed and outlined would read as the answer for nothing selected). A
        critical path the user asked for stays with its kernel, which the other panels still show."""
        self._clear_waits(PROMPT)

    def _clear_waits(self, title: str) -> None:
        self._events_latest.cancel()  # (a chain still on its way is dropped too)
        self.node = None
        self.chain = self.wait = None
        self.more_button.setEnabled(False)
        for m in (self.preds, self.succs, self.steps):
            m.set_frame(None)
        self.pred_label.setText("waits for")
        self.succ_label.setText("unblocks")
        self.chain_label.setText("wait chain (newest first)")
        self.title.setText(title)
        self._emit_path()

    def _query(self, node: str, causes: int, max_steps: int) -> None:
        a = self.analysis
        eid = int(node.partition(":")[2])
        d = a.dependencies
        self.title.setText(f"Following the waits of {node}\u2026")

        def work():  # the first query indexes the event tables: off the GUI thread
            ev = a.hierarchy.events.event(eid)
            preds, succs, wait = d.predecessors(eid), d.successors(eid), d.wait_chain_back(eid, causes, max_steps)
            # the tables' rows too (pandas: 10-30 ms at 28M events on the GUI thread)
            return ev, preds, succs, wait, d._track_label(ev.track_id), [F.table_rows(f) for f in (preds, succs, wait.steps)]

        self._events_latest.submit(work, lambda ok, value, n=node: self._shown(n, ok, value))

    def show_more(self) -> None:
        """List the chain further back: one more wait on another engine or queue (and twice the steps)."""
        w = self.wait
        if w is None or not w.more or self.node is None:
            return
        self.more_button.setEnabled(False)
        self._query(self.node, w.causes + 1, w.max_steps * 2)

    def _shown(self, node: str, ok: bool, value) -> None:
        if not ok:
            self.title.setText(html.escape(str(value)))
            return
        ev, preds, succs, wait, track, rows = value
        self.wait = wait
        self.chain = wait.steps
        for model, r in zip((self.preds, self.succs, self.steps), rows):
            model.set_frame(r)
        self.pred_label.setText(f"waits for ({len(preds)})")
        self.succ_label.setText(f"unblocks ({len(succs)})")
        n = len(wait.steps)
        hops = wait.cause_hops
        reach = ("back to its start" if not wait.more else
                 "back to the first wait on another engine or queue" if hops == 1 else
                 f"back through {hops} waits on other engines or queues" if hops else "back")
        self.chain_label.setText(f"wait chain, newest first: {n} {'step' if n == 1 else 'steps'} {reach}")
        self.chain_label.setToolTip("Click a step to jump there, double-click to follow it.")
        self.more_button.setEnabled(wait.more)
        self.title.setText(f"<b>{html.escape(ev.name)}</b> ({node}) on {html.escape(track)} at "
                           f"{format_ns(ev.start_ns)}, {format_ns(ev.dur_ns)}; the listed chain before it spans "
                           f"{format_ns(wait.waited_ns)}")
        self.tabs.setCurrentIndex(0)
        self._emit_path()
        self.shown.emit(node)

    def _kernel_name(self, kernel_id: int | None) -> str:
        if kernel_id is None or self.analysis is None:
            return ""
        k = self.analysis.hierarchy.kernels
        hit = k.loc[k["kernel_id"] == kernel_id, "name"]
        return str(hit.iloc[0]) if len(hit) else ""

    # -- critical path ----------------------------------------------------------------
    def request_critical_path(self) -> None:
        a, kid = self.analysis, self.kernel_id
        if a is None or kid is None:
            return
        self.cp_button.setEnabled(False)
        self.cp_title.setText(f"Following the binding waits of kernel #{kid}\u2026")
        self.tabs.setCurrentIndex(1)
        self._latest.submit(lambda: a.dependencies.critical_path(kid), self._critical_done)

    def _critical_done(self, ok: bool, value) -> None:
        self.cp_button.setEnabled(self.kernel_id is not None)
        if not ok:
            self.cp_title.setText(html.escape(str(value)))
            return
        cp: CriticalPath = value
        self.critical = cp
        self.cp_steps.set_frame(cp.steps)
        self.cp_tracks.set_frame(cp.time_by_track)
        span = cp.end_ns - cp.start_ns
        self.cp_title.setText(
            f"Critical path of kernel {html.escape(self._kernel_name(cp.kernel_id))} #{cp.kernel_id}: "
            f"{len(cp.steps):,} steps over {format_ns(span)}; busy {format_ns(cp.busy_ns)}, waiting "
            f"{format_ns(cp.slack_ns)} (outlined on the timeline)")
        self._emit_path()
        self.critical_path_ready.emit()

    def _emit_path(self) -> None:
        if self.critical is not None:
            self.path_changed.emit(self.critical.steps, f"critical path of kernel #{self.critical.kernel_id}")
        elif self.chain is not None and self.show_chain.isChecked():  # outlined in time order
            self.path_changed.emit(self.chain.iloc[::-1].reset_index(drop=True), f"wait chain of {self.node}")
        else:
            self.path_changed.emit(None, "")

    # -- clicks -----------------------------------------------------------------------
    def _clicked(self, model: F.FrameTableModel, idx: QModelIndex, follow: bool) -> None:
        node = model.record(idx.row()).get("node")
        if not node:
            return
        if follow:
            self.follow.emit(node)
            return
        self.holding = True
        try:
            self.jump.emit(node)
        finally:
            self.holding = False
