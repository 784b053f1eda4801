"""Instruction costs from the hardware preset (cycles -> ns), vectorised over instructions.

The rules (shared/reference/trn3-hardware.md): a MultiplyMoving costs max(N, 64) cycles of
the tensor clock for an N-column moving tile (x4 for FP32); Vector/Scalar instructions cost
overhead + max(64, N / rate) cycles for N elements per partition; GpSimd 150 + N; a DMA
moves bytes on the engines its partitions map to (8 partitions per engine) at the rate an
engine sustains, derated when it moves under 4 KiB per partition (a per-partition descriptor
cost).
"""

from __future__ import annotations

import numpy as np

from simcore.dtypes import is_narrow
from simcore.hardware import Hardware
from simcore.lowering.engines import SCALAR, VECTOR

def _elem_rate(table: dict, dtype: str, partitions: int) -> float:
    """Elements per partition-cycle of an engine for `dtype`: its own entry, else the FP32 one,
    else (without FP32) BF16's for a narrow dtype, else the table's first."""
    key = dtype if dtype in table else "fp32"
    if key not in table:
        key = "bf16" if is_narrow(dtype) and "bf16" in table else next(iter(table))
    return float(table[key]) / partitions


def matmul_ns(hw: Hardware, n_moving, dtype: str) -> np.ndarray:
    """MultiplyMoving duration for moving tiles of `n_moving` columns."""
    t = hw.tensor
    cycles = (np.maximum(np.asarray(n_moving, np.float64), t["moving_min_cycles"]) * hw.matmul_cycle_factor(dtype)
              + t.get("matmul_overhead_cycles", 0))
    return cycles / t["clock_ghz"]


def load_stationary_ns(hw: Hardware) -> float:
    return float(hw.tensor["load_stationary_cycles"]) / hw.tensor["clock_ghz"]


def transpose_ns(hw: Hardware, n_cols) -> np.ndarray:
    """A tensor-engine transpose streams the tile through an identity stationary."""
    return matmul_ns(hw, n_cols, "bf16")


def vector_ns(hw: Hardware, n_per_partition, dtype: str = "bf16", *, rate: float | None = None) -> np.ndarray:
    v = hw.data["vector"]
    r = rate if rate is not None else _elem_rate(v["elems_per_cycle"], dtype, hw.partitions)
    cycles = v["overhead_cycles"] + np.maximum(v["min_cycles"], np.asarray(n_per_partition, np.float64) / r)
    return cycles / v["clock_ghz"]


def scalar_ns(hw: Hardware, n_per_partition, dtype: str = "bf16", *, transcendental: bool = False) -> np.ndarray:
    s = hw.data["scalar"]
    if transcendental:
        r = float(s["exp_elems_per_cycle"]) / hw.partitions
    else:
        r = _elem_rate(s["elems_per_cycle"], dtype, hw.partitions)
    cycles = s["overhead_cycles"] + np.maximum(s["min_cycles"], np.asarray(n_per_partition, np.float64) / r)
    return cycles / s["clock_ghz"]


def gpsimd_ns(hw: Hardware, n_per_partition) -> np.ndarray:
    g = hw.data["gpsimd"]
    r = float(g["elems_per_cycle"]) / hw.partitions
    return (g["overhead_cycles"] + np.asarray(n_per_partition, np.float64) / r) / g["clock_ghz"]


def exp_ns(hw: Hardware, n_per_partition) -> tuple[int, np.ndarray]:
    """(engine, duration) of exp(x - max) with a fused row sum: the Vector engine's
    accelerated exponential where the hardware has one (Trn3), else the Scalar engine."""
    if hw.has_vector_exp:
        s = hw.data["scalar"]
        rate = float(hw.data["vector"]["exp_speedup_vs_scalar"]) * float(s["exp_elems_per_cycle"]) / hw.partitions
        return VECTOR, vector_ns(hw, n_per_partition, rate=rate)
    return SCALAR, scalar_ns(hw, n_per_partition, transcendental=True)


def quantize_mx_ns(hw: Hardware, n_per_partition) -> np.ndarray:
    rate = float(hw.data["vector"]["quantize_mx_elems_per_partition_cycle"])
    return vector_ns(hw, n_per_partition, rate=rate)


def dma_engines(hw: Hardware, partitions) -> np.ndarray:
    """DMA engines a transfer keeps busy, as a (fractional) count: each of a core's engines serves
    partitions / engines consecutive SBUF partitions (8 of 128 with 16 engines; NKI DMA introduction,
    nki/about/nki-dma-overview: "each DMA engine is typically responsible for moving data for eight
    SBUF partitions"), so a transfer on p partitions runs on ceil(p / 8) engines and lasts as long as
    its busiest one: p / min(8, p) engines' worth (4 partitions: one engine)."""
    engines = float(hw.data["dma"]["engines_per_core"])
    per = max(1.0, hw.partitions / engines)
    p = np.maximum(np.asarray(partitions, np.float64), 1.0)
    return np.minimum(engines, p / np.minimum(per, p))


def dma_efficiency(hw: Hardware, nbytes, partitions) -> np.ndarray:
    """Share of its engines' nominal bandwidth a transfer achieves: the ceiling an engine sustains
    (`dma.peak_utilization`, the NKI DMA bandwidth guide's sustained bytes/ns per engine over the
    nominal) times the per-partition descriptor curve (full from `efficient_bytes_per_partition` up)."""
    d = hw.data["dma"]
    per_partition = np.asarray(nbytes, np.float64) / np.maximum(np.asarray(partitions, np.float64), 1)
    full = float(d["efficient_bytes_per_partition"])
    over = float(d.get("descriptor_overhead_bytes", 0.0))
    ceiling = float(d.get("peak_utilization", 1.0))
    if over <= 0:
        return ceiling * np.clip(per_partition / full, 1.0 / 64, 1.0)
    scale = (full + over) / full
    return ceiling * np.minimum(1.0, scale * per_partition / (per_partition + over))


def dma_ns(hw: Hardware, nbytes, partitions) -> np.ndarray:
    """Transfer time on the engines its partitions map to, alone on the core (sharing comes later)."""
    rate = dma_engines(hw, partitions) * float(hw.data["dma"]["engine_gbps"])
    return np.asarray(nbytes, np.float64) / (rate * dma_efficiency(hw, nbytes, partitions))
