"""Ops -> per-core kernels: shard an op over the compute cores, lower each share.

Sharding inside a chip mirrors what the compiler does with the cores of one chip:
matmuls split their output columns (N) when every core gets at least one 128-wide
slice, else their rows (tokens); attention splits query heads (each core reads the KV
heads its query heads need); row-wise ops split rows, or columns for pointwise ops
when there are fewer rows than cores. Identical shares lower to identical kernels,
which the scheduler simulates once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simcore.errors import ConfigError, size_text
from simcore.hardware import Hardware
from simcore.lowering import elementwise as E
from simcore.lowering import fused as F
from simcore.lowering.attention import AttentionShape, lower_attention
from simcore.lowering.buffers import extent, ring
from simcore.lowering.matmul import lower_matmul
from simcore.lowering.program import Program, ProgramBuilder
from simcore.workloads.ops import Op

NARROW_MIN_COLS = 64  # a tensor-parallel matmul shard splits its columns over cores down to this many each
POINTWISE = ("residual_add", "silu_mul", "rope", "embedding", "silu_mul_backward")
ROWWISE = {
    "rmsnorm": E.rmsnorm, "softmax": E.softmax, "residual_add": E.residual_add, "silu_mul": E.silu_mul,
    "rope": E.rope, "embedding": E.embedding, "tile_exp": E.tile_exp, "norm_backward": E.norm_backward, "silu_mul_backward": E.silu_mul_backward,
}


@dataclass(frozen=True)
class KernelSpec:
    """One core's share of an op: hashable, so identical shares are lowered and simulated once."""

    name: str
    kind: str
    args: tuple
    dtype: str
    model_flops: int


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _shard_fused(op: Op, cores: int) -> list[KernelSpec | None]:
    """A fused kernel (simcore.workloads.fusion) on each core: its matmul's share as the matmul alone would
    be split, the prologue (residual add, norm) on the rows that share reads, the epilogue (RoPE, SwiGLU) on
    the columns it writes, and -- in the TKG MLP kernel -- the down projection over the core's SwiGLU
    columns (a contraction slice) with a cross-core reduction of the partial sums."""
    parts = op.params["parts"]
    mi = next(i for i, o in enumerate(parts) if o.kind == "matmul")
    mm = parts[mi]
    specs = shard(mm, cores)
    active = sum(sp is not None for sp in specs)
    name = _leaf(op.name)
    out: list[KernelSpec | None] = []
    for sp in specs:
        if sp is None:
            out.append(None)
            continue
        (mc, kk, nc), = sp.args
        quant = sp.kind == "matmul_q"
        stages: list[tuple] = [("rowwise", o.kind, mc, o.params["cols"]) for o in parts[:mi]]
        stages.append(("matmul", quant, mc, kk, nc))
        flops = sp.model_flops
        col_split = nc < mm.params["n"]
        for o in parts[mi + 1:]:
            if o.kind == "rope":      # RoPE over the core's QKV columns (V passes through)
                stages.append(("rowwise", "rope", mc, nc))
            elif o.kind == "silu_mul":
                stages.append(("rowwise", "silu_mul", mc, max(1, nc // 2)))
            elif o.kind == "matmul":  # the TKG MLP's down projection
                h = o.params["n"]
                f_c = max(1, nc // 2) if col_split else o.params["k"]
                stages.append(("matmul", quant, mc, f_c, h))
                flops += 2 * mc * f_c * h
                if col_split and active > 1:
                    stages.append(("reduce", mc, h, active))
        out.append(KernelSpec(name, "fused", tuple(stages), op.dtype, flops))
    return out


def _shard_split_kv(op: Op, cores: int) -> list[KernelSpec | None] | None:
    """Flash decoding: when a chip has fewer (sequence, KV head) pairs than cores, each pair's keys are
    split over cores // pairs cores, so every KV head is read once per chip and no core idles; the
    partial outputs (with their row max and sum) are combined by a cross-core reduction. None when every
    core already has a pair of its own."""
    p = op.params
    H, KV = p["q_heads"], p.get("kv_heads", p["q_heads"])
    pairs = p["batch"] * KV
    if pairs >= cores or p.get("backward") or p["q_len"] > 8:
        return None
    splits = cores // pairs
    kvl = -(-p["kv_len"] // splits)
    d_v = p.get("d_v", 128)
    s = AttentionShape(1, H // KV, 1, p["q_len"], kvl, p.get("d_qk", 128), d_v, False)
    stages = (("attention", s), ("reduce", s.q_heads * s.q_len, d_v + 2, splits))
    spec = KernelSpec("flash_decode_split_kv", "fused", stages, "bf16", s.model_flops())
    return [spec if c < pairs * splits else None for c in range(cores)]


def _shard_queries(op: Op, cores: int, heads: int, bs: int, qs: int) -> list[KernelSpec | None]:
    """Prefill attention with more cores per head than sequences to split: each head's queries are cut
    into 2 x qs blocks and a core takes blocks i and 2qs-1-i (zig-zag), so under the causal mask every
    core sees about as many keys -- as flash-attention kernels balance query blocks over cores."""
    p = op.params
    q, kv = p["q_len"], p["kv_len"]
    past = kv - q
    causal = bool(p.get("causal", q > 1))
    sizes = [len(a) for a in np.array_split(np.arange(q), 2 * qs)]
    ends = np.cumsum(sizes)
    out: list[KernelSpec | None] = [None] * cores
    c = 0
    for _ in range(heads * bs):
        for i in range(qs):
            stages, flops = [], 0
            for blk in (i, 2 * qs - 1 - i):
                if sizes[blk] == 0:
                    continue
                s = AttentionShape(p["batch"] // bs, 1, 1, sizes[blk], past + int(ends[blk]) if causal else kv,
                                   p.get("d_qk", 128), p.get("d_v", 128), causal)
                stages.append(("attention", s))
                flops += s.model_flops()
            out[c] = KernelSpec("flash_attention", "fused", tuple(stages), "bf16", flops) if stages else None
            c += 1
    return out


def shard(op: Op, cores: int) -> list[KernelSpec | None]:
    """The kernel each of `cores` compute cores runs for `op` (None: the core idles)."""
    p, k = op.params, op.kind
    out: list[KernelSpec | None] = [None] * cores
    if k == "fused":
        return _shard_fused(op, cores)
    if k == "attention" and p.get("split_kv"):
        got = _shard_split_kv(op, cores)
        if got is not None:
            return got
    if k == "matmul":
        m, kk, n = p["m"], p["k"], p["n"]
        q = bool(p.get("quantize_a", False))
        name = "matmul_" + _leaf(op.name)
        if p.get("split") == "n" or (n % cores == 0 and n // cores >= 128):
            nc = n // cores
            return [KernelSpec(name, "matmul", ((m, kk, nc),), op.dtype, 2 * m * kk * nc) if nc else None
                    for _ in range(cores)]
        if m >= cores:
            return [KernelSpec(name, "matmul", ((mc, kk, n),), op.dtype, 2 * mc * kk * n) if mc else None
                    for mc in _split(m, cores)] if not q else [
                KernelSpec(name, "matmul_q", ((mc, kk, n),), op.dtype, 2 * mc * kk * n) if mc else None
                for mc in _split(m, cores)]
        kind = "matmul_q" if q else "matmul"
        if p.get("partial_n"):  # a tensor-parallel shard too narrow for every core: split over as many as fit
            # at least 64 columns a core: below that a MultiplyMoving costs the same (its 64-cycle floor), above it
            # every core streams its own weights -- a 70B QKV shard of 768 columns on all 8 cores, not 6
            parts = max((c for c in range(1, cores + 1) if n % c == 0 and n // c >= NARROW_MIN_COLS), default=1)
            if parts > 1:
                nc = n // parts
                return [KernelSpec(name, kind, ((m, kk, nc),), op.dtype, 2 * m * kk * nc) if c < parts else None
                        for c in range(cores)]
        out[0] = KernelSpec(name, kind, ((m, kk, n),), op.dtype, 2 * m * kk * n)
        return out
    if k in ("grouped_matmul", "grouped_wgrad"):
        ms, kk, n = list(p["ms"]), p["k"], p["n"]
        if not ms:
            return out
        probs = [(kk, mi, n) for mi in ms] if k == "grouped_wgrad" else [(mi, kk, n) for mi in ms]
        q = bool(p.get("quantize_a", False)) and k != "grouped_wgrad"
        kind = "matmul_q" if q else "matmul"
        name = "grouped_matmul_" + _leaf(op.name)
        if n % cores == 0 and n // cores >= 128:
            share = tuple((a, b, c // cores) for a, b, c in probs)
            flops = sum(2 * a * b * c for a, b, c in share)
            return [KernelSpec(name, kind, share, op.dtype, flops) for _ in range(cores)]
        for c in range(cores):  # expert parallel inside the chip: experts round-robin over cores
            share = tuple(probs[c::cores])
            if share:
                out[c] = KernelSpec(name, kind, share, op.dtype, sum(2 * a * b * cc for a, b, cc in share))
        return out
    if k == "attention":
        H, KV = p["q_heads"], p.get("kv_heads", p["q_heads"])
        if H < cores:  # tensor parallel left the chip fewer heads than cores: a head per core, then split the batch
            per_head = cores // H
            bs = max(d for d in range(1, per_head + 1) if p["batch"] % d == 0)
            qs = per_head // bs
            if qs > 1 and p["q_len"] > 8 and not p.get("backward"):
                return _shard_queries(op, cores, H, bs, qs)
            s = AttentionShape(p["batch"] // bs, 1, 1, p["q_len"], p["kv_len"], p.get("d_qk", 128), p.get("d_v", 128),
                               bool(p.get("causal", p["q_len"] > 1)), bool(p.get("backward", False)))
            name = "flash_attention_bwd" if s.backward else ("flash_decode" if s.q_len <= 8 else "flash_attention")
            return [KernelSpec(name, "attention", (s,), "bf16", s.model_flops()) if c < H * bs else None
                    for c in range(cores)]
        hc = H // cores
        kvc = KV // cores if KV >= cores else 1
        s = AttentionShape(p["batch"], hc, kvc, p["q_len"], p["kv_len"], p.get("d_qk", 128), p.get("d_v", 128),
                           bool(p.get("causal", p["q_len"] > 1)), bool(p.get("backward", False)))
        name = "flash_attention_bwd" if s.backward else ("flash_decode" if s.q_len <= 8 else "flash_attention")
        return [KernelSpec(name, "attention", (s,), "bf16", s.model_flops()) for _ in range(cores)]
    if k == "adamw":
        return [KernelSpec("adamw", "adamw", (pc,), "fp32", 0) if pc else None for pc in _split(p["params"], cores)]
    # row-wise kernels
    rows = p["rows"]
    cols = p.get("cols", p.get("vocab", p.get("experts", 1)))
    extra = tuple(p[x] for x in ("experts", "top_k") if x in p)
    name = k
    if rows >= cores:
        return [KernelSpec(name, k, (rc, cols) + extra, "bf16", 0) if rc else None for rc in _split(rows, cores)]
    if k in POINTWISE:
        return [KernelSpec(name, k, (rows, cc) + extra, "bf16", 0) if cc else None for cc in _split(cols, cores)]
    for c in range(rows):
        out[c] = KernelSpec(name, k, (1, cols) + extra, "bf16", 0)
    return out


@lru_cache(maxsize=64)  # layers repeat a handful of kernel shapes; bounded so memory stays small
def _lower_cached(hw_key: str, spec: KernelSpec) -> Program:
    hw = _HW[hw_key]
    b = ProgramBuilder()
    key = 0.0
    if spec.kind in ("matmul", "matmul_q"):
        # the problems of a grouped kernel take disjoint key ranges one after another, so the kernel is
        # their programs concatenated; each problem is lowered once (MoE chips share expert shapes)
        lq = max(1, hw.dma_queues - 1)
        return _grouped(hw, [_lower_problem(hw_key, m, k, n, spec.dtype, spec.kind == "matmul_q", i % lq)
                             for i, (m, k, n) in enumerate(spec.args)])
    elif spec.kind == "fused":
        return _lower_fused(hw_key, spec.args, spec.dtype)
    elif spec.kind == "attention":
        lower_attention(b, hw, spec.args[0])
    elif spec.kind == "adamw":
        E.lower_rowwise(b, hw, E.adamw(spec.args[0]))
    elif spec.kind in ROWWISE:
        rows, cols = spec.args[:2]
        E.lower_rowwise(b, hw, ROWWISE[spec.kind](rows, cols))
    elif spec.kind == "router_topk":
        E.lower_rowwise(b, hw, E.router_topk(spec.args[0], spec.args[1], spec.args[-1]))
    elif spec.kind == "moe_combine":
        E.lower_rowwise(b, hw, E.moe_combine(spec.args[0], spec.args[1], spec.args[-1]))
    elif spec.kind == "sampling":
        E.lower_rowwise(b, hw, E.sampling(spec.args[0], spec.args[1]))
    elif spec.kind == "cross_entropy":
        E.lower_rowwise(b, hw, E.cross_entropy(spec.args[0], spec.args[1]))
    else:
        raise ValueError(f"no lowering for kernel kind {spec.kind}")
    return b.build()


def _lower_stage(hw_key: str, stage: tuple, dtype: str) -> Program:
    hw = _HW[hw_key]
    kind = stage[0]
    if kind == "matmul":
        _, quant, m, k, n = stage
        return _lower_problem(hw_key, m, k, n, dtype, quant, 0)
    b = ProgramBuilder()
    if kind == "rowwise":
        E.lower_rowwise(b, hw, F.ROWWISE_STAGES[stage[1]][0](stage[2], stage[3]))
    elif kind == "attention":
        lower_attention(b, hw, stage[1])
    elif kind == "reduce":
        F.lower_core_reduce(b, hw, stage[1], stage[2], stage[3])
    else:
        raise ValueError(f"no lowering for fused stage {kind}")
    return b.build()


def _lower_fused(hw_key: str, stages: tuple, dtype: str) -> Program:
    """The stages lowered one by one and joined: what passes from one stage to the next stays in SBUF."""
    progs = [_lower_stage(hw_key, st, dtype) for st in stages]
    drop_in: list[tuple[int, ...]] = [()]
    drop_out = [False] * len(stages)
    for j in range(1, len(stages)):
        cur, prev = stages[j], stages[j - 1]
        if cur[0] == "attention":  # independent work (another query block): nothing passes between them
            drop_in.append(())
            continue
        drop_in.append(F.ROWWISE_STAGES[cur[1]][1] if cur[0] == "rowwise" else (0,) if cur[0] == "matmul" else ())
        drop_out[j - 1] = not (prev[0] == "rowwise" and prev[1] == "residual_add")  # the residual stream is kept
    hw = _HW[hw_key]
    return F.fuse_programs(progs, drop_in, drop_out, hw.sbuf_budget, hw.psum_banks * hw.psum_bank_bytes)


def _grouped(hw: Hardware, parts: list[Program]) -> Program:
    """A grouped matmul's problems one after another, sharing SBUF and PSUM through a ring
    (simcore.lowering.buffers.ring): a problem's loads wait for the problems whose SBUF it reuses,
    its first matmul for those whose PSUM banks it reuses, so the core never holds more than it has."""
    if len(parts) == 1:
        return parts[0]
    shifts: list[dict[str, int]] = [{} for _ in parts]
    waits: list[list[tuple[int, str]]] = [[] for _ in parts]
    capacity = {"sbuf": hw.sbuf_budget // hw.partitions,
                "psum": hw.psum_banks * int(hw.data["psum"]["bank_bytes_per_partition"])}
    for memory, cap in capacity.items():
        starts, reuse = ring([extent(p.buffers, memory) for p in parts], cap)
        for i, (a, js) in enumerate(zip(starts, reuse)):
            shifts[i][memory] = a
            waits[i] += [(j, memory) for j in js]
    return Program.concat(parts, shifts, waits)


@lru_cache(maxsize=1024)
def _lower_problem(hw_key: str, m: int, k: int, n: int, dtype: str, quantize_a: bool, queue0: int) -> Program:
    b = ProgramBuilder()
    lower_matmul(b, _HW[hw_key], m, k, n, dtype, key0=0.0, quantize_a=quantize_a, queue0=queue0)
    return b.build()


_HW: dict[str, Hardware] = {}


MAX_INSTRUCTIONS = 50_000_000


def estimate_instructions(hw: Hardware, spec: KernelSpec) -> int:
    """A quick upper estimate of a kernel's instruction count, before lowering it."""
    P = hw.partitions
    if spec.kind == "fused":
        total = 0
        for st in spec.args:
            if st[0] == "matmul":
                total += estimate_instructions(hw, KernelSpec(spec.name, "matmul", (st[2:],), spec.dtype, 0))
            elif st[0] == "attention":
                total += estimate_instructions(hw, KernelSpec(spec.name, "attention", (st[1],), "bf16", 0))
            elif st[0] == "rowwise":
                total += estimate_instructions(hw, KernelSpec(spec.name, st[1], st[2:], "bf16", 0))
            else:
                total += 16 + 2 * st[3]
        return total
    if spec.kind in ("matmul", "matmul_q"):
        kp = hw.contraction_per_pass(spec.dtype)
        return sum(-(-m // P) * -(-k // kp) * (-(-n // 512) + 1) + 16 for m, k, n in spec.args)
    if spec.kind == "attention":
        s = spec.args[0]
        units = s.batch * s.kv_heads * max(1, -(-(s.group * s.q_len) // P))
        return units * (-(-s.kv_len // 512)) * 30 + 16
    rows, cols = (spec.args[0], 1) if spec.kind == "adamw" else spec.args[:2]
    if spec.kind == "adamw":
        rows, cols = P, -(-rows // P)
    return (-(-rows // P)) * (-(-cols // 8192)) * 16 + 16


MAX_CAPTURE_INSTRUCTIONS = 50_000_000
CAPTURE_BYTES_PER_INSTRUCTION = 60
"""A single-chip capture keeps about this much per instruction it schedules (the timings behind the
HBM counters): 3.7M estimated instructions of 300 repeats of an 8192^3 matmul took 215 MB over the
interpreter's own (docs/PERFORMANCE.md, "Memory"). MAX_CAPTURE_INSTRUCTIONS keeps a capture under
about 3 GB; the largest single-chip model workload that fits HBM (Llama 3.1 8B prefill, 8K tokens)
estimates 5.3M."""


def _kernel_size(hw: Hardware, spec: KernelSpec) -> int:
    """`estimate_instructions`, or one sentence when one kernel alone is above MAX_INSTRUCTIONS."""
    n = estimate_instructions(hw, spec)
    if n > MAX_INSTRUCTIONS:
        raise ConfigError(
            f"kernel {spec.name} {spec.args[0] if spec.kind != 'attention' else ''} would need about {n:,} instructions "
            f"on one core, above the simulator's limit of {MAX_INSTRUCTIONS:,}; use a smaller shape or more compute cores."
        )
    return n


def check_capture_work(hw: Hardware, specs_per_op: Iterable[Iterable[KernelSpec]]) -> int:
    """The estimated instructions a capture will schedule (each op's distinct kernels), or one
    sentence when it is above MAX_CAPTURE_INSTRUCTIONS: refused before any memory is spent on it."""
    total = 0
    for specs in specs_per_op:
        for s in set(specs):
            total += _kernel_size(hw, s)
        if total > MAX_CAPTURE_INSTRUCTIONS:
            break
    if total > MAX_CAPTURE_INSTRUCTIONS:
        raise ConfigError(
            f"this workload would schedule more than {MAX_CAPTURE_INSTRUCTIONS:,} instructions on one chip (the "
            f"simulator's limit; it would need over {size_text(MAX_CAPTURE_INSTRUCTIONS * CAPTURE_BYTES_PER_INSTRUCTION)} "
            "of memory); use fewer layers or repeats, smaller shapes, or shard it over more chips."
        )
    return total


def lower_kernel(hw: Hardware, spec: KernelSpec) -> Program:
    """The program of one kernel (cached per hardware and spec: layers repeat their shapes)."""
    _kernel_size(hw, spec)
    key = hw.__dict__.get("_lowering_key")
    if key is None:  # serialising the preset is not free; a capture lowers thousands of kernels
        key = hw.__dict__["_lowering_key"] = json.dumps(hw.data, sort_keys=True, default=str)
    _HW.setdefault(key, hw)
    return _lower_cached(key, spec)


def clear_cache() -> None:
    """Forget lowered kernels (benchmarks use it to time lowering as a fresh process would)."""
    _lower_cached.cache_clear()
    _lower_problem.cache_clear()
