"""The op graph a workload lowers to: ops in execution order, grouped into layers.

An op is hardware independent (shapes, dtype); `simcore.lowering.kernels` shards each
op over the compute cores and lowers every core's share to a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OP_KINDS = (
    "matmul", "grouped_matmul", "attention", "rmsnorm", "softmax", "residual_add", "silu_mul", "rope",
    "router_topk", "moe_combine", "embedding", "sampling", "cross_entropy", "adamw", "norm_backward",
    "silu_mul_backward", "grouped_wgrad", "collective", "tile_exp", "fused",
)


@dataclass
class Op:
    name: str                     # e.g. "attention.qkv_proj"
    kind: str                     # one of OP_KINDS
    params: dict[str, Any]        # kind-specific shape parameters
    dtype: str = "bf16"
    layer: int = -1               # -1: a model-level op (embedding, lm head)

    def __post_init__(self) -> None:
        if self.kind not in OP_KINDS:
            raise ValueError(f"unknown op kind {self.kind}")


@dataclass
class Workload:
    name: str
    display: str
    kind: str                     # "model" or "microbenchmark"
    dtype: str
    ops: list[Op]
    params: dict[str, Any] = field(default_factory=dict)   # shape parameters, written to meta.json
    phase: str | None = None
    layer_names: dict[int, str] = field(default_factory=dict)

    def meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "display": self.display, "kind": self.kind, "dtype": self.dtype}
        if self.phase is not None:
            out["phase"] = self.phase
        out.update(self.params)
        return out
