"""A Neuron Explorer profile's own Summary beside ours, with every disagreement named.

An imported profile keeps each rank's `Summary` row (meta.neuron_profile). For each
field with a counterpart in `explorer.model.analysis.metrics`, `profile_comparison` converts the
profile's value to our unit (seconds -> ns) and sets it beside our metric for that rank
(its chip, over the rank's own window), flagging a disagreement beyond the tolerance:
0.05 percentage points for percentages, 0.5% of the larger value otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from explorer.model.analysis.metrics import METRIC_BY_NAME
from explorer.model.tracks import ENGINES
from explorer.model.analysis.summary import summarize
from simcore.trace import Trace

# (Neuron Summary field, our metric, factor from Neuron's unit to ours)
FIELD_MAP: tuple[tuple[str, str, float], ...] = (
    ("total_time", "total_time_ns", 1e9),
    ("hardware_flops", "hardware_flops", 1.0),
    ("model_flops", "model_flops", 1.0),
    ("transpose_flops", "transpose_flops", 1.0),
    ("adjusted_hardware_flops", "hardware_flops_bf16", 1.0),
    ("mfu_estimated_percent", "mfu_estimated_percent", 1.0),
    ("hfu_estimated_percent", "hfu_estimated_percent", 1.0),
    ("mm_arithmetic_intensity", "mm_arithmetic_intensity", 1.0),
    ("peak_flops_bandwidth_ratio", "peak_flops_bandwidth_ratio", 1.0),
    ("hbm_read_bytes", "hbm_read_bytes", 1.0),
    ("hbm_write_bytes", "hbm_write_bytes", 1.0),
    ("mbu_estimated_percent", "mbu_estimated_percent", 1.0),
    *((f, m, k) for e in ENGINES for f, m, k in (
        (f"{e}_engine_instruction_count", f"{e}_engine_instruction_count", 1.0),
        (f"{e}_engine_active_time", f"{e}_engine_active_time_ns", 1e9),
        (f"{e}_engine_active_time_percent", f"{e}_engine_active_time_percent", 1.0))),
    ("dma_active_time", "dma_active_time_ns", 1e9),
    ("dma_active_time_percent", "dma_active_time_percent", 1.0),
    ("dma_transfer_count", "dma_transfer_count", 1.0),
    ("dma_transfer_total_bytes", "dma_transfer_total_bytes", 1.0),
    ("dma_transfer_average_bytes", "dma_transfer_average_bytes", 1.0),
    ("cc_op_count", "cc_op_count", 1.0),
    ("cc_op_active_time", "cc_op_active_time_ns", 1e9),
    ("cc_op_active_time_percent", "cc_op_active_time_percent", 1.0),
    ("total_active_time", "total_active_time_ns", 1e9),
    ("total_active_time_percent", "total_active_time_percent", 1.0),
)
PERCENT_TOLERANCE = 0.05  # percentage points
RELATIVE_TOLERANCE = 0.005


@dataclass(frozen=True)
class ComparedMetric:
    chip: int
    field: str  # the Neuron Summary field
    metric: str  # ours
    unit: str
    profile: float
    ours: float | None
    disagrees: bool

    def to_dict(self) -> dict[str, Any]:
        return {"chip": self.chip, "field": self.field, "metric": self.metric, "unit": self.unit,
                "profile": self.profile, "ours": self.ours, "disagrees": self.disagrees}


def disagree(a: float, b: float, unit: str) -> bool:
    if unit == "%":
        return abs(a - b) > PERCENT_TOLERANCE
    return abs(a - b) > RELATIVE_TOLERANCE * max(abs(a), abs(b))


def profile_ranks(trace: Trace) -> list[dict[str, Any]]:
    """meta.neuron_profile.ranks of an imported profile ([] for any other trace)."""
    block = trace.meta.get("neuron_profile")
    ranks = block.get("ranks") if isinstance(block, dict) else None
    return [r for r in ranks if isinstance(r, dict)] if isinstance(ranks, list) else []


def profile_comparison(trace: Trace, chips: list[int] | None = None) -> list[ComparedMetric]:
    """Each rank's Summary field beside our metric for that chip and window (empty for other traces)."""
    out: list[ComparedMetric] = []
    for rank in profile_ranks(trace):
        summary, chip = rank.get("summary"), rank.get("chip")
        if not isinstance(summary, dict) or not isinstance(chip, int) or (chips and chip not in chips):
            continue
        window = rank.get("window_ns")
        lo, hi = trace.span_ns
        if isinstance(window, list) and len(window) == 2 and all(isinstance(x, int) for x in window) and window[1] > window[0]:
            lo, hi = max(lo, window[0]), min(hi, window[1])
        ours = summarize(trace, chips=[chip], time_range=(lo, hi)).metrics
        for field, metric, factor in FIELD_MAP:
            value = summary.get(field)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            unit = METRIC_BY_NAME[metric].unit
            mine = ours.get(metric)
            theirs = float(value) * factor
            out.append(ComparedMetric(chip, field, metric, unit, theirs, None if mine is None else float(mine),
                                      mine is not None and disagree(theirs, float(mine), unit)))
    return out
