"""What one captured step delivers: step time, tokens per second (per chip) and HBM per chip.

A model capture is one step of its phase over `batch` sequences: decode makes one new
token per sequence, prefill and train take `seq` new tokens per sequence. These figures
are the whole trace's (its span is the step), so they sit beside the summary metrics
rather than among them (which summarise any window). `trnx summary` prints them, and
`trnx sweep` records them for every configuration of a grid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from explorer.model.analysis.metrics import MetricSpec, markdown_table_of
from simcore.trace import Trace


def _m(name: str, unit: str, doc: str, better: bool | None = None) -> MetricSpec:
    return MetricSpec(name, unit, "step", doc, better)


STEP_METRICS: tuple[MetricSpec, ...] = (
    _m("step_time_ns", "ns", "Wall time of the captured step: the trace span (total_time_ns of the whole trace). With "
       "--layers N, the first N layers only.", False),
    _m("chips_used", "count", "Chips the step ran on (meta.json hardware.chips)."),
    _m("tokens_per_step", "count", "Tokens one step produces: batch for decode (one per sequence), batch x seq for "
       "prefill and train; n/a for micro-benchmarks and op graphs."),
    _m("tokens_per_s", "tokens/s", "tokens_per_step / step_time.", True),
    _m("tokens_per_s_per_chip", "tokens/s", "tokens_per_s / chips_used.", True),
    _m("hbm_bytes_per_chip", "bytes", "HBM the deployment needs on its fullest chip: weights, KV cache, activations "
       "(and for training gradients and optimizer state) as the capture sized them (meta.json "
       "capture.memory_bytes); n/a for micro-benchmarks and op graphs.", False),
    _m("hbm_capacity_bytes_per_chip", "bytes", "HBM one chip has (hardware.hbm.capacity_bytes)."),
    _m("fits", "yes/no", "hbm_bytes_per_chip <= hbm_capacity_bytes_per_chip (a capture refuses a model that does "
       "not fit, so a trace of a model says yes)."),
)
STEP_METRIC_BY_NAME: dict[str, MetricSpec] = {m.name: m for m in STEP_METRICS}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def tokens_per_step(workload: Mapping[str, Any]) -> int | None:
    """Tokens a model step produces (None for micro-benchmarks and op graphs)."""
    if workload.get("kind") != "model":
        return None
    batch = _number(workload.get("batch"))
    if batch is None:
        return None
    if workload.get("phase") == "decode":
        return int(batch)
    seq = _number(workload.get("seq"))
    return None if seq is None else int(batch * seq)


def step_metrics(trace: Trace, total_time_ns: float | None) -> dict[str, Any]:
    """The step figures of `trace`, given its whole-trace `total_time_ns` (summarize(trace)'s);
    None where the trace does not say (an imported trace has no batch or memory sizes)."""
    hw, capture = trace.hardware, trace.meta.get("capture") or {}
    chips = _number(hw.get("chips")) or 1.0
    tokens = tokens_per_step(trace.workload)
    step = _number(total_time_ns)
    per_s = tokens / (step * 1e-9) if tokens is not None and step else None
    memory = capture.get("memory_bytes") if isinstance(capture, Mapping) else None
    parts = [_number(v) for v in memory.values()] if isinstance(memory, Mapping) and memory else []
    need = int(sum(parts)) if parts and None not in parts else None
    cap = _number((hw.get("hbm") or {}).get("capacity_bytes")) if isinstance(hw.get("hbm"), Mapping) else None
    return {
        "step_time_ns": step,
        "chips_used": int(chips),
        "tokens_per_step": tokens,
        "tokens_per_s": per_s,
        "tokens_per_s_per_chip": None if per_s is None else per_s / chips,
        "hbm_bytes_per_chip": need,
        "hbm_capacity_bytes_per_chip": None if cap is None else int(cap),
        "fits": None if need is None or cap is None else need <= cap,
    }


def markdown_table() -> str:
    """The step table of docs/metrics.md (a test keeps the two equal)."""
    return markdown_table_of(STEP_METRICS)
