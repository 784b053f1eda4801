"""Lower a model config and phase to its op graph (one forward pass, decode step, or training step).

Per layer (pre-norm decoder): rmsnorm -> QKV projection -> rope -> attention -> output
projection -> residual add -> rmsnorm -> MLP (SwiGLU, or router + top-k + routed and
shared experts + combine) -> residual add. Around the layers: the embedding gather,
and at the end the final norm, the LM head and sampling (inference) or the loss
(training). A training step adds the backward of every op (data and weight gradients
for each matmul, flash-attention backward, norm and activation backward) and an AdamW
update per layer. Expert routing is drawn from the seed.
"""

from __future__ import annotations

import numpy as np

from simcore.workloads.models import ModelConfig
from simcore.workloads.ops import Op


def _route(tokens: int, experts: int, top_k: int, rng: np.random.Generator) -> np.ndarray:
    """Tokens per expert for top-k routing of `tokens` tokens (each picks k distinct experts)."""
    counts = np.zeros(experts, np.int64)
    if tokens <= 0:
        return counts
    # each token picks top_k distinct experts uniformly: argsort of random keys
    keys = rng.random((tokens, experts))
    picks = np.argpartition(keys, top_k - 1, axis=1)[:, :top_k]
    np.add.at(counts, picks.ravel(), 1)
    return counts


def _attention_ops(cfg: ModelConfig, L: int, tokens: int, batch: int, q_len: int, kv_len: int, dtype: str,
                   phase: str) -> list[Op]:
    h, H, KV, D = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim
    ops: list[Op] = []
    mm = dict(quantize_a=dtype != "bf16")
    causal = q_len > 1
    if cfg.mla:
        m = cfg.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        ops += [
            Op("attention.q_a_proj", "matmul", dict(m=tokens, k=h, n=m.q_lora_rank, **mm), dtype, L),
            Op("attention.q_b_proj", "matmul", dict(m=tokens, k=m.q_lora_rank, n=H * qk, **mm), dtype, L),
            Op("attention.kv_a_proj", "matmul", dict(m=tokens, k=h, n=m.kv_lora_rank + m.qk_rope_head_dim, **mm), dtype, L),
            Op("attention.rope", "rope", dict(rows=tokens, cols=H * m.qk_rope_head_dim + m.qk_rope_head_dim), "bf16", L),
        ]
        if phase == "decode":  # weight absorption: attend over the compressed latent (MQA-like)
            lat = m.kv_lora_rank + m.qk_rope_head_dim
            ops += [
                Op("attention.absorb_uk", "matmul", dict(m=tokens * H, k=m.qk_nope_head_dim, n=m.kv_lora_rank, **mm), dtype, L),
                Op("attention.core", "attention", dict(batch=batch, q_heads=H, kv_heads=1, q_len=q_len, kv_len=kv_len,
                                                      d_qk=lat, d_v=m.kv_lora_rank, causal=False), "bf16", L),
                Op("attention.absorb_uv", "matmul", dict(m=tokens * H, k=m.kv_lora_rank, n=m.v_head_dim, **mm), dtype, L),
            ]
        else:
            ops += [
                Op("attention.kv_b_proj", "matmul", dict(m=tokens, k=m.kv_lora_rank,
                                                         n=H * (m.qk_nope_head_dim + m.v_head_dim), **mm), dtype, L),
                Op("attention.core", "attention", dict(batch=batch, q_heads=H, kv_heads=H, q_len=q_len, kv_len=kv_len,
                                                      d_qk=qk, d_v=m.v_head_dim, causal=causal), "bf16", L),
            ]
        ops.append(Op("attention.o_proj", "matmul", dict(m=tokens, k=H * m.v_head_dim, n=h, **mm), dtype, L))
        return ops
    return [
        Op("attention.qkv_proj", "matmul", dict(m=tokens, k=h, n=(H + 2 * KV) * D, **mm), dtype, L),
        Op("attention.rope", "rope", dict(rows=tokens, cols=(H + KV) * D), "bf16", L),
        Op("attention.core", "attention", dict(batch=batch, q_heads=H, kv_heads=KV, q_len=q_len, kv_len=kv_len, d_qk=D,
                                              d_v=D, causal=causal), "bf16", L),
        Op("attention.o_proj", "matmul", dict(m=tokens, k=H * D, n=h, **mm), dtype, L),
    ]


