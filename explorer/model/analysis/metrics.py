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

# what a person reads in the Summary panel; the Neuron-style names stay the keys of `--json`
_ENGINE_WORDS = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd", "sync": "Sync"}
LABELS: dict[str, str] = {
    "total_time_ns": "Total time", "core_count": "Cores with work", "chip_count": "Chips with work",
    "kernel_count": "Kernels", "total_active_time_ns": "Active time (all cores)",
    "total_active_time_percent": "Cores active", "hardware_flops": "Hardware FLOPs", "model_flops": "Model FLOPs",
    "transpose_flops": "Transpose FLOPs", "hardware_flops_bf16": "FLOPs as BF16", "achieved_tflops": "Achieved",
    "peak_bf16_tflops": "BF16 peak", "mfu_estimated_percent": "MFU bf16",
    "mfu_percent": "MFU", "hfu_estimated_percent": "HFU bf16",
    "mm_arithmetic_intensity": "Arithmetic intensity", "peak_flops_bandwidth_ratio": "Ridge point (BF16)",
    "hbm_read_bytes": "HBM read", "hbm_write_bytes": "HBM written", "hbm_read_bandwidth_gbps": "HBM read rate",
    "hbm_write_bandwidth_gbps": "HBM write rate", "hbm_bandwidth_gbps": "HBM rate", "mbu_estimated_percent": "MBU",
    "instruction_count": "Instructions",
    **{f"{e}_engine_instruction_count": f"{w} instructions" for e, w in _ENGINE_WORDS.items()},
    **{f"{e}_engine_active_time_ns": f"{w} active time" for e, w in _ENGINE_WORDS.items()},
    **{f"{e}_engine_active_time_percent": f"{w} active" for e, w in _ENGINE_WORDS.items()},
    "dma_active_time_ns": "DMA active time", "dma_active_time_percent": "DMA active",
    "dma_transfer_count": "DMA transfers", "dma_transfer_total_bytes": "DMA bytes",
    "dma_transfer_average_bytes": "DMA bytes per transfer", "dma_small_transfer_count": "Small transfers",
    "dma_small_transfer_percent": "Small transfers share", "cc_op_count": "Collective rank-rows",
    "cc_op_active_time_ns": "Collective time", "cc_op_active_time_percent": "Collectives active",
    "collective_wait_ns": "Collective wait", "collective_transfer_ns": "Collective transfer",
    "throttled_time_ns": "Throttled time", "throttled_time_percent": "Throttled share",
    "average_utilization_limit_percent": "Tensor rate allowed (mean)", "throttling_percent": "Throttling",
}


def label(name: str) -> str:
    """A metric's display name (the Neuron-style name where none is set)."""
    return LABELS.get(name, name)


def tooltip(spec: MetricSpec) -> str:
    """What hovering a metric says: its Neuron-style name and unit, and its definition."""
    return f"{spec.name} ({spec.unit})\n{spec.doc}"


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
        return f"{plain(value)} %"
    if unit == "FLOP":
        return f"{format_count(value)}FLOP" if abs(value) >= 1000 else f"{value:.0f} FLOP"
    if unit == "TFLOPS":
        return f"{plain(value)} TFLOPS"
    if unit == "FLOP/byte":
        return f"{plain(value)} FLOP/B"
    if unit == "tokens/s":
        return f"{value:,.1f} tokens/s" if abs(value) >= 1000 else f"{plain(value)} tokens/s"
    return f"{value:,}" if isinstance(value, int) else plain(value)


def plain(value: float, digits: int = 4) -> str:
    """`digits` significant digits (at most 6 decimals), never in scientific notation: 10,070 (not
    1.007e+04), 0.000008 (not 8e-06); what rounds to 0 at 6 decimals reads "< 0.000001"."""
    a = abs(value)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{value:,.0f}"
    if a >= 1:
        return f"{value:.{digits}g}"
    decimals = min(digits - 1 - math.floor(math.log10(a)), 6)
    text = f"{value:.{decimals}f}".rstrip("0").rstrip(".")
    if text in ("0", "-0"):
        return "< 0.000001" if value > 0 else "> -0.000001"
    return text


def format_quantity(value: float, unit: str) -> str:
    """A counter sample in its unit (4.9 TB/s, 32 MiB, 87 %, 3.1 W): `format_metric`'s text for
    the units it knows, the number and the unit for any other."""
    if unit in ("ns", "bytes", "GB/s", "%", "FLOP", "TFLOPS", "FLOP/byte"):
        return format_metric(value, unit)
    return f"{value:.4g} {unit}".rstrip()
