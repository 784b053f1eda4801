"""Validation of multi-chip options: chips, parallel degrees, imbalance, detail chips.

Every bad combination fails here, before any simulation, with one sentence that names the
option and the number that does not divide (heads, experts, layers, batch, chips).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.capture.checks import fusion_on, model_params, model_shape, parse_index_list, positive
from simcore.capture.multichip.spec import MultiChip
from simcore.capture.options import CaptureConfig, flag_of, parallel_options
from simcore.collectives import ALGORITHMS
from simcore.errors import ConfigError
from simcore.hardware import Hardware
from simcore.parallel import Parallelism, parse_jitter, parse_stragglers
from simcore.parallel.memory import check_chip_fits
from simcore.topology import topology_of
from simcore.topology.topology import MAX_FLAT_CHIPS
from simcore.workloads import MICROBENCHMARKS, MODELS, Workload

DEGREES = ("chips", "tp", "ep", "dp", "pp")   # counts: for the micro-benchmark check, 1 is the same as not given
RANK_DEGREES = ("tp", "ep", "dp", "pp")       # in ranks: given at all (even 1), a model capture is one of ranks
MAX_SKEW = 10.0


def _asks_for_chips(name: str, value: Any) -> bool:
    """Does an option's value ask for more than one chip (a degree of 1 does not)?"""
    if value is None:
        return False
    if name not in DEGREES:
        return True
    return isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value != 1


def is_multichip(c: CaptureConfig) -> bool:
    """Is it a capture of ranks (logical cores): more than one chip, any parallel degree given (even 1), or
    another multi-chip option? Only a model capture with none of them is one chip-wide program."""
    if isinstance(c.chips, (int, np.integer)) and not isinstance(c.chips, bool) and c.chips > 1:
        return True
    # a parallel degree counts ranks = logical cores (issue 14): `--tp 1` is one rank on one logical core, as
    # NxD Inference's tp_degree=1, not the whole chip (which is what a capture with no degree simulates)
    return any(getattr(c, n) is not None if n in RANK_DEGREES else _asks_for_chips(n, getattr(c, n))
               for n in parallel_options() if n != "chips")


def resolve_lnc(c: CaptureConfig, hw: Hardware) -> int:
    """--lnc checked against what the chip allows (the preset's `[lnc]`); its default when not given."""
    if c.lnc is None:
        return hw.lnc_default
    lnc = positive("lnc", c.lnc)
    if lnc not in hw.lnc_choices:
        allowed = " or ".join(str(x) for x in hw.lnc_choices)
        raise ConfigError(f"--lnc {lnc} is not a logical-core size of {hw.name}; use {allowed}.")
    return lnc


def is_collective_benchmark(name: str) -> bool:
    return name in MICROBENCHMARKS and MICROBENCHMARKS[name]["shape"].startswith("BYTES")


def check_single_chip_options(c: CaptureConfig, name: str) -> None:
    """Micro-benchmarks and op graphs run on one chip (collectives take their ranks from --shape,
    logical cores of --lnc physical cores each)."""
    if name in MODELS:
        if c.chips is not None:
            positive("chips", c.chips)
        return
    for opt in parallel_options():
        if opt == "lnc" and is_collective_benchmark(name):
            continue
        if _asks_for_chips(opt, getattr(c, opt)):
            extra = " (collective micro-benchmarks take their ranks from --shape BYTES,RANKS)" \
                if is_collective_benchmark(name) else ""
            raise ConfigError(f"{flag_of(opt)} applies to model workloads, not {name}{extra}.")
    if c.cc_algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown --cc-algorithm '{c.cc_algorithm}'; choose one of {', '.join(ALGORITHMS)}.")


def parse_chip_list(value: Any, chips: int, flag: str) -> list[int]:
    return parse_index_list(value, chips, flag, "chip", "0,5", "the capture")


def _largest_divisor(n: int, at_most: int) -> int:
    return max(d for d in range(1, max(1, min(n, at_most)) + 1) if n % d == 0)


