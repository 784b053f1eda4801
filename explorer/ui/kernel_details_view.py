"""QtKernelDetails (objectName `kernel-details`): one kernel up close.

Shows `explorer.model.analysis.kernel_details.kernel_details(trace, kernel_id)` as it is:
the kernel's operator-table row, busy time per engine, the instruction mix, the
DMA queues, and the roofline of its dtype (`QtRoofline`). They are computed on the
selection's worker (tens of ms at 28M events): the header says so meanwhile, and a kernel
the user has left by the time its details arrive is not shown.

Showing them is staged over passes of the event loop (`worker.soon`), because each part's
repaint costs the GUI thread 5-15 ms and together they froze the window after a jump: the
previous kernel's tables, then its roofline's caption, are greyed in passes after the jump's own
repaint, the new tables come with the header, and the roofline (with its axes regenerated) in a pass
of its own.
The header and the roofline's caption keep the tallest height they have had for this trace, so
a kernel whose header is a line shorter does not lay the whole dock out again (~40 ms).
"""

from __future__ import annotations

import html
import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QTabWidget, QWidget

from explorer.model.analysis.kernel_details import KernelDetails, kernel_details
from explorer.model.units import format_bytes, format_ns, format_rate_gbps
from explorer.ui import frame_table as F
from explorer.ui.analysis_session import TraceAnalysis
from explorer.ui.operators_view import BOUND_COLOURS
from explorer.ui.panes import fill, keep_tallest, split, stack
from explorer.ui.roofline_plot import QtRoofline
from explorer.ui.selection_worker import latest
from explorer.ui.worker import after_repaint, soon

ENGINE_COLUMNS = (
    F.Column("engine", "engine", tip="Tensor = both Tensor rows (LoadStationary and MultiplyMoving); dma = its DMA queues."),
    F.Column("instruction_count", "instructions", F.count, "Instructions (or DMA transfers) of this kernel on the engine."),
    F.Column("busy_ns", "busy", F.ns, "Time the engine was busy with this kernel (union of its intervals)."),
    F.Column("busy_percent", "busy %", F.percent, "busy / the kernel's duration."),
)
MIX_COLUMNS = (
    F.Column("opcode", "opcode"),
    F.Column("engine", "engine"),
    F.Column("count", "count", F.count, "Instructions with this opcode on this engine."),
    F.Column("time_ns", "time", F.ns, "Summed instruction time."),
    F.Column("time_percent", "time %", F.percent, "Share of the kernel's summed instruction time."),
    F.Column("flops", "FLOPs", F.flops, "Summed FLOPs."),
    F.Column("bytes", "bytes", F.nbytes, "Summed SBUF/PSUM bytes read and written."),
)
DMA_COLUMNS = (
    F.Column("name", "queue"),
    F.Column("transfers", "transfers", F.count),
    F.Column("bytes", "bytes", F.nbytes),
    F.Column("busy_ns", "time", F.ns, "Summed transfer time on the queue."),
    F.Column("average_bytes_per_partition", "bytes/partition", F.nbytes,
             "Mean bytes per SBUF partition per transfer: under 2 KiB is inefficient."),
    F.Column("small_transfers", "small (<2 KiB/partition)", F.count),
)


