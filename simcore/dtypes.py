"""Data types, in one table: what an element costs in memory, whether it is OCP MX, whether a
matmul takes it (`--dtype`), and -- per hardware, from a preset's tables -- how its FLOPs
weigh against BF16's and its peak. The simulator and the analyses both read it here.

Table order is the trace's dtype vocabulary (codes 0, 1, ...): append, never reorder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

BF16 = "bf16"
MX_GROUP = 32   # OCP MX: one uint8 scale per 32 elements along the contraction


@dataclass(frozen=True)
class DType:
    name: str
    bytes: float           # per element in HBM and SBUF, MX scale bytes included
    matmul: bool = False   # a matmul input dtype (`--dtype`)
    mx: bool = False       # OCP microscaling: values share a scale per MX_GROUP elements
    narrow: bool = False   # 8 bits or fewer per value (FP8, MX): MoE dispatch sends 1 byte each


DTYPE_TABLE: dict[str, DType] = {d.name: d for d in (
    DType(BF16, 2.0, matmul=True),
    DType("fp16", 2.0, matmul=True),
    DType("fp8", 1.0, matmul=True, narrow=True),
    DType("mxfp8", 1.0 + 1 / MX_GROUP, matmul=True, mx=True, narrow=True),
    DType("mxfp4", 0.5 + 1 / MX_GROUP, matmul=True, mx=True, narrow=True),
    DType("fp32", 4.0, matmul=True),
    DType("int32", 4.0),
    DType("uint8", 1.0),
)}
MATMUL_DTYPES = tuple(d.name for d in DTYPE_TABLE.values() if d.matmul)
MX_DTYPES = tuple(d.name for d in DTYPE_TABLE.values() if d.mx)


def dtype_bytes(dtype: str) -> float:
    """Bytes per element in HBM/SBUF, MX scale bytes included (one uint8 per 32 elements)."""
    return DTYPE_TABLE[dtype].bytes


def is_mx(dtype: str) -> bool:
    return DTYPE_TABLE[dtype].mx


def is_narrow(dtype: str) -> bool:
    return DTYPE_TABLE[dtype].narrow


def bf16_flop_weight(weights: Mapping[str, float], peaks: Mapping[str, float], dtype: str) -> float | None:
    """Factor that normalises `dtype` FLOPs to BF16 FLOPs on one hardware (bf16 1, fp8 0.5,
    mxfp8 0.25 on Trn3): the preset's `tensor.bf16_flop_weight`, else the ratio of its peaks
    (`tensor.peak_tflops`: bf16 / dtype). None when neither says."""
    if dtype in weights:
        return float(weights[dtype])
    if dtype == BF16:
        return 1.0
    p_bf16, p = peaks.get(BF16), peaks.get(dtype)
    if p_bf16 and p:
        return float(p_bf16) / float(p)
    return None


def peak_tflops(weights: Mapping[str, float], peaks: Mapping[str, float], dtype: str,
                bf16_fallback: float | None = None) -> float | None:
    """One core's tensor-engine peak for `dtype` (TFLOPS): the preset's `tensor.peak_tflops`,
    else the BF16 peak (or `bf16_fallback`, e.g. from the array size and clock) over the
    dtype's BF16 weight. None when unknown."""
    if dtype in peaks:
        return float(peaks[dtype])
    w = bf16_flop_weight(weights, peaks, dtype)
    base = peaks.get(BF16, bf16_fallback)
    if w and base:
        return float(base) / w
    return None