def resolve_multichip(c: CaptureConfig, hw: Hardware, cc: int, detail: str, detail_cores: list[int], dtype: str
                      ) -> tuple[Workload, dict[str, int], MultiChip, str, list[int]]:
    """(Workload, per-chip memory, MultiChip, detail, detail cores) of a multi-chip model capture."""
    cfg = MODELS[c.workload]
    phase, batch, seq, context, layers = model_shape(c)
    tp = 1 if c.tp is None else positive("tp", c.tp)
    pp = 1 if c.pp is None else positive("pp", c.pp)
    ep = 1 if c.ep is None else positive("ep", c.ep)
    lnc = resolve_lnc(c, hw)
    if c.compute_cores is not None and c.compute_cores != lnc:
        raise ConfigError(f"--compute-cores applies to one-chip captures; each rank of a parallel capture runs on its "
                          f"logical core's {lnc} physical core{'s' if lnc > 1 else ''} (--lnc {lnc}).")
    per_chip = hw.cores_per_chip // lnc
    max_chips = hw.chips if "topology" in hw.data else MAX_FLAT_CHIPS
    if c.chips is not None:
        chips = positive("chips", c.chips)
        room = chips * per_chip
        if c.dp is None:
            if room % (tp * pp):
                raise ConfigError(f"the {room} ranks of --chips {chips} (LNC={lnc}: {per_chip} per chip) do not divide into "
                                  f"--tp {tp} x --pp {pp}; use a multiple of {tp * pp} ranks.")
            dp = room // (tp * pp)
        else:
            dp = positive("dp", c.dp)
            if tp * dp * pp != room:
                raise ConfigError(f"--tp {tp} x --dp {dp} x --pp {pp} = {tp * dp * pp} ranks, but --chips {chips} holds "
                                  f"{room} (LNC={lnc}: {per_chip} per chip).")
    else:
        dp = 1 if c.dp is None else positive("dp", c.dp)
        chips = -(-(tp * dp * pp) // per_chip)
    ranks = tp * dp * pp
    where = f"the {max_chips} chips of {hw.name}" if "topology" in hw.data else \
        f"the simulator's limit of {max_chips} chips for a preset without a topology"
    if chips > max_chips:
        raise ConfigError(f"{ranks} ranks (--tp {tp} x --dp {dp} x --pp {pp}) need {chips} chips at LNC={lnc} "
                          f"({per_chip} ranks per chip), more than {where}.")
    # what the model's shapes allow
    if cfg.heads % tp:
        sugg = _largest_divisor(cfg.heads, tp)
        raise ConfigError(f"{cfg.name}'s {cfg.heads} attention heads do not divide over --tp {tp}; "
                          f"use a divisor of {cfg.heads} such as {sugg}.")
    if not cfg.mla and (cfg.kv_heads % tp if cfg.kv_heads >= tp else tp % cfg.kv_heads):
        raise ConfigError(f"{cfg.name}'s {cfg.kv_heads} KV heads neither divide over nor evenly replicate across --tp {tp}.")
    local_heads = cfg.heads // tp
    if local_heads % lnc and lnc % local_heads:
        raise ConfigError(f"{cfg.name}'s {local_heads} attention heads per rank (--tp {tp}) do not spread over the "
                          f"{lnc} physical cores of a logical core (--lnc {lnc}).")
    if cfg.intermediate % tp or cfg.vocab % tp:
        what = "MLP width" if cfg.intermediate % tp else "vocabulary"
        size = cfg.intermediate if cfg.intermediate % tp else cfg.vocab
        raise ConfigError(f"{cfg.name}'s {what} of {size} does not divide over --tp {tp}.")
    if ep > 1:
        if cfg.moe is None:
            raise ConfigError(f"--ep applies to mixture-of-experts models; {cfg.name} is dense (use --tp or --dp).")
        if cfg.moe.experts % ep:
            raise ConfigError(f"{cfg.name}'s {cfg.moe.experts} experts do not divide over --ep {ep}.")
        if (tp * dp) % ep:
            raise ConfigError(f"--ep {ep} does not divide the {tp * dp} chips of a pipeline stage (--tp {tp} x --dp {dp}); "
                              "expert-parallel groups are taken from the data- and tensor-parallel chips.")
    elif cfg.moe is not None and cfg.moe.intermediate % tp:
        raise ConfigError(f"{cfg.name}'s expert width of {cfg.moe.intermediate} does not divide over --tp {tp}.")
    if layers % pp:
        raise ConfigError(f"{layers} layers do not divide over --pp {pp} pipeline stages; "
                          f"use a divisor of {layers} such as {_largest_divisor(layers, pp)} (or --layers).")
    if batch % dp:
        raise ConfigError(f"--batch {batch} does not divide over --dp {dp} data-parallel replicas; "
                          f"use a multiple of {dp}.")
    local = batch // dp
    if c.microbatches is None:
        mb = _largest_divisor(local, pp)
    else:
        mb = positive("microbatches", c.microbatches)
        if local % mb:
            raise ConfigError(f"--microbatches {mb} does not divide the {local} sequences of each data-parallel replica "
                              f"(--batch {batch} / --dp {dp}).")
    q = 1 if phase == "decode" else seq
    tokens = local // mb * q
    if c.sequence_parallel is not None and not isinstance(c.sequence_parallel, bool):
        raise ConfigError(f"--sequence-parallel must be true or false (got {c.sequence_parallel!r}).")
    if c.sequence_parallel:
        if tp == 1:
            raise ConfigError("--sequence-parallel splits tokens over the tensor-parallel group; it needs --tp > 1.")
        if tokens % tp:
            raise ConfigError(f"--sequence-parallel needs the {tokens} tokens of a microbatch to divide over --tp {tp}.")
        sp = True
    elif c.sequence_parallel is None:
        sp = phase != "decode" and tp > 1 and tokens % tp == 0
    else:
        sp = False
    par = Parallelism(tp, ep, dp, pp, sp, mb)
    topo = topology_of(hw, ranks, lnc)
    if c.cc_algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown --cc-algorithm '{c.cc_algorithm}'; choose one of {', '.join(ALGORITHMS)}.")
    jitter = parse_jitter(c.jitter)
    stragglers = parse_stragglers(c.straggler, chips)
    skew = 0.0
    if c.expert_skew is not None:
        try:
            skew = float(c.expert_skew)
        except (TypeError, ValueError):
            raise ConfigError(f"--expert-skew must be a number like 1.0 (got {c.expert_skew!r}).") from None
        if isinstance(c.expert_skew, bool) or not np.isfinite(skew) or not 0 <= skew <= MAX_SKEW:
            raise ConfigError(f"--expert-skew must be between 0 (uniform) and {MAX_SKEW:g} (got {c.expert_skew!r}).")
        if cfg.moe is None and skew > 0:
            raise ConfigError(f"--expert-skew shapes mixture-of-experts routing; {cfg.name} is dense.")
    workers = None if c.workers is None else positive("workers", c.workers)
    detail_chips: list[int] = []
    if c.detail_chips is not None:
        if c.detail == "kernel":
            raise ConfigError("--detail-chips picks the chips to record instructions for; add --detail instruction.")
        detail_chips = parse_chip_list(c.detail_chips, chips, "--detail-chips")
        detail = "instruction"
        detail_cores = detail_cores or [0]
    elif detail == "instruction":
        detail_chips = [0]
    on_chip = min(per_chip, ranks)   # ranks on the fullest chip
    mem = check_chip_fits(cfg, phase, batch, seq, context, dtype, par, hw.logical_core(lnc).hbm_capacity,
                          f"logical core of a {hw.name} chip (LNC={lnc})", on_chip)
    mem = {k: v * on_chip for k, v in mem.items()}   # meta.json memory_bytes: the fullest chip's
    wl = Workload(cfg.name, cfg.display, "model", dtype, [], model_params(cfg, phase, batch, seq, context, layers),
                  phase, {L: f"layer {L}" for L in range(layers)})
    mc = MultiChip(cfg, phase, batch, seq, context, layers, par, topo, jitter, stragglers, skew, detail_chips,
                   c.cc_algorithm, workers, fusion=fusion_on(c, phase))
    return wl, mem, mc, detail, detail_cores or []
