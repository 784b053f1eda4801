"""The hardware ceilings analyses divide by, read from a trace's `meta.json` hardware.

Every figure is optional: an imported GPU trace has none of these keys, so each
accessor returns None (and `missing(...)` says which key was absent) rather than
inventing a number. Keys and units follow docs/trace-format.md ("hardware keys
analyses rely on").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simcore.dtypes import bf16_flop_weight, peak_tflops



def _get(hw: Mapping[str, Any], dotted: str) -> Any:
    node: Any = hw
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value > 0 else None


@dataclass(frozen=True)
class Peaks:
    """Per-core tensor-engine and per-chip memory ceilings of the traced hardware."""

    name: str
    chips: int | None
    cores_per_chip: int | None
    rows: float | None
    cols: float | None
    clock_ghz: float | None
    peak_tflops: dict[str, float] = field(default_factory=dict)  # per core, by dtype
    bf16_flop_weight: dict[str, float] = field(default_factory=dict)
    hbm_bandwidth_gbps: float | None = None  # per chip
    link_bandwidth_gbps: float | None = None  # per chip

    @classmethod
    def from_meta(cls, hardware: Mapping[str, Any] | None) -> Peaks:
        hw = hardware or {}
        peak = _get(hw, "tensor.peak_tflops")
        weight = _get(hw, "tensor.bf16_flop_weight")
        chips = _positive(_get(hw, "chips"))
        cores = _positive(_get(hw, "cores_per_chip"))
        return cls(
            name=str(hw.get("name", "unknown")),
            chips=int(chips) if chips else None,
            cores_per_chip=int(cores) if cores else None,
            rows=_positive(_get(hw, "tensor.rows")),
            cols=_positive(_get(hw, "tensor.cols")),
            clock_ghz=_positive(_get(hw, "tensor.clock_ghz")),
            peak_tflops={str(k): float(v) for k, v in (peak or {}).items() if _positive(v)},
            bf16_flop_weight={str(k): float(v) for k, v in (weight or {}).items() if _positive(v)},
            hbm_bandwidth_gbps=_positive(_get(hw, "hbm.bandwidth_gbps")),
            link_bandwidth_gbps=_positive(_get(hw, "link.bandwidth_gbps")),
        )

    # -- tensor engine -----------------------------------------------------------
    @property
    def bf16_flops_per_s_per_core(self) -> float | None:
        """2 x rows x cols x clock: the BF16 FLOP/s one core's systolic array can do."""
        if self.rows is None or self.cols is None or self.clock_ghz is None:
            return None
        return 2.0 * self.rows * self.cols * self.clock_ghz * 1e9

    def weight(self, dtype: str) -> float | None:
        """Factor that normalises `dtype` FLOPs to BF16 FLOPs (bf16 1, fp8 0.5, mxfp8 0.25):
        `tensor.bf16_flop_weight`, else the ratio of peaks (simcore.dtypes.bf16_flop_weight)."""
        return bf16_flop_weight(self.bf16_flop_weight, self.peak_tflops, dtype)

    def peak_tflops_for(self, dtype: str) -> float | None:
        """Per-core tensor-engine peak for `dtype` (TFLOPS), or None (simcore.dtypes.peak_tflops;
        without a BF16 peak, the array's 2 x rows x cols x clock)."""
        array = self.bf16_flops_per_s_per_core
        return peak_tflops(self.bf16_flop_weight, self.peak_tflops, dtype, None if array is None else array / 1e12)

    # -- memory ------------------------------------------------------------------
    @property
    def hbm_bytes_per_s(self) -> float | None:
        return None if self.hbm_bandwidth_gbps is None else self.hbm_bandwidth_gbps * 1e9

    def ridge_flops_per_byte(self, dtype: str) -> float | None:
        """Arithmetic intensity where `dtype`'s compute roof meets one chip's HBM roof."""
        p = self.peak_tflops_for(dtype)
        if p is None or self.hbm_bytes_per_s is None:
            return None
        return p * 1e12 / self.hbm_bytes_per_s

    def missing_tensor_keys(self) -> list[str]:
        keys = {"tensor.rows": self.rows, "tensor.cols": self.cols, "tensor.clock_ghz": self.clock_ghz}
        return [k for k, v in keys.items() if v is None]
