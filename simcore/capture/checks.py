"""Checks and derived values shared by single- and multi-chip validation: positive integers,
index lists (cores, chips) and a model capture's shape with its defaults applied."""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.capture.options import DEFAULT_CONTEXT, CaptureConfig, default_of, flag_of
from simcore.errors import ConfigError
from simcore.textlists import int_list
from simcore.workloads import MODELS, PHASES
from simcore.workloads.models import ModelConfig


def positive(name: str, value: Any) -> int:
    """`value` as a positive int, or a ConfigError naming the option's flag."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{flag_of(name)} must be a positive integer (got {value!r}).")
    return int(value)


def parse_index_list(value: Any, n: int, flag: str, noun: str, example: str, scope: str) -> list[int]:
    """'all', '0,5', an int or a list of ints as sorted distinct indices in 0..n-1 (cores, chips),
    or a ConfigError naming `flag` ("the chip has cores 0..7" with scope "the chip")."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "all":
            return list(range(n))
        try:
            picked = int_list(text)
        except ValueError:
            raise ConfigError(f"{flag} '{value}' must be 'all' or {noun} numbers like {example}.") from None
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        picked = [int(value)]
    elif isinstance(value, (list, tuple)) and all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in value):
        picked = [int(x) for x in value]
    else:
        raise ConfigError(f"{flag} {value!r} must be 'all' or {noun} numbers like {example}.")
    if not picked:
        raise ConfigError(f"{flag} names no {noun}; give 'all' or {noun} numbers like {example}.")
    bad = [x for x in picked if not 0 <= x < n]
    if bad:
        raise ConfigError(f"{flag} {bad[0]} does not exist: {scope} has {noun}s 0..{n - 1}.")
    return sorted(set(picked))


def model_shape(c: CaptureConfig) -> tuple[str, int, int, int, int]:
    """(phase, batch, seq, context, layers) of a model capture, checked, defaults applied."""
    cfg = MODELS[c.workload]
    phase = c.phase or default_of("phase")
    if phase not in PHASES:
        raise ConfigError(f"unknown phase '{phase}'; choose one of {', '.join(PHASES)}.")
    batch = positive("batch", c.batch)
    seq = positive("seq", c.seq if c.seq is not None else default_of("seq"))
    context = c.context if c.context is not None else (DEFAULT_CONTEXT if phase == "decode" else 0)
    if isinstance(context, bool) or not isinstance(context, (int, np.integer)) or context < 0:
        raise ConfigError(f"--context must be a non-negative integer (got {context!r}).")
    if phase == "decode" and c.seq is not None:
        raise ConfigError("--seq sets the prompt length of prefill or train; decode takes --context (tokens already cached).")
    total = context + (1 if phase == "decode" else seq)
    if total > cfg.max_position:
        raise ConfigError(f"{total} tokens exceed {cfg.name}'s maximum context of {cfg.max_position}.")
    layers = cfg.layers if c.layers is None else positive("layers", c.layers)
    if layers > cfg.layers:
        raise ConfigError(f"--layers {layers} exceeds the {cfg.layers} layers of {cfg.name}.")
    return phase, batch, seq, context, layers


def model_params(cfg: ModelConfig, phase: str, batch: int, seq: int, context: int, layers: int) -> dict[str, Any]:
    """The workload's shape parameters for meta.json."""
    params: dict[str, Any] = {"batch": batch, "layers": layers, "total_layers": cfg.layers, "params": cfg.total_params()}
    if phase == "decode":
        params["context"] = context
    else:
        params["seq"] = seq
        params["context"] = context
    return params


def fusion_on(c: Any, phase: str) -> bool:
    """Whether a model step runs fused kernels: --fusion on (the default) for inference phases
    (the fused kernels are NxD Inference's; a training step keeps one kernel per op)."""
    from simcore.workloads.fusion import FUSION_MODES

    if c.fusion not in FUSION_MODES:
        raise ConfigError(f"unknown --fusion '{c.fusion}'; choose one of {', '.join(FUSION_MODES)}.")
    return c.fusion == "on" and phase != "train"
