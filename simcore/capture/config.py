"""Capture options and their validation: every bad input fails here, before any simulation,
with the same one-sentence `ConfigError` for the CLI, the GUI and the Python API."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simcore.errors import ConfigError
from simcore.hardware import Hardware, load_hardware
from simcore.workloads import MICROBENCHMARKS, MODELS, PHASES, Workload, microbenchmark
from simcore.workloads.llm import model_ops
from simcore.workloads.memory import check_fits
from simcore.workloads.opgraph import load_opgraph

DETAILS = ("kernel", "instruction")
DEFAULT_SEQ = 2048
DEFAULT_CONTEXT = 4096


@dataclass
class CaptureConfig:
    """What to simulate. Field names match `trnx capture` flags."""

    hardware: str = "trn3"
    workload: str = "llama3.1-8b"
    phase: str | None = None          # models: prefill | decode (default) | train
    batch: int = 1
    seq: int | None = None            # new tokens per sequence (prefill/train; default 2048)
    context: int | None = None        # tokens already in the KV cache (decode default 4096, else 0)
    shape: str | tuple | list | None = None   # micro-benchmarks: e.g. "8192,8192,8192"
    dtype: str = "bf16"
    layers: int | None = None         # simulate the first N layers only
    detail: str | None = None         # kernel | instruction (default: instruction if cores are given)
    cores: str | list[int] | None = None      # instruction-detail cores: "all", "0,3" or a list
    compute_cores: int | None = None  # cores the workload is spread over (models: all; micro-benchmarks: 1)
    seed: int = 0
    overwrite: bool = False
    # multi-chip (docs/simulator.md, "Multi-chip"): any of these makes the capture multi-chip
    chips: int | None = None          # chips to use (default tp x dp x pp; at most the preset's)
    tp: int | None = None             # tensor parallel degree
    ep: int | None = None             # expert parallel degree (MoE)
    dp: int | None = None             # data parallel degree (default: chips / (tp x pp))
    pp: int | None = None             # pipeline stages
    sequence_parallel: bool | None = None   # default: on for prefill/train with tp > 1
    microbatches: int | None = None   # per data-parallel rank (default: the largest divisor of its batch <= pp)
    jitter: str | float | None = None         # per-rank compute jitter, "2%" or 0.02
    straggler: Any = None             # "chip=5,slowdown=1.3" or "chip=5,delay=200us" (or a list of them)
    expert_skew: float | None = None  # Zipf exponent of MoE expert popularity (0 = uniform)
    detail_chips: str | list[int] | None = None   # chips whose --cores get instruction detail (default chip 0)
    cc_algorithm: str = "auto"        # auto | ring | mesh | hierarchical (a preference where it applies)
    workers: int | None = None        # processes simulating chips (default: auto)

    @classmethod
    def from_kwargs(cls, config: "CaptureConfig | dict[str, Any] | None" = None, **kwargs: Any) -> "CaptureConfig":
        if isinstance(config, CaptureConfig):
            base = asdict(config)
        elif isinstance(config, dict):
            base = dict(config)
        elif config is None:
            base = {}
        else:
            raise ConfigError("capture options must be a CaptureConfig or a dict of options.")
        base.update({k: v for k, v in kwargs.items() if v is not None})
        unknown = sorted(set(base) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"unknown capture option '{unknown[0]}'; known: {', '.join(cls.__dataclass_fields__)}.")
        return cls(**base)


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
    multichip: Any = None             # a simcore.capture.multichip.MultiChip for multi-chip captures

    @property
    def chips(self) -> int:
        """Chips the capture simulates."""
        return self.multichip.par.chips if self.multichip is not None else 1

    def capture_meta(self) -> dict[str, Any]:
        c = self.config
        out = {"detail": self.detail, "cores": self.detail_cores, "compute_cores": self.compute_cores,
               "layers": self.workload.params.get("layers"), "seed": c.seed, "parallelism": {"tp": 1, "ep": 1, "dp": 1, "pp": 1},
               "chips": 1, "memory_bytes": self.memory}
        if self.multichip is not None:
            out.update(self.multichip.meta())
        return out


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"--{name} must be a positive integer (got {value!r}).")
    return int(value)


def parse_index_list(value: Any, n: int, flag: str, noun: str, example: str, scope: str) -> list[int]:
    """'all', '0,5', an int or a list of ints as sorted distinct indices in 0..n-1 (cores, chips),
    or a ConfigError naming `flag` ("the chip has cores 0..7" with scope "the chip")."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "all":
            return list(range(n))
        try:
            picked = [int(x) for x in text.split(",") if x.strip()]
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


def _parse_cores(cores: Any, n: int) -> list[int] | None:
    return None if cores is None else parse_index_list(cores, n, "--cores", "core", "0,1,2", "the chip")


