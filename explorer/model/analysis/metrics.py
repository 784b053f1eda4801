"""The summary metrics: names, units, groups and one-line definitions.

One list, in display order, used by the summary panel, `trnx summary`, `trnx diff`
and the docs test (docs/metrics.md defines every name here in full). Names follow
the Neuron profiler's summary where it has one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from explorer.model.tracks import ENGINES
from explorer.model.units import format_bytes, format_count, format_ns, format_rate_gbps


@dataclass(frozen=True)
class MetricSpec:
    name: str
    unit: str  # ns, FLOP, bytes, %, GB/s, TFLOPS, FLOP/byte, count
    group: str  # time, compute, memory, engines, dma, collectives, power
    doc: str
    higher_is_better: bool | None = None  # for diff colouring; None = neutral


def _m(name: str, unit: str, group: str, doc: str, better: bool | None = None) -> MetricSpec:
    return MetricSpec(name, unit, group, doc, better)


METRICS: tuple[MetricSpec, ...] = (
    _m("total_time_ns", "ns", "time", "Length of the window summarised (the trace span, or the selection).", False),
    _m("core_count", "count", "time", "NeuronCores in scope that ran work (a kernel or an instruction)."),
    _m("chip_count", "count", "time", "Chips those cores belong to."),
    _m("kernel_count", "count", "time", "Kernels overlapping the window on the cores in scope."),
    _m("total_active_time_ns", "ns", "time", "Per core, time covered by any kernel, engine instruction or DMA transfer; summed over cores."),
    _m("total_active_time_percent", "%", "time", "total_active_time_ns / (total_time_ns x core_count).", True),
    # compute
    _m("hardware_flops", "FLOP", "compute", "FLOPs executed (kernels.flops, prorated to the window)."),
    _m("model_flops", "FLOP", "compute", "FLOPs the model needs (kernels.model_flops, prorated to the window)."),
    _m("transpose_flops", "FLOP", "compute", "FLOPs of tensor-engine Transpose instructions in scope."),
    _m("hardware_flops_bf16", "FLOP", "compute", "hardware_flops normalised to BF16 with tensor.bf16_flop_weight of each kernel's dtype."),
    _m("achieved_tflops", "TFLOPS", "compute", "hardware_flops / total_time.", True),
    _m("peak_bf16_tflops", "TFLOPS", "compute", "2 x rows x cols x clock x core_count: the BF16 ceiling MFU divides by."),
    _m("mfu_estimated_percent", "%", "compute", "(hardware_flops_bf16 - transpose_flops_bf16) / (peak_bf16_tflops x total_time).", True),
    _m("mfu_percent", "%", "compute", "MFU against each kernel's own dtype peak: (hardware FLOPs at their dtype's per-core peak, less transposes) / (total_time x core_count); an MXFP8 run against the MXFP8 peak, where mfu_estimated_percent normalises to BF16 as the Neuron profiler does.", True),
    _m("hfu_estimated_percent", "%", "compute", "hardware_flops_bf16 / (peak_bf16_tflops x total_time).", True),
    _m("mm_arithmetic_intensity", "FLOP/byte", "compute", "hardware_flops / (hbm_read_bytes + hbm_write_bytes)."),
    _m("peak_flops_bandwidth_ratio", "FLOP/byte", "compute", "BF16 peak FLOP/s of one core / HBM bytes/s of one chip: the roofline ridge point."),
    # memory
    _m("hbm_read_bytes", "bytes", "memory", "Bytes read from HBM (kernels.hbm_read_bytes, prorated)."),
    _m("hbm_write_bytes", "bytes", "memory", "Bytes written to HBM (kernels.hbm_write_bytes, prorated)."),
    _m("hbm_read_bandwidth_gbps", "GB/s", "memory", "hbm_read_bytes / total_time.", True),
    _m("hbm_write_bandwidth_gbps", "GB/s", "memory", "hbm_write_bytes / total_time.", True),
    _m("hbm_bandwidth_gbps", "GB/s", "memory", "(hbm_read_bytes + hbm_write_bytes) / total_time.", True),
    _m("mbu_estimated_percent", "%", "memory", "hbm_bandwidth_gbps / (hbm.bandwidth_gbps x chip_count).", True),
    # engines
    _m("instruction_count", "count", "engines", "Engine instructions overlapping the window on the tracks in scope."),
    *(
        spec
        for e in ENGINES
        for spec in (
            _m(f"{e}_engine_instruction_count", "count", "engines", f"Instructions on {e} engine tracks overlapping the window."),
            _m(f"{e}_engine_active_time_ns", "ns", "engines", f"Per core, time covered by {e} engine instructions; summed over cores."),
            _m(
                f"{e}_engine_active_time_percent", "%", "engines",
                f"{e}_engine_active_time_ns / (total_time_ns x cores with a {e} track in scope).", True,
            ),
        )
    ),
    # dma
    _m("dma_active_time_ns", "ns", "dma", "Per core, time covered by any DMA transfer on its queues; summed over cores."),
    _m("dma_active_time_percent", "%", "dma", "dma_active_time_ns / (total_time_ns x cores with DMA queues in scope)."),
    _m("dma_transfer_count", "count", "dma", "DMA transfers overlapping the window."),
    _m("dma_transfer_total_bytes", "bytes", "dma", "Bytes of those transfers (whole transfers)."),
    _m("dma_transfer_average_bytes", "bytes", "dma", "dma_transfer_total_bytes / dma_transfer_count.", True),
    _m("dma_small_transfer_count", "count", "dma", "Transfers under 2 KiB per partition (bytes / partitions < 2048).", False),
    _m("dma_small_transfer_percent", "%", "dma", "dma_small_transfer_count / dma_transfer_count.", False),
    # collectives
    _m("cc_op_count", "count", "collectives", "Collective rank-rows overlapping the window (one per rank per collective)."),
    _m("cc_op_active_time_ns", "ns", "collectives", "Per rank, time covered by collectives from arrival to end (waiting or transferring); summed."),
    _m("cc_op_active_time_percent", "%", "collectives", "cc_op_active_time_ns / (total_time_ns x chip_count)."),
    _m("collective_wait_ns", "ns", "collectives", "Sum over ranks of time spent waiting for the last rank (arrive -> start).", False),
    _m("collective_transfer_ns", "ns", "collectives", "Sum over ranks of transfer time (start -> end)."),
    # power
    _m("throttled_time_ns", "ns", "power", "Per core, time the Throttling counter was below 100%; summed over cores.", False),
    _m("throttled_time_percent", "%", "power", "throttled_time_ns / (total_time_ns x cores with a Throttling counter).", False),
    _m("average_utilization_limit_percent", "%", "power", "Time-weighted mean of the Throttling counter, the tensor engine's allowed rate (100 = never throttled; the Neuron profiler's name).", True),
    _m("throttling_percent", "%", "power", "Time-weighted mean of how far the Throttling counter held the tensor engine below its full rate: 100 - the allowed rate (0 = never throttled), as Neuron Explorer shows throttling.", False),
)

METRIC_BY_NAME: dict[str, MetricSpec] = {m.name: m for m in METRICS}
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(m.group for m in METRICS))


def markdown_table_of(specs: tuple[MetricSpec, ...]) -> str:
    lines = ["| metric | unit | group | definition |", "|---|---|---|---|"]
    lines += [f"| `{m.name}` | {m.unit} | {m.group} | {m.doc} |" for m in specs]
    return "\n".join(lines)


def markdown_table() -> str:
    """The metric reference table of docs/metrics.md (a test keeps the two equal)."""
    return markdown_table_of(METRICS)


def format_metric(value: Any, unit: str) -> str:
    """A metric value as a person reads it ("n/a" when unavailable): the CLI's and the GUI's text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool) or unit == "yes/no":
        return "yes" if value else "no"
    if unit == "ns":
        return format_ns(value)
    if unit == "bytes":
        return format_bytes(value)
    if unit == "GB/s":
        return format_rate_gbps(value)
    if unit == "%":
        return f"{value:.4g} %"
    if unit == "FLOP":
        return f"{format_count(value)}FLOP" if abs(value) >= 1000 else f"{value:.0f} FLOP"
    if unit == "TFLOPS":
        return f"{value:.4g} TFLOPS"
    if unit == "FLOP/byte":
        return f"{value:.4g} FLOP/B"
    if unit == "tokens/s":
        return f"{value:,.1f} tokens/s" if abs(value) >= 1000 else f"{value:.4g} tokens/s"
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


def format_quantity(value: float, unit: str) -> str:
    """A counter sample in its unit (4.9 TB/s, 32 MiB, 87 %, 3.1 W): `format_metric`'s text for
    the units it knows, the number and the unit for any other."""
    if unit in ("ns", "bytes", "GB/s", "%", "FLOP", "TFLOPS", "FLOP/byte"):
        return format_metric(value, unit)
    return f"{value:.4g} {unit}".rstrip()