class QtKernelDetails(QWidget):
    """Engine breakdown, instruction mix, DMA queues and roofline of the selected kernel."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("kernel-details")
        self.analysis: TraceAnalysis | None = None
        self.details: KernelDetails | None = None
        self.kernel_id: int | None = None
        self.header = QLabel("Select a kernel (or one of its instructions) in the operator tree or the timeline.")
        self.header.setObjectName("kernel-details-header")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.RichText)
        self.engines = F.FrameTableModel(ENGINE_COLUMNS, self)
        self.mix = F.FrameTableModel(MIX_COLUMNS, self)
        self.queues = F.FrameTableModel(DMA_COLUMNS, self)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("kernel-details-tabs")
        self.tabs.addTab(F.make_table(self.engines, "kernel-engines"), "Engines")
        self.tabs.addTab(F.make_table(self.mix, "kernel-instruction-mix"), "Instruction mix")
        self.tabs.addTab(F.make_table(self.queues, "kernel-dma-queues"), "DMA queues")
        self.roofline = QtRoofline()
        self._latest = latest()
        self._unfilled: KernelDetails | None = None  # computed while the panel was hidden
        self._rows: list[F.TableRows] = []  # its tables' rows, made on the worker with it
        fill(self, split(Qt.Horizontal, stack(self.header, self.tabs), self.roofline, stretch=(3, 2)), margin=2)

    def set_analysis(self, analysis: TraceAnalysis | None) -> None:
        self.analysis = analysis
        self.show_kernel(None)
        for label in (self.header, self.roofline.caption):
            label.setMinimumHeight(0)  # a new trace: heights start over

    def show_kernel(self, kernel_id: int | None) -> None:
        """Show a kernel's details once computed (None: none)."""
        if kernel_id == self.kernel_id and (self.details is not None or self._latest.pending is not None):
            return
        self.kernel_id = kernel_id
        self.details = None
        a = self.analysis
        self._unfilled = None
        if a is None or kernel_id is None:
            self._latest.cancel()
            for m in (self.engines, self.mix, self.queues):
                m.set_frame(None)
            self.roofline.clear()
            self._set_computing(False)
            self.header.setText("Select a kernel (or one of its instructions) in the operator tree or the timeline.")
            return
        # the previous kernel's tables stay, greyed, until these arrive (clearing the plot and
        # tables only to refill them cost the GUI thread ~30 ms per selection on a big trace);
        # greyed in a later pass than the jump's, whose repaint is the timeline's
        self._set_header(f"Kernel {kernel_id}: computing its engine time, instruction mix and roofline\u2026")
        after_repaint(lambda: self._grey(a, kernel_id))
        trace, h = a.trace, a.hierarchy
        def work() -> tuple[KernelDetails, list[F.TableRows]]:  # the tables' rows too: no pandas on the GUI thread
            d = kernel_details(trace, kernel_id, h)
            return d, [F.table_rows(f) for f in (d.engines, d.instruction_mix, d.dma_queues)]

        self._latest.submit(work, lambda ok, value: self._computed(a, kernel_id, ok, value))

    def _grey(self, a: TraceAnalysis, kernel_id: int, part: int = 0) -> None:
        """Grey the previous kernel's tables, then in the next pass its roofline's caption (each
        repaint ~5-10 ms), unless the new kernel's details are in (or another kernel is asked for) by
        then. Not the plot: a disabled pyqtgraph plot looks the same, and repainting it costs 5-15 ms."""
        if a is not self.analysis or kernel_id != self.kernel_id or self.details is not None:
            return
        if part == 0:
            self.tabs.setEnabled(False)
            soon(lambda: self._grey(a, kernel_id, 1))
        else:
            self.roofline.caption.setEnabled(False)

    def _set_computing(self, on: bool) -> None:
        self.tabs.setEnabled(not on)
        self.roofline.caption.setEnabled(not on)

    def _set_header(self, text: str) -> None:
        self.header.setText(text)
        keep_tallest(self.header)

    def _computed(self, a: TraceAnalysis, kernel_id: int, ok: bool, value) -> None:
        if a is not self.analysis or kernel_id != self.kernel_id:
            return  # another trace or kernel by now
        if not ok:
            self._set_computing(False)
            for m in (self.engines, self.mix, self.queues):
                m.set_frame(None)
            self.roofline.clear()
            self._set_header(html.escape(value))
            return
        d, self._rows = value
        self.details = d
        self._set_header(_header(d, a.trace.span_ns[0]))
        self._unfilled = d
        if not self.visibleRegion().isEmpty():  # behind another tab: filled when shown (the plot alone costs ~25 ms)
            self._fill()

    def _fill(self) -> None:
        d, self._unfilled = self._unfilled, None
        if d is None:
            return
        self.tabs.setEnabled(True)
        for model, rows in zip((self.engines, self.mix, self.queues), self._rows):
            model.set_frame(rows)
        # the plot (~10 ms, and its repaint ~15 ms more) in a pass of its own, greyed until then
        soon(lambda: d is self.details and self._plot(d))

    def _plot(self, d: KernelDetails) -> None:
        self.roofline.caption.setEnabled(True)
        self.roofline.show_roofline(d.roofline, str(d.kernel["name"]))  # (its caption keeps its tallest height)

    def on_shown(self, visible: bool) -> None:
        """The panel's dock was brought forward (its tab raised) or hidden."""
        if visible:
            self._fill()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self._fill()


def _num(v, fmt) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt(v)


def _header(d: KernelDetails, origin: int) -> str:
    k = d.kernel
    r = d.roofline
    bound = str(k.get("bound", ""))
    colour = BOUND_COLOURS.get(bound)
    bound_html = f"<span style='color:{colour.name()}'><b>{html.escape(bound)}</b></span>" if colour else bound
    eff = r.efficiency_percent
    lines = [
        f"<b>{html.escape(str(k['name']))}</b> kernel {k['kernel_id']} on chip {k['chip']} core {k['core']}"
        + (f", {html.escape(str(k['dtype']))}" if k.get("dtype") else "")
        + f": {format_ns(k['dur_ns'])} from {format_ns(k['start_ns'] - origin)} \u2014 "
        f"{bound_html} bound",
        f"{_num(k['tflops'], lambda v: f'{v:.3g} TFLOPS')} achieved"
        + (f" of {r.peak_tflops:g} ({r.dtype} roof)" if r.peak_tflops else "")
        + f", HBM {_num(k['gbps'], format_rate_gbps)} ({format_bytes(k['hbm_bytes'])}), intensity "
        f"{_num(r.point_intensity, lambda v: f'{v:.3g} FLOP/B')}"
        + (f" vs ridge {r.ridge_intensity:.3g}" if r.ridge_intensity else "")
        + (f"; {eff:.0f}% of the attainable roof" if eff is not None else "")
        + (f" with HBM at the core's share ({format_rate_gbps(r.bandwidth_gbps)} of the chip's "
           f"{format_rate_gbps(r.chip_bandwidth_gbps)})" if eff is not None and r.hbm_sharing > 1.001 else ""),
    ]
    chip = []
    if r.chip_hbm_percent is not None:
        chip.append(f"the chip's HBM was {r.chip_hbm_percent:.0f}% busy while it ran")
    if r.chip_efficiency_percent is not None and r.hbm_sharing > 1.001:
        chip.append(f"{r.chip_efficiency_percent:.0f}% of the whole chip's roof")
    if chip:
        text = "; ".join(chip)
        lines.append(text[0].upper() + text[1:])
    lines += [f"<i>{html.escape(n)}</i>" for n in d.notes]
    return "<br>".join(lines)