def model_shape(c: CaptureConfig) -> tuple[str, int, int, int, int]:
    """(phase, batch, seq, context, layers) of a model capture, checked."""
    cfg = MODELS[c.workload]
    phase = c.phase or "decode"
    if phase not in PHASES:
        raise ConfigError(f"unknown phase '{phase}'; choose one of {', '.join(PHASES)}.")
    batch = _positive("batch", c.batch)
    seq = _positive("seq", c.seq if c.seq is not None else DEFAULT_SEQ)
    context = c.context if c.context is not None else (DEFAULT_CONTEXT if phase == "decode" else 0)
    if isinstance(context, bool) or not isinstance(context, (int, np.integer)) or context < 0:
        raise ConfigError(f"--context must be a non-negative integer (got {context!r}).")
    if phase == "decode" and c.seq is not None:
        raise ConfigError("--seq sets the prompt length of prefill or train; decode takes --context (tokens already cached).")
    total = context + (1 if phase == "decode" else seq)
    if total > cfg.max_position:
        raise ConfigError(f"{total} tokens exceed {cfg.name}'s maximum context of {cfg.max_position}.")
    layers = cfg.layers if c.layers is None else _positive("layers", c.layers)
    if layers > cfg.layers:
        raise ConfigError(f"--layers {layers} exceeds the {cfg.layers} layers of {cfg.name}.")
    return phase, batch, seq, context, layers


def model_params(cfg, phase: str, batch: int, seq: int, context: int, layers: int) -> dict[str, Any]:
    """The workload's shape parameters for meta.json."""
    params: dict[str, Any] = {"batch": batch, "layers": layers, "total_layers": cfg.layers, "params": cfg.total_params()}
    if phase == "decode":
        params["context"] = context
    else:
        params["seq"] = seq
        params["context"] = context
    return params


def _model_workload(c: CaptureConfig, hw: Hardware, compute_cores: int) -> tuple[Workload, dict[str, int]]:
    cfg = MODELS[c.workload]
    phase, batch, seq, context, layers = model_shape(c)
    if cfg.heads % compute_cores:
        raise ConfigError(
            f"{cfg.name}'s {cfg.heads} attention heads do not divide over {compute_cores} compute cores; "
            f"use a divisor of {cfg.heads} such as {max(d for d in range(1, hw.cores_per_chip + 1) if cfg.heads % d == 0)}."
        )
    if cfg.kv_heads >= compute_cores and cfg.kv_heads % compute_cores:
        raise ConfigError(f"{cfg.name}'s {cfg.kv_heads} KV heads do not divide over {compute_cores} compute cores.")
    mem = check_fits(cfg, phase, batch, seq, context, c.dtype, hw.hbm_capacity, hw.name, 1)
    rng = np.random.default_rng(c.seed)
    ops = model_ops(cfg, phase, batch, seq, context, layers, c.dtype, rng)
    params = model_params(cfg, phase, batch, seq, context, layers)
    wl = Workload(cfg.name, cfg.display, "model", c.dtype, ops, params, phase,
                  {L: f"layer {L}" for L in range(layers)})
    return wl, mem


def resolve(config: CaptureConfig) -> Resolved:
    """Validate everything and build the op graph; raises ConfigError with one sentence."""
    c = config
    hw = load_hardware(c.hardware)
    if not isinstance(c.dtype, str):
        raise ConfigError(f"--dtype must be a name like bf16 (got {c.dtype!r}).")
    hw.check_dtype(c.dtype)
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
        cc = n if c.compute_cores is None else _positive("compute-cores", c.compute_cores)
    else:
        cc = (1 if name in MICROBENCHMARKS else n) if c.compute_cores is None else _positive("compute-cores", c.compute_cores)
    if cc > n:
        raise ConfigError(f"--compute-cores {cc} exceeds the {n} cores of a {hw.name} chip.")
    mem: dict[str, int] = {}
    multichip = None
    from simcore.capture.mcconfig import check_single_chip_options, is_multichip, resolve_multichip

    if is_multichip(c) and name in MODELS:
        if c.shape is not None:
            raise ConfigError(f"--shape applies to micro-benchmarks; {name} takes --batch, --seq and --context.")
        wl, mem, multichip, detail, detail_cores = resolve_multichip(c, hw, cc, detail, detail_cores)
        return Resolved(c, hw, wl, cc, detail, detail_cores, mem, multichip)
    check_single_chip_options(c, name)
    if name in MODELS:
        if c.shape is not None:
            raise ConfigError(f"--shape applies to micro-benchmarks; {name} takes --batch, --seq and --context.")
        wl, mem = _model_workload(c, hw, cc)
    elif name in MICROBENCHMARKS:
        if c.phase is not None:
            raise ConfigError(f"--phase applies to model workloads, not the {name} micro-benchmark.")
        if c.layers is not None:
            raise ConfigError(f"--layers applies to model workloads, not the {name} micro-benchmark.")
        wl = microbenchmark(name, c.shape, c.dtype, compute_cores=cc, mx_group=int(hw.tensor["mx_scale_group"]))
        if wl.ops[0].kind == "collective" and detail == "instruction":
            raise ConfigError(f"the {name} micro-benchmark records kernel and collective rows; --detail instruction does not apply.")
        if wl.ops[0].kind == "collective" and "topology" in hw.data and wl.ops[0].params["ranks"] > hw.chips:
            raise ConfigError(f"{name} over {wl.ops[0].params['ranks']} ranks exceeds the {hw.chips} chips of {hw.name}.")
    elif is_file:
        wl = load_opgraph(name, c.dtype if c.dtype != "bf16" else None)
        for op in wl.ops:
            hw.check_dtype(op.dtype) if op.kind in ("matmul", "grouped_matmul") else None
            if op.kind == "attention" and op.params["q_heads"] % cc:
                raise ConfigError(f"op {op.name} has {op.params['q_heads']} heads, which do not divide over {cc} compute cores.")
        if c.layers is not None:
            keep = _positive("layers", c.layers)
            wl.ops = [o for o in wl.ops if o.layer < keep]
    else:
        raise ConfigError(
            f"unknown workload '{name}'; choose one of {', '.join(list(MODELS) + list(MICROBENCHMARKS))} "
            "or pass an op-graph .json file."
        )
    return Resolved(c, hw, wl, cc, detail, detail_cores or [], mem)


