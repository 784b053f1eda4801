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

from simcore.errors import LONG_INTEGER, ConfigError
from simcore.dtypes import BF16, MATMUL_DTYPES
from simcore.workloads.ops import Op, Workload

MAX_REPEAT = 10_000  # beyond this a typo (or a fuzzer) would build ops until memory runs out
MATMULS = ("matmul", "grouped_matmul")   # the ops whose dtype the graph's (or --dtype) sets
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


OPTIONAL: dict[str, tuple[str, ...]] = {
    "matmul": ("quantize_a",),
    "grouped_matmul": ("quantize_a",),
    "attention": ("kv_heads", "head_dim", "d_qk", "d_v", "causal"),
}
MAX_DIM = (1 << 31) - 1
MAX_OPS = 100_000
MAX_LIST = 4096


def _check_dtype(where: str, dtype: Any) -> str:
    if not isinstance(dtype, str) or dtype not in MATMUL_DTYPES:
        raise ConfigError(f"{where}: dtype must be one of {', '.join(MATMUL_DTYPES)} (got {dtype!r}).")
    return dtype


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
    known = set(REQUIRED[kind]) | set(OPTIONAL.get(kind, ()))
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigError(f"{where} ({kind}) has unknown key '{unknown[0]}'; it takes {', '.join(sorted(known))}.")
    if "name" in raw and not isinstance(raw["name"], str):
        raise ConfigError(f"{where}: 'name' must be a string.")
    for k, v in params.items():
        if k in ("causal", "quantize_a"):
            if not isinstance(v, bool):
                raise ConfigError(f"{where} ({kind}): '{k}' must be true or false (got {v!r}).")
            continue
        if (k == "ms") != isinstance(v, list):
            what = "a list of positive integers" if k == "ms" else "a positive integer"
            raise ConfigError(f"{where} ({kind}): '{k}' must be {what} (got {v!r}).")
        if isinstance(v, list) and len(v) > MAX_LIST:
            raise ConfigError(f"{where} ({kind}): '{k}' has {len(v)} entries; at most {MAX_LIST}.")
        values = v if isinstance(v, list) else [v]
        if not all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= MAX_DIM for x in values):
            raise ConfigError(f"{where} ({kind}): '{k}' must be a positive integer up to {MAX_DIM} (got {v!r}).")
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
    if kind in MATMULS:
        params.setdefault("quantize_a", False)
    op_dtype = _check_dtype(where, raw["dtype"]) if "dtype" in raw else dtype if kind in MATMULS else BF16
    return Op(str(raw.get("name", f"{kind}{index}")), kind, params, op_dtype, layer)


def load_opgraph(path: str | Path, dtype: str | None = None) -> Workload:
    """The op graph of a JSON file; `dtype` (already validated) replaces the file's own when given."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read op-graph file {p} ({exc.strerror}).") from None
    except UnicodeDecodeError:
        raise ConfigError(f"op-graph file {p} is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"op-graph file {p} is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    except RecursionError:
        raise ConfigError(f"op-graph file {p} nests too deeply to be an op graph.") from None
    except ValueError:  # an integer literal longer than Python converts (4,300 digits)
        raise ConfigError(f"op-graph file {p} {LONG_INTEGER}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"op-graph file {p} must hold a JSON object.")
    dt = dtype if dtype is not None else _check_dtype(f"op-graph file {p}", data.get("dtype", BF16))
    name = data.get("name", p.stem)
    if not isinstance(name, str):
        raise ConfigError(f"op-graph file {p}: 'name' must be a string.")
    layers = data.get("layers")
    if layers is None:
        if not isinstance(data.get("ops"), list):
            raise ConfigError(f"op-graph file {p} needs a 'layers' or an 'ops' list.")
        layers = [{"name": "layer 0", "ops": data["ops"]}]
    if not isinstance(layers, list) or not layers:
        raise ConfigError(f"op-graph file {p}: 'layers' must be a non-empty list.")
    repeat = data.get("repeat", 1)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ConfigError(f"op-graph file {p}: 'repeat' must be a positive integer.")
    for li, layer in enumerate(layers):
        if not isinstance(layer, dict) or not isinstance(layer.get("ops"), list) or not layer["ops"]:
            raise ConfigError(f"op-graph file {p}: layer {li} needs a non-empty 'ops' list.")
    total = repeat * sum(len(layer["ops"]) for layer in layers)
    if total > MAX_OPS:
        raise ConfigError(f"op-graph file {p} expands to {total} ops; at most {MAX_OPS} are simulated.")
    ops: list[Op] = []
    names: dict[int, str] = {}
    for r in range(repeat):
        for li, layer in enumerate(layers):
            L = r * len(layers) + li
            names[L] = str(layer.get("name", f"layer {L}")) + (f" #{r}" if repeat > 1 else "")
            ops += [_op(p, raw, L, i, dt) for i, raw in enumerate(layer["ops"])]
    return Workload(name, name, "model", dt, ops, {"source_file": str(p), "repeat": repeat}, data.get("phase") if isinstance(data.get("phase"), str) else None, names)
