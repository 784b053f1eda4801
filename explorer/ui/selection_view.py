"""QtSelectionSummary: what an area selection (rows x time range) contains."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QTextBrowser, QVBoxLayout, QWidget

from explorer.model.scope import Scope
from explorer.model.timeline.selection import SelectionSummary, summarize_area
from explorer.model.timeline.trace_index import TraceIndex
from explorer.model.analysis.metrics import format_metric
from explorer.model.units import format_bytes, format_ns, format_rate_gbps

MAX_OPCODES = 25


class QtSelectionSummary(QWidget):
    """Renders `explorer.model.timeline.selection.summarize_area` for the current area selection."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("selection-summary")
        self.index: TraceIndex | None = None
        self.summary: SelectionSummary | None = None
        self.text = QTextBrowser()
        self.text.setObjectName("selection-text")
        self.text.setOpenLinks(False)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.text)
        self.show_selection(None)

    def set_index(self, index: TraceIndex | None) -> None:
        self.index = index
        self.show_selection(None)

    def show_selection(self, sel: Scope | None) -> None:
        if sel is None or self.index is None or not sel.track_ids:
            self.summary = None
            self.text.setHtml("<p>Shift+drag across rows in the timeline to select an area "
                              "and see what it contains.</p>")
            return
        s = self.summary = summarize_area(self.index, sel)
        self.text.setHtml(_render(self.index, s))


def _row(*cells: str, head: bool = False) -> str:
    tag = "th" if head else "td"
    return "<tr>" + "".join(f"<{tag} align='{'left' if i == 0 else 'right'}'>{c}</{tag}>" for i, c in enumerate(cells)) + "</tr>"


def _render(index: TraceIndex, s: SelectionSummary) -> str:
    sel = s.selection
    out = [
        f"<h3>{len(sel.track_ids)} rows \u00d7 {format_ns(sel.duration_ns)}</h3>",
        f"<p>from {format_ns(sel.t0 - index.span[0])} to {format_ns(sel.t1 - index.span[0])}</p>",
        "<h4>Busy time per engine</h4><table width='100%' cellspacing='0' cellpadding='2'>",
        _row("row", "busy", "%", head=True),
    ]
    for tid, busy in sorted(s.busy_ns.items(), key=lambda kv: -kv[1]):
        t = index.tracks[tid]
        name = f"{t.name} (c{t.chip}" + (f".{t.core})" if t.core >= 0 else ")")
        out.append(_row(html.escape(name), format_ns(busy), f"{s.busy_percent[tid]:.1f}%"))
    out.append("</table>")
    out.append(f"<h4>Instructions: {s.instructions:,} ({format_metric(s.flops, 'FLOP')})</h4>")
    if s.opcode_counts:
        out.append("<table width='100%' cellspacing='0' cellpadding='2'>" + _row("opcode", "count", head=True))
        for op, n in list(s.opcode_counts.items())[:MAX_OPCODES]:
            out.append(_row(html.escape(op), f"{n:,}"))
        if len(s.opcode_counts) > MAX_OPCODES:
            out.append(_row(f"\u2026 {len(s.opcode_counts) - MAX_OPCODES} more", ""))
        out.append("</table>")
    out.append("<h4>Data movement</h4><table width='100%' cellspacing='0' cellpadding='2'>")
    out.append(_row("DMA bytes moved", f"{format_bytes(s.dma_bytes)} in {s.dma_transfers:,} transfers"))
    out.append(_row("DMA rate", format_rate_gbps(s.dma_gbps)))
    if s.hbm_read_gbps is not None:
        out.append(_row("average HBM read", format_rate_gbps(s.hbm_read_gbps)))
        out.append(_row("average HBM write", format_rate_gbps(s.hbm_write_gbps or 0.0)))
    else:
        out.append(_row("average HBM bandwidth", "no HBM counters for these chips"))
    out.append("</table>")
    out.append(f"<h4>Collectives: {s.collectives:,} rank slices</h4>")
    out.append(f"<p>collective wait time: {format_ns(s.collective_wait_ns)}</p>")
    return "".join(out)