def _mlp_ops(cfg: ModelConfig, L: int, tokens: int, dtype: str, rng: np.random.Generator) -> list[Op]:
    h = cfg.hidden
    mm = dict(quantize_a=dtype != "bf16")
    if not cfg.moe or L < cfg.moe.dense_layers:
        f = cfg.intermediate
        return [
            Op("mlp.gate_up_proj", "matmul", dict(m=tokens, k=h, n=2 * f, **mm), dtype, L),
            Op("mlp.silu_mul", "silu_mul", dict(rows=tokens, cols=f), "bf16", L),
            Op("mlp.down_proj", "matmul", dict(m=tokens, k=f, n=h, **mm), dtype, L),
        ]
    e = cfg.moe
    counts = _route(tokens, e.experts, e.top_k, rng)
    active = [int(c) for c in counts if c > 0]
    ops = [
        Op("moe.router", "matmul", dict(m=tokens, k=h, n=e.experts, quantize_a=False), "bf16", L),
        Op("moe.topk", "router_topk", dict(rows=tokens, experts=e.experts, top_k=e.top_k), "bf16", L),
        Op("moe.experts.gate_up_proj", "grouped_matmul", dict(ms=active, k=h, n=2 * e.intermediate, **mm), dtype, L),
        Op("moe.experts.silu_mul", "silu_mul", dict(rows=int(sum(active)), cols=e.intermediate), "bf16", L),
        Op("moe.experts.down_proj", "grouped_matmul", dict(ms=active, k=e.intermediate, n=h, **mm), dtype, L),
    ]
    if e.shared_experts:
        fs = e.intermediate * e.shared_experts
        ops += [
            Op("moe.shared.gate_up_proj", "matmul", dict(m=tokens, k=h, n=2 * fs, **mm), dtype, L),
            Op("moe.shared.silu_mul", "silu_mul", dict(rows=tokens, cols=fs), "bf16", L),
            Op("moe.shared.down_proj", "matmul", dict(m=tokens, k=fs, n=h, **mm), dtype, L),
        ]
    ops.append(Op("moe.combine", "moe_combine", dict(rows=tokens, cols=h, top_k=e.top_k + (1 if e.shared_experts else 0)),
                  "bf16", L))
    return ops


def _backward(op: Op) -> list[Op]:
    """The backward ops of one forward op (training)."""
    p = op.params
    name = op.name
    if op.kind == "matmul":
        return [
            Op(name + ".dgrad", "matmul", dict(m=p["m"], k=p["n"], n=p["k"], quantize_a=p.get("quantize_a", False)),
               op.dtype, op.layer),
            Op(name + ".wgrad", "matmul", dict(m=p["k"], k=p["m"], n=p["n"], quantize_a=p.get("quantize_a", False)),
               op.dtype, op.layer),
        ]
    if op.kind == "grouped_matmul":
        return [
            Op(name + ".dgrad", "grouped_matmul", dict(ms=p["ms"], k=p["n"], n=p["k"], quantize_a=p.get("quantize_a", False)),
               op.dtype, op.layer),
            Op(name + ".wgrad", "grouped_wgrad", dict(ms=p["ms"], k=p["k"], n=p["n"]), op.dtype, op.layer),
        ]
    if op.kind == "attention":
        return [Op(name + ".backward", "attention", dict(p, backward=True), op.dtype, op.layer)]
    if op.kind == "rmsnorm":
        return [Op(name + ".backward", "norm_backward", dict(rows=p["rows"], cols=p["cols"]), op.dtype, op.layer)]
    if op.kind == "silu_mul":
        return [Op(name + ".backward", "silu_mul_backward", dict(rows=p["rows"], cols=p["cols"]), op.dtype, op.layer)]
    if op.kind in ("residual_add", "rope", "moe_combine", "router_topk"):
        kind = "residual_add" if op.kind != "rope" else "rope"
        cols = p.get("cols", p.get("experts", 1))
        return [Op(name + ".backward", kind, dict(rows=p["rows"], cols=cols), op.dtype, op.layer)]
    return []


def model_ops(cfg: ModelConfig, phase: str, batch: int, seq: int, context: int, layers: int, dtype: str,
              rng: np.random.Generator) -> list[Op]:
    """The op graph of one step of `cfg` in `phase` over its first `layers` layers."""
    if phase == "decode":
        q_len, kv_len = 1, context + 1
    else:
        q_len, kv_len = seq, context + seq
    tokens = batch * q_len
    h = cfg.hidden
    ops: list[Op] = [Op("embedding", "embedding", dict(rows=tokens, cols=h), "bf16", -1)]
    per_layer: list[list[Op]] = []
    for L in range(layers):
        lo = [Op("attention.input_norm", "rmsnorm", dict(rows=tokens, cols=h), "bf16", L)]
        lo += _attention_ops(cfg, L, tokens, batch, q_len, kv_len, dtype, phase)
        lo.append(Op("attention.residual_add", "residual_add", dict(rows=tokens, cols=h), "bf16", L))
        lo.append(Op("mlp.post_attention_norm", "rmsnorm", dict(rows=tokens, cols=h), "bf16", L))
        lo += _mlp_ops(cfg, L, tokens, dtype, rng)
        lo.append(Op("mlp.residual_add", "residual_add", dict(rows=tokens, cols=h), "bf16", L))
        per_layer.append(lo)
        ops += lo
    head_rows = tokens if phase == "train" else batch  # inference needs logits of the last token only
    ops.append(Op("final_norm", "rmsnorm", dict(rows=head_rows, cols=h), "bf16", -1))
    ops.append(Op("lm_head", "matmul", dict(m=head_rows, k=h, n=cfg.vocab, quantize_a=dtype != "bf16"), dtype, -1))
    if phase != "train":
        ops.append(Op("sampling", "sampling", dict(rows=batch, vocab=cfg.vocab), "bf16", -1))
        return ops
    ops.append(Op("loss", "cross_entropy", dict(rows=tokens, vocab=cfg.vocab), "bf16", -1))
    head = [o for o in ops if o.layer == -1 and o.kind == "matmul"]
    for o in head:
        ops += _backward(o)
    for L in reversed(range(layers)):
        for o in reversed(per_layer[L]):
            ops += _backward(o)
        ops.append(Op("optimizer.adamw", "adamw", dict(params=cfg.layer_params(L)), "fp32", L))
    ops.append(Op("optimizer.adamw_embeddings", "adamw", dict(params=cfg.embedding_params()), "fp32", -1))
    return ops
