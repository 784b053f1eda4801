"""Capture validation: every bad input fails here, before any simulation, with the same
one-sentence `ConfigError` for the CLI, the GUI and the Python API. The options themselves
are declared in simcore/capture/options.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simcore.capture.checks import fusion_on, model_params, model_shape, parse_index_list, positive
from simcore.capture.multichip.config import check_single_chip_options, is_multichip, resolve_lnc, resolve_multichip
from simcore.capture.multichip.spec import MultiChip
from simcore.capture.options import DETAILS, CaptureConfig, default_of
from simcore.errors import ConfigError
from simcore.hardware import Hardware, load_hardware
from simcore.workloads import MICROBENCHMARKS, MODELS, Workload, microbenchmark
from simcore.workloads.fusion import fuse_ops
from simcore.workloads.llm import model_ops
from simcore.workloads.memory import check_fits
from simcore.workloads.opgraph import MATMULS, load_opgraph

__all__ = ["CaptureConfig", "Resolved", "resolve"]


@dataclass
class Resolved:
    """A validated capture: the hardware, the op graph and the cores to detail."""

    config: CaptureConfig
    hw: Hardware
    workload: Workload
    compute_cores: int
    detail: str
    detail_cores: list[int]
    memory: dict[str, int] = field(default_factory=dict)
    multichip: MultiChip | None = None   # the multi-chip part of a multi-chip capture

    @property
    def chips(self) -> int:
        """Chips the capture simulates."""
        return self.multichip.topo.chips if self.multichip is not None else 1

    def capture_meta(self) -> dict[str, Any]:
        c = self.config
        out = {"detail": self.detail, "cores": self.detail_cores, "compute_cores": self.compute_cores,
               "layers": self.workload.params.get("layers"), "seed": c.seed, "parallelism": {"tp": 1, "ep": 1, "dp": 1, "pp": 1},
               "chips": 1, "memory_bytes": self.memory, "options": c.given()}
        if self.multichip is not None:
            out.update(self.multichip.meta())
        return out


def _parse_cores(cores: Any, n: int) -> list[int] | None:
    return None if cores is None else parse_index_list(cores, n, "--cores", "core", "0,1,2", "the chip")


def _model_workload(c: CaptureConfig, hw: Hardware, compute_cores: int, dtype: str) -> tuple[Workload, dict[str, int]]:
    cfg = MODELS[c.workload]
    phase, batch, seq, context, layers = model_shape(c)
    if cfg.heads % compute_cores:
        raise ConfigError(
            f"{cfg.name}'s {cfg.heads} attention heads do not divide over {compute_cores} compute cores; "
            f"use a divisor of {cfg.heads} such as {max(d for d in range(1, hw.cores_per_chip + 1) if cfg.heads % d == 0)}."
        )
    if cfg.kv_heads >= compute_cores and cfg.kv_heads % compute_cores:
        raise ConfigError(f"{cfg.name}'s {cfg.kv_heads} KV heads do not divide over {compute_cores} compute cores.")
    mem = check_fits(cfg, phase, batch, seq, context, dtype, hw.hbm_capacity, hw.name, 1)
    rng = np.random.default_rng(c.seed)
    ops = model_ops(cfg, phase, batch, seq, context, layers, dtype, rng)
    if fusion_on(c, phase):
        ops = fuse_ops(ops)
    params = model_params(cfg, phase, batch, seq, context, layers)
    wl = Workload(cfg.name, cfg.display, "model", dtype, ops, params, phase,
                  {L: f"layer {L}" for L in range(layers)})
    return wl, mem


def resolve(config: CaptureConfig) -> Resolved:
    """Validate everything and build the op graph; raises ConfigError with one sentence."""
    c = config
    hw = load_hardware(c.hardware)
    if c.dtype is not None:
        if not isinstance(c.dtype, str):
            raise ConfigError(f"--dtype must be a name like bf16 (got {c.dtype!r}).")
        hw.check_dtype(c.dtype)
    dtype = c.dtype if c.dtype is not None else default_of("dtype")   # an op-graph file's own when not given
    if not isinstance(c.seed, (int, np.integer)) or isinstance(c.seed, bool) or c.seed < 0:
        raise ConfigError(f"--seed must be a non-negative integer (got {c.seed!r}).")
    n = hw.cores_per_chip
    detail_cores = _parse_cores(c.cores, n)
    detail = c.detail or ("instruction" if detail_cores else "kernel")
    if detail not in DETAILS:
        raise ConfigError(f"unknown detail '{detail}'; choose kernel or instruction.")
    if detail == "kernel" and detail_cores:
        raise ConfigError("--cores picks the cores to record instructions for; add --detail instruction.")
    if detail == "instruction" and not detail_cores:
        detail_cores = [0]
    name = str(c.workload)
    is_file = name.endswith(".json") or (Path(name).is_file() and name not in MODELS and name not in MICROBENCHMARKS)
    if name in MODELS:
        cc = n if c.compute_cores is None else positive("compute_cores", c.compute_cores)
    else:
        cc = (1 if name in MICROBENCHMARKS else n) if c.compute_cores is None else positive("compute_cores", c.compute_cores)
    if cc > n:
        raise ConfigError(f"--compute-cores {cc} exceeds the {n} cores of a {hw.name} chip.")
    mem: dict[str, int] = {}
    if is_multichip(c) and name in MODELS:
        if c.shape is not None:
            raise ConfigError(f"--shape applies to micro-benchmarks; {name} takes --batch, --seq and --context.")
        wl, mem, multichip, detail, detail_cores = resolve_multichip(c, hw, cc, detail, detail_cores, dtype)
        return Resolved(c, hw, wl, multichip.topo.lnc, detail, detail_cores, mem, multichip)
    check_single_chip_options(c, name)
    if name in MODELS:
        if c.shape is not None:
            raise ConfigError(f"--shape applies to micro-benchmarks; {name} takes --batch, --seq and --context.")
        wl, mem = _model_workload(c, hw, cc, dtype)
    elif name in MICROBENCHMARKS:
        if c.phase is not None:
            raise ConfigError(f"--phase applies to model workloads, not the {name} micro-benchmark.")
        if c.layers is not None:
            raise ConfigError(f"--layers applies to model workloads, not the {name} micro-benchmark.")
        wl = microbenchmark(name, c.shape, dtype, compute_cores=cc, mx_group=int(hw.tensor["mx_scale_group"]))
        if wl.ops[0].kind == "collective" and detail == "instruction":
            raise ConfigError(f"the {name} micro-benchmark records kernel and collective rows; --detail instruction does not apply.")
        if wl.ops[0].kind == "collective":
            lnc = resolve_lnc(c, hw)
            room = hw.chips * (n // lnc)
            if "topology" in hw.data and wl.ops[0].params["ranks"] > room:
                raise ConfigError(f"{name} over {wl.ops[0].params['ranks']} ranks exceeds the {room} logical cores "
                                  f"(LNC={lnc}) of the {hw.chips} chips of {hw.name}.")
            wl.ops[0].params["lnc"] = lnc
    elif is_file:
        wl = load_opgraph(name, c.dtype)
        for file_dtype in dict.fromkeys(op.dtype for op in wl.ops if op.kind in MATMULS and op.dtype != c.dtype):
            hw.check_dtype(file_dtype)   # the given --dtype was checked above
        for op in wl.ops:
            if op.kind == "attention" and op.params["q_heads"] % cc:
                raise ConfigError(f"op {op.name} has {op.params['q_heads']} heads, which do not divide over {cc} compute cores.")
        if c.layers is not None:
            keep = positive("layers", c.layers)
            wl.ops = [o for o in wl.ops if o.layer < keep]
    else:
        raise ConfigError(
            f"unknown workload '{name}'; choose one of {', '.join(list(MODELS) + list(MICROBENCHMARKS))} "
            "or pass an op-graph .json file."
        )
    return Resolved(c, hw, wl, cc, detail, detail_cores or [], mem)
