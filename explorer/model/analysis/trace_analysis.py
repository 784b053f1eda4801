"""The analyses of one trace, composed once: what `trnx summary` reports and what the GUI's panels show.

`TraceAnalysis(trace, scope)` computes each part on first use (summary, per-chip
summaries, operator tree, recommendations, dependencies, collectives, temporal
breakdown): the CLI asks for `report()`, the window calls `for_window(index)` off
its GUI thread to have the panels' parts ready. Both read the same properties, so a
number cannot differ between them; a new analysis is one more property here.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from explorer.model.analysis.collective_stats import collective_table
from explorer.model.analysis.dependencies import Dependencies
from explorer.model.analysis.hierarchy import Hierarchy
from explorer.model.analysis.recommendations import Recommendation, recommend
from explorer.model.tracks import Tracks
from explorer.model.scope import Scope
from explorer.model.analysis.step_breakdown import StepBreakdown, step_breakdown
from explorer.model.analysis.summary import Summary, summarize, summarize_per_chip, summarize_trace_and_chips
from explorer.model.analysis.temporal import TemporalSummary, temporal_summary
from explorer.model.timeline.trace_index import EventRef, TraceIndex
from simcore.trace import Trace
from simcore.trace import read_ahead

WINDOW_READS: dict[str, tuple[str, ...]] = {
    "instructions": ("id", "track_id", "start_ns", "dur_ns", "opcode", "kernel_id"),
    "dma": ("id", "track_id", "start_ns", "dur_ns", "bytes", "partitions", "kernel_id"),
    "flows": ("src_id", "dst_id"),
}
"""The big tables' columns `for_window`'s analyses read whole, in the order they first read them (the
summary; the operator tree's ids; the recommendations' flows): measured with the trace's pages counted
before and after each (docs/PERFORMANCE.md). They are read ahead of the analyses on a trace not in
the page cache; a column missing here is only read when the analyses reach it, as before."""


class TraceAnalysis:
    """A trace's analyses over a scope (the whole trace by default), each computed once."""

    def __init__(self, trace: Trace, scope: Scope | None = None, index: TraceIndex | None = None) -> None:
        self.trace = trace
        self.scope = scope or Scope()
        self.index = index  # the timeline's index, when a window shows the trace (its id index is shared)

    @property
    def whole(self) -> bool:
        return self.scope == Scope()

    @classmethod
    def for_window(cls, index: TraceIndex) -> TraceAnalysis:
        """Everything the analysis panels show, computed now (run it off the GUI thread)."""
        a = cls(index.trace, index=index)
        ahead = a.read_ahead(WINDOW_READS)  # their columns from disk beside the analyses, not in between
        try:
            a.summary, a.per_chip = summarize_trace_and_chips(a.trace)  # one pass for both
            a.hierarchy.children("")  # the tree's top level and its child index
            _ = a.hierarchy.events  # id -> row, for timeline -> tree
            _ = a.recommendations
            _ = a.dependencies
            _ = a.step_breakdown
        finally:
            if ahead is not None:
                ahead.stop()
        return a

    def read_ahead(self, columns: dict[str, tuple[str, ...]]) -> read_ahead.ReadAhead | None:
        """Start reading `columns` of the trace's tables ahead, on a thread (`simcore.trace.read_ahead`)."""
        tables = {name: self.trace.table(name) for name in columns if self.trace.has_table(name)}
        return read_ahead.start(read_ahead.table_ranges(tables, columns), keep=tables)

    # -- the parts ----------------------------------------------------------------------
    @cached_property
    def resolved_scope(self) -> Scope:
        return self.scope.resolve(self.trace, Tracks.of(self.trace))

    @cached_property
    def summary(self) -> Summary:
        return summarize(self.trace, scope=self.scope)

    @cached_property
    def per_chip(self) -> dict[int, Summary]:
        """Each chip's summary (in the scope's window and cores; only the scope's chips)."""
        chips = self.scope.chips
        return {c: s for c, s in summarize_per_chip(self.trace, scope=self.scope).items() if chips is None or c in chips}

    @cached_property
    def hierarchy(self) -> Hierarchy:
        return Hierarchy(self.trace, events=self.index.events if self.index is not None else None)

    @cached_property
    def recommendations(self) -> list[Recommendation]:
        """The rules always look at the whole trace (a scoped summary is not theirs to use)."""
        return recommend(self.trace, hierarchy=self.hierarchy, summary=self.summary if self.whole else None)

    @cached_property
    def dependencies(self) -> Dependencies:
        h = self.hierarchy
        return Dependencies(self.trace, events=h.events, tracks=h.tracks)  # its event tables build on first use

    @cached_property
    def step(self) -> dict[str, Any] | None:
        """Step time, tokens/s (per chip), HBM per chip: the whole trace's figures (None when scoped)."""
        from explorer.model.analysis.step import step_metrics

        return step_metrics(self.trace, self.summary.metrics["total_time_ns"]) if self.whole else None

    @cached_property
    def step_breakdown(self) -> StepBreakdown | None:
        """Where the step's time goes on its critical chip (compute, HBM, collectives, waits, runtime...),
        summing to the step time: the whole trace's (None when scoped or without kernels)."""
        if not self.whole or self.trace.row_count("kernels") == 0:
            return None
        return step_breakdown(self.trace, self.hierarchy.kernels)

    @cached_property
    def collectives(self) -> list[dict[str, Any]]:
        return collective_table(self.trace, self.resolved_scope).to_dict("records")

    @cached_property
    def temporal(self) -> TemporalSummary | None:
        """Per-rank breakdown; None with fewer than two ranks and no communication."""
        return temporal_summary(self.trace, self.resolved_scope)

    def report(self, *, per_chip: bool = False, recommendations: bool = True) -> dict[str, Any]:
        """Everything `trnx summary` prints, as plain data (what `--json` emits)."""
        from explorer.model.analysis.profile_summary import profile_comparison

        trace = self.trace
        out: dict[str, Any] = {
            "trace": str(trace.path),
            "hardware": trace.hardware.get("name", "unknown"),
            "workload": trace.workload.get("name", "unknown"),
            **self.summary.to_dict(),
        }
        if self.step is not None:   # the step is the whole trace
            out["step"] = self.step
        out["step_breakdown"] = None if self.step_breakdown is None else self.step_breakdown.to_dict()
        if per_chip:
            out["per_chip"] = {str(c): s.metrics for c, s in self.per_chip.items()}
        out["collectives"] = self.collectives
        out["temporal"] = None if self.temporal is None else self.temporal.to_dict()
        chips = None if self.scope.chips is None else list(self.scope.chips)
        out["profile_summary"] = [c.to_dict() for c in profile_comparison(trace, chips)]
        if recommendations:
            out["recommendations"] = [r.to_dict() for r in self.recommendations]
        return out

    # -- node <-> timeline -----------------------------------------------------------
    def node_of_ref(self, ref: EventRef) -> str | None:
        """The operator-tree node of a timeline event (None when it has none)."""
        table = self.index.tables.get(ref.table)
        if table is None:
            return None
        if ref.table == "instructions":
            return f"instruction:{int(table.value('id', ref.row))}"
        if ref.table == "dma":
            return f"dma:{int(table.value('id', ref.row))}"
        if ref.table == "kernels":
            return f"kernel:{int(table.value('kernel_id', ref.row))}"
        if ref.table == "collectives":
            op = int(table.value("op_id", ref.row))
            return f"op:{op}" if op >= 0 else None
        return None

    def ref_of_node(self, node: str) -> EventRef | None:
        """The timeline event of a node: an instruction, a DMA transfer or a kernel (ops have none)."""
        level, _, ident = node.partition(":")
        if level in ("instruction", "dma"):
            return self.index.find_id(int(ident))
        if level == "kernel" and self.index.kernel_ops is not None:
            row = int(self.index.kernel_ops.kernel_row(np.array([int(ident)]))[0])
            return EventRef("kernels", row) if row >= 0 else None
        return None

    def kernel_of_node(self, node: str) -> int | None:
        """The kernel a node is or belongs to (None for ops and events outside kernels)."""
        level, _, ident = node.partition(":")
        if level == "kernel":
            return int(ident)
        if level in ("instruction", "dma"):
            kid = self.hierarchy.events.event(int(ident)).kernel_id
            return kid if kid >= 0 else None
        return None