def choices() -> dict[str, Any]:
    """What a capture can be asked for, for UIs (the GUI capture dialog, `trnx presets`):
    hardware presets with their key figures, models, micro-benchmarks, phases, details."""
    from simcore.collectives import ALGORITHMS
    from simcore.hardware import preset_names
    from simcore.topology import topology_of

    hardware = []
    for name in preset_names():
        hw = load_hardware(name)
        topo = topology_of(hw)
        hardware.append({
            "name": name, "description": hw.data.get("description", ""), "chips": hw.chips,
            "cores_per_chip": hw.cores_per_chip, "peak_tflops_per_core": dict(hw.tensor["peak_tflops"]),
            "hbm_gib": round(hw.hbm_capacity / 2**30, 1), "hbm_tbps": hw.hbm_bytes_per_ns / 1e3,
            "sbuf_mib_per_core": round(hw.sbuf_bytes / 2**20, 1), "dtypes": hw.matmul_dtypes(),
            "link_gbps": float(hw.data["link"]["bandwidth_gbps"]),
            "topology": None if topo.flat else topo.describe(),
        })
    models = [{"name": m.name, "display": m.display, "params_b": round(m.total_params() / 1e9, 2), "layers": m.layers,
               "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads, "max_position": m.max_position,
               "moe": None if m.moe is None else f"{m.moe.experts} experts, top-{m.moe.top_k}"
               + (f", {m.moe.shared_experts} shared" if m.moe.shared_experts else ""),
               "attention": "MLA" if m.mla else "GQA", "source": m.source} for m in MODELS.values()]
    micro = [{"name": k, "shape": v["shape"], "default": list(v["default"]), "help": v["help"]}
             for k, v in MICROBENCHMARKS.items()]
    return {"hardware": hardware, "models": models, "microbenchmarks": micro, "phases": list(PHASES),
            "details": list(DETAILS), "cc_algorithms": list(ALGORITHMS), "options": dict(OPTION_HELP),
            "defaults": {"seq": DEFAULT_SEQ, "context_decode": DEFAULT_CONTEXT, "phase": "decode", "batch": 1,
                         "dtype": "bf16", "seed": 0, "tp": 1, "ep": 1, "pp": 1, "cc_algorithm": "auto"}}


OPTION_HELP = {
    "chips": "chips to use (default tp x dp x pp); at most the preset's (UltraServer gen1 64, gen2 144, trn2.48xlarge 16)",
    "tp": "tensor-parallel degree: heads and MLP width split over chips, all-reduce (or reduce-scatter/all-gather)",
    "ep": "expert-parallel degree (MoE): experts split over chips, all-to-all dispatch and combine",
    "dp": "data-parallel replicas (default chips / (tp x pp)); training all-reduces gradients",
    "pp": "pipeline stages: layers split over chips, send/recv between stages",
    "sequence_parallel": "norms on tokens / tp with all-gather/reduce-scatter (default on for prefill/train with tp > 1)",
    "microbatches": "microbatches per data-parallel replica (default: up to pp)",
    "jitter": "per-rank compute jitter, e.g. 2% (seeded)",
    "straggler": "slow chip: chip=5,slowdown=1.3 or chip=5,delay=200us (several separated by ;)",
    "expert_skew": "MoE routing skew: Zipf exponent of expert popularity (0 = uniform, 1 = strong)",
    "detail_chips": "chips whose --cores get instruction detail: 'all' or a list like 0,5 (default 0)",
    "cc_algorithm": "collective algorithm: auto, ring, mesh or hierarchical (a preference where it applies)",
    "workers": "processes simulating chips (default: auto, up to the machine's cores)",
}
