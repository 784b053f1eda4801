"""Workloads from a JSON op-graph file a user writes.

    {"name": "my-block", "dtype": "bf16", "repeat": 2,
     "layers": [{"name": "block", "ops": [
         {"name": "qkv", "kind": "matmul", "m": 2048, "k": 4096, "n": 6144},
         {"name": "attn", "kind": "attention", "batch": 1, "q_heads": 32, "kv_heads": 8,
          "q_len": 2048, "kv_len": 2048, "head_dim": 128},
         {"name": "norm", "kind": "rmsnorm", "rows": 2048, "cols": 4096}]}]}

A top-level "ops" list instead of "layers" is one layer. `repeat` runs the layers again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simcore.errors import ConfigError
from simcore.workloads.ops import Op, Workload

MAX_REPEAT = 10_000  # beyond this a typo (or a fuzzer) would build ops until memory runs out
ROWWISE = ("rmsnorm", "softmax", "residual_add", "silu_mul", "rope", "embedding", "norm_backward", "silu_mul_backward")
REQUIRED: dict[str, tuple[str, ...]] = {
    "matmul": ("m", "k", "n"),
    "grouped_matmul": ("ms", "k", "n"),
    "attention": ("batch", "q_heads", "q_len", "kv_len"),
    "router_topk": ("rows", "experts", "top_k"),
    "moe_combine": ("rows", "cols", "top_k"),
    "sampling": ("rows", "vocab"),
    "cross_entropy": ("rows", "vocab"),
    "adamw": ("params",),
    **{k: ("rows", "cols") for k in ROWWISE},
}


def _op(path: Path, raw: Any, layer: int, index: int, dtype: str) -> Op:
    where = f"{path} op {index + 1} of layer {layer}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a JSON object.")
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in REQUIRED:
        raise ConfigError(f"{where} has unknown kind {kind!r}; choose one of {', '.join(sorted(REQUIRED))}.")
    missing = [k for k in REQUIRED[kind] if k not in raw]
    if missing:
        raise ConfigError(f"{where} ({kind}) lacks {', '.join(missing)}.")
    params = {k: v for k, v in raw.items() if k not in ("name", "kind", "dtype")}
    for k, v in params.items():
        values = v if isinstance(v, list) else [v]
        if k in ("causal", "quantize_a"):
            continue
        if isinstance(v, list) and (k != "ms" or not v):  # only grouped_matmul's per-group rows is a list
            raise ConfigError(f"{where} ({kind}): '{k}' must be a positive integer (got {v!r:.40}).")
        if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in values):
            raise ConfigError(f"{where} ({kind}): '{k}' must be a positive integer (got {v!r}).")
    if kind == "attention":
        hd = params.pop("head_dim", 128)
        params.setdefault("d_qk", hd)
        params.setdefault("d_v", hd)
        params.setdefault("kv_heads", params["q_heads"])
        params.setdefault("causal", params["q_len"] > 1)
        if params["q_heads"] % params["kv_heads"]:
            raise ConfigError(f"{where}: q_heads {params['q_heads']} is not a multiple of kv_heads {params['kv_heads']}.")
        if params["q_len"] > params["kv_len"]:
            raise ConfigError(f"{where}: q_len {params['q_len']} exceeds kv_len {params['kv_len']}.")
    if kind in ("matmul", "grouped_matmul"):
        params.setdefault("quantize_a", False)
    op_dtype = raw.get("dtype", dtype if kind in ("matmul", "grouped_matmul") else "bf16")
    return Op(str(raw.get("name", f"{kind}{index}")), kind, params, op_dtype, layer)


def load_opgraph(path: str | Path, dtype: str | None = None) -> Workload:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read op-graph file {p} ({exc.strerror}).") from None
    except UnicodeDecodeError:
        raise ConfigError(f"op-graph file {p} is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"op-graph file {p} is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    if not isinstance(data, dict):
        raise ConfigError(f"op-graph file {p} must hold a JSON object.")
    dt = dtype or data.get("dtype", "bf16")
    layers = data.get("layers")
    if layers is None:
        if not isinstance(data.get("ops"), list):
            raise ConfigError(f"op-graph file {p} needs a 'layers' or an 'ops' list.")
        layers = [{"name": "layer 0", "ops": data["ops"]}]
    if not isinstance(layers, list) or not layers:
        raise ConfigError(f"op-graph file {p}: 'layers' must be a non-empty list.")
    repeat = data.get("repeat", 1)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError(f"op-graph file {p}: 'repeat' must be a positive integer up to {MAX_REPEAT}.")
    ops: list[Op] = []
    names: dict[int, str] = {}
    for r in range(repeat):
        for li, layer in enumerate(layers):
            L = r * len(layers) + li
            if not isinstance(layer, dict) or not isinstance(layer.get("ops"), list) or not layer["ops"]:
                raise ConfigError(f"op-graph file {p}: layer {li} needs a non-empty 'ops' list.")
            names[L] = str(layer.get("name", f"layer {L}")) + (f" #{r}" if repeat > 1 else "")
            ops += [_op(p, raw, L, i, dt) for i, raw in enumerate(layer["ops"])]
    name = str(data.get("name", p.stem))
    return Workload(name, name, "model", dt, ops, {"source_file": str(p), "repeat": repeat}, data.get("phase"), names)
