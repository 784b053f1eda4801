"""Does a sharded model fit? HBM one rank (logical core) needs under a parallelism, for its busiest stage."""

from __future__ import annotations

import dataclasses

from simcore.dtypes import dtype_bytes
from simcore.parallel.layout import Parallelism
from simcore.workloads.memory import DoesNotFit, describe_need
from simcore.workloads.models import ModelConfig


def _local_cfg(cfg: ModelConfig, tp: int) -> ModelConfig:
    kv = cfg.kv_heads // tp if cfg.kv_heads >= tp else 1
    return dataclasses.replace(cfg, heads=cfg.heads // tp, kv_heads=kv, intermediate=cfg.intermediate // tp)


def layer_params_per_chip(cfg: ModelConfig, par: Parallelism, layer: int) -> int:
    local = _local_cfg(cfg, par.tp)
    attn = local.attention_params()
    h = cfg.hidden
    if not (cfg.moe and layer >= cfg.moe.dense_layers):
        return attn + 3 * h * local.intermediate + h
    e = cfg.moe
    router = h * e.experts + h
    if par.ep > 1:
        return attn + router + (e.experts // par.ep + e.shared_experts) * 3 * h * e.intermediate
    return attn + router + (e.experts + e.shared_experts) * 3 * h * e.intermediate // par.tp


def chip_memory(cfg: ModelConfig, phase: str, batch: int, seq: int, context: int, dtype: str, par: Parallelism,
                layers: int | None = None) -> dict[str, int]:
    """Bytes by kind on the busiest rank: weights in `dtype` (MX scales included), BF16 KV
    cache, live activations; training adds BF16 gradients, FP32 master weights and Adam
    moments, and the activations kept for backward (1F1B keeps up to pp microbatches)."""
    L = cfg.layers if layers is None else layers
    per_stage = -(-L // par.pp)
    local = _local_cfg(cfg, par.tp)
    emb = cfg.vocab * cfg.hidden // par.tp
    best: dict[str, int] | None = None
    for stage in range(par.pp):
        lo, hi = stage * per_stage, min(L, (stage + 1) * per_stage)
        params = sum(layer_params_per_chip(cfg, par, i) for i in range(lo, hi))
        if stage == 0:
            params += emb
        if stage == par.pp - 1:
            params += emb if not cfg.tied_embeddings or par.pp > 1 else 0
        b = batch // par.dp
        cached = b * (context + (1 if phase == "decode" else seq))
        kv_tok = 2 * local.kv_heads * cfg.head_dim * 2 if not cfg.mla else cfg.kv_bytes_per_token()
        kv = kv_tok * (hi - lo) * cached
        tokens = (b // par.microbatches) * (1 if phase == "decode" else seq)
        width = max(local.intermediate, (cfg.moe.intermediate * cfg.moe.top_k) if cfg.moe else 0)
        act = tokens * (4 * cfg.hidden + 2 * width) * 2
        out = {"weights": int(params * dtype_bytes(dtype)), "kv_cache": int(kv), "activations": int(act)}
        if phase == "train":
            out["gradients"] = params * 2
            out["optimizer"] = params * 12
            out["kv_cache"] = 0
            kept = min(par.pp - stage, par.microbatches)
            out["activations"] = int(kept * tokens * (hi - lo) * (10 * cfg.hidden + 3 * width) * 2)
        if best is None or sum(out.values()) > sum(best.values()):
            best = out
    return best or {}


def check_chip_fits(cfg: ModelConfig, phase: str, batch: int, seq: int, context: int, dtype: str, par: Parallelism,
                    capacity: int, hw_name: str, ranks_per_chip: int = 1) -> dict[str, int]:
    """Bytes by kind one rank needs, checked against `capacity` (a logical core's); a refusal carries the
    fullest chip's need and capacity (`ranks_per_chip` ranks on it)."""
    need = chip_memory(cfg, phase, batch, seq, context, dtype, par)
    total = sum(need.values())
    if total > capacity:
        k = ranks_per_chip
        raise DoesNotFit(
            f"{cfg.name} {phase} with tp={par.tp}, ep={par.ep}, dp={par.dp}, pp={par.pp} needs {total / 1e9:.1f} GB of HBM "
            f"per rank ({describe_need(need)}) but a {hw_name} has {capacity / 1e9:.1f} GB; use more --tp, --pp or --ep, "
            "a smaller --dtype, batch or context.", total * k, capacity * k
        )
    return need
