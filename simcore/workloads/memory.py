"""Does a model fit in HBM? Weights, KV cache, activations and (training) optimizer state."""

from __future__ import annotations

from simcore.errors import ConfigError
from simcore.dtypes import dtype_bytes
from simcore.workloads.models import ModelConfig


class DoesNotFit(ConfigError):
    """A model needs more HBM per chip than a chip has (a sweep records both numbers)."""

    def __init__(self, message: str, need_bytes: int = 0, capacity_bytes: int = 0) -> None:
        super().__init__(message)
        self.need_bytes = int(need_bytes)
        self.capacity_bytes = int(capacity_bytes)


def model_memory(cfg: ModelConfig, phase: str, batch: int, seq: int, context: int, dtype: str) -> dict[str, int]:
    """Bytes the deployment needs on the chips, by kind (weights in `dtype`, KV cache in BF16)."""
    params = cfg.total_params()
    weights = int(params * dtype_bytes(dtype))
    tokens_cached = batch * (context + (1 if phase == "decode" else seq))
    kv = cfg.kv_bytes_per_token() * cfg.layers * tokens_cached
    tokens = batch * (1 if phase == "decode" else seq)
    width = max(cfg.intermediate, (cfg.moe.intermediate * cfg.moe.top_k) if cfg.moe else 0)
    act = tokens * (4 * cfg.hidden + 2 * width) * 2  # live activations of one layer
    out = {"weights": weights, "kv_cache": int(kv), "activations": int(act)}
    if phase == "train":
        # BF16 grads + FP32 master weights and Adam moments; activations kept for backward
        out["gradients"] = params * 2
        out["optimizer"] = params * 12
        out["kv_cache"] = 0
        out["activations"] = int(tokens * cfg.layers * (10 * cfg.hidden + 3 * width) * 2)
    return out


def describe_need(need: dict[str, int]) -> str:
    """"weights 811.7 GB, kv cache 2.1 GB, ...": the parts of a fit error, in GB."""
    return ", ".join(f"{k.replace('_', ' ')} {v / 1e9:.1f} GB" for k, v in need.items() if v)


def check_fits(cfg: ModelConfig, phase: str, batch: int, seq: int, context: int, dtype: str, hbm_bytes: int,
               hw_name: str, chips: int) -> dict[str, int]:
    need = model_memory(cfg, phase, batch, seq, context, dtype)
    total = sum(need.values())
    if total > hbm_bytes:
        raise DoesNotFit(
            f"{cfg.name} {phase} needs {total / 1e9:.1f} GB of HBM ({describe_need(need)}) but {hw_name} has "
            f"{hbm_bytes / 1e9:.1f} GB on {chips} chip{'s' if chips > 1 else ''}; use a smaller --dtype, batch or context, "
            f"or shard it over at least {-(-total // hbm_bytes)} chips of a multi-chip preset with --tp/--pp/--ep "
            "(trnx presets lists them).", total, hbm_bytes
        )
    return need
