"""Fused kernels: several ops run as one kernel per core, as the NKI library's QKV and MLP kernels do.

A fused kernel is a sequence of stages (a residual add, an RMSNorm, a matmul, RoPE or SwiGLU, a
second matmul, a cross-core reduction), each lowered as its own kernel would be and concatenated.
What fusion changes is exactly what the separate kernels paid between them:
- the intermediate tensor stays in SBUF: the consumer's load of it and the producer's store of it
  are dropped (a residual add's output is still stored: it is the residual stream, read again later);
- the consumer's compute waits for the producer stage's last compute instruction instead of a
  load; its weight loads wait for nothing but their buffers and their turn on the in-order Sync
  engine, so they start during the producer stage (weight prefetch across what were op boundaries);
- no barrier and no kernel launch between the stages.
A stage's loads and stores carry a `role` (simcore.lowering.program) that says which tensor they move.

Cross-core reduction (`reduce` stage): when a kernel's cores each hold a partial result of the same
output (the TKG MLP kernel's down projection split along its contraction; flash decoding's split-KV
attention), each core stores its partial in FP32, the cores meet at a barrier (a semaphore exchange,
`runtime.op_barrier_ns`), and each core loads every core's partial of its 1/parts slice of the output,
(one strided DMA), adds them on the Vector engine and stores its slice.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simcore.hardware import Hardware
from simcore.lowering import costs as C
from simcore.lowering import elementwise as E
from simcore.lowering.buffers import extent
from simcore.lowering.engines import SYNC, VECTOR
from simcore.lowering.program import OP, ROLE_IN, ROLE_LINK, ROLE_OUT, Program, ProgramBuilder

# rowwise stages a fused kernel may hold, and which of their inputs come from the stage before
ROWWISE_STAGES = {"residual_add": (E.residual_add, ()), "rmsnorm": (E.rmsnorm, (0,)), "rope": (E.rope, (0,)),
                  "silu_mul": (E.silu_mul, (0, 1))}


def _spread(hw: Hardware, rows: int, nbytes: int) -> int:
    """Partitions a small partial tensor is laid over: at least its rows, as many as move it fastest (a
    1-row partial of 32 KiB on one partition would use one DMA engine)."""
    cands = sorted({min(hw.partitions, max(1, rows))} | {p for p in (8, 16, 32, 64, 128) if rows <= p <= hw.partitions})
    return int(min(cands, key=lambda p: float(C.dma_ns(hw, nbytes, p))))


def lower_core_reduce(b: ProgramBuilder, hw: Hardware, rows: int, cols: int, parts: int, *, key0: float = 0.0) -> float:
    """Partial [rows, cols] FP32 of this core -> HBM, barrier, sum of `parts` partials of its 1/parts column
    slice, stored in BF16. The first store is the stage's link (it waits for the stage before)."""
    Q = hw.dma_queues
    slice_cols = max(1, -(-cols // parts))
    st = b.dma(Q - 1, key0, rows * cols * 4, _spread(hw, rows, rows * cols * 4), "sbuf", "hbm", hw=hw, role=ROLE_LINK)
    bar = b.add(SYNC, key0 + 1, float(hw.runtime.op_barrier_ns), "CoreBarrier", "fp32", (st,))
    nbytes = rows * slice_cols * parts * 4
    r = _spread(hw, rows, nbytes)
    ld = b.dma(0, key0 + 2, nbytes, r, "hbm", "sbuf", hw=hw, trigger_deps=(bar,))
    per_part = max(1.0, rows * slice_cols * parts / r)
    add = b.add(VECTOR, key0 + 3, C.vector_ns(hw, per_part, "fp32"), "TensorTensor", "fp32", (ld,),
                bytes=int(rows * slice_cols * parts * 4))
    b.dma(Q - 1, key0 + 4, rows * slice_cols * 2, _spread(hw, rows, rows * slice_cols * 2), "sbuf", "hbm", (add,), hw=hw,
          role=ROLE_OUT)
    return key0 + 6


_NOT_COMPUTE = (OP["DmaTrigger"], OP["CoreBarrier"])


def _last_compute(p: Program, lo: int, hi: int) -> int:
    """Index of the last compute instruction (not a DMA, its trigger or a barrier) in [lo, hi), or -1."""
    idx = np.flatnonzero((p.partitions[lo:hi] == 0) & ~np.isin(p.opcode[lo:hi], _NOT_COMPUTE))
    return lo + int(idx[-1]) if len(idx) else -1


def fuse_programs(stages: list[Program], drop_in: list[tuple[int, ...]], drop_out: list[bool],
                  sbuf_budget: float = float("inf"), psum_bytes: float = float("inf")) -> Program:
    """Concatenate stage programs, dropping stage j's loads of inputs `drop_in[j]` (replaced by a dependency
    on stage j-1's last compute instruction) and its output store when `drop_out[j]`; instructions with
    role LINK get that dependency too."""
    # weight prefetch: the later stages' first weight loads are issued at the kernel's start (the Sync engine
    # triggers in order, so left in place they would wait behind the earlier stages' stores)
    # A fused kernel allocates every stage's buffers (they overlap in time: the next stage's weights load
    # during this one), one stage's above the other's. When they do not all fit SBUF or PSUM, the stages
    # run one after another in the buffers of the largest -- no prefetch across them (in the memory that
    # does fit, the stages' buffers still sit one above the other).
    fits = {"sbuf": sum(s.sbuf_bytes for s in stages) <= sbuf_budget, "psum": sum(s.psum_bytes for s in stages) <= psum_bytes}
    serial = not (fits["sbuf"] and fits["psum"])
    shifts = [{"sbuf": 0, "psum": 0} for _ in stages]
    for j in range(1, len(stages)):
        shifts[j] = {m: shifts[j - 1][m] + extent(stages[j - 1].buffers, m) if fits[m] else 0 for m in fits}
    cat = Program.concat(stages, shifts)
    n = len(cat)
    sizes = np.array([len(s) for s in stages])
    offs = np.concatenate([[0], np.cumsum(sizes)])
    sbuf_total = sum(s.sbuf_bytes for s in stages) if fits["sbuf"] else max(s.sbuf_bytes for s in stages)
    psum_total = sum(s.psum_bytes for s in stages) if fits["psum"] else max(s.psum_bytes for s in stages)
    drop = np.zeros(n, bool)
    rep = np.full(n, -1, np.int64)           # what a dropped instruction's dependents wait for instead
    link_own, link_dep = [], []
    dep_owner = np.repeat(np.arange(n), np.diff(cat.dep_ptr))
    for j in range(len(stages)):
        lo, hi = offs[j], offs[j + 1]
        role = cat.role[lo:hi]
        link = _last_compute(cat, offs[j - 1], offs[j]) if j > 0 else -1
        for i in drop_in[j]:
            m = np.flatnonzero(role == ROLE_IN + i) + lo
            drop[m] = True
            rep[m] = link
        if drop_out[j]:
            m = np.flatnonzero(role == ROLE_OUT) + lo
            drop[m] = True
            # a dropped store's dependents (buffer releases) wait for what the store waited for
            own = np.isin(dep_owner, m)
            if own.any():
                last = np.full(n, -1, np.int64)
                np.maximum.at(last, dep_owner[own], cat.dep_idx[own])
                rep[m] = last[m]
        if link >= 0 and serial:  # the stages' buffers do not all fit: a stage starts when the one before ends
            m = np.flatnonzero(np.diff(cat.dep_ptr)[lo:hi] == 0) + lo
            link_own.append(m)
            link_dep.append(np.full(len(m), link))
        if link >= 0:
            m = np.flatnonzero(role == ROLE_LINK) + lo
            link_own.append(m)
            link_dep.append(np.full(len(m), link))
    # resolve chains (a dropped store's dependency may itself be dropped)
    for _ in range(4):
        bad = (rep >= 0) & drop[np.maximum(rep, 0)]
        if not bad.any():
            break
        rep[bad] = rep[rep[bad]]
    deps = np.where(drop[cat.dep_idx], rep[cat.dep_idx], cat.dep_idx)
    own = dep_owner
    if link_own:
        own = np.concatenate([own, *link_own])
        deps = np.concatenate([deps, *link_dep])
    keep = ~drop[own] & (deps >= 0)
    own, deps = own[keep], deps[keep]
    new = np.cumsum(~drop) - 1
    own, deps = new[own], new[deps]
    pairs = np.unique(np.stack([own, deps], 1), axis=0) if len(own) else np.zeros((0, 2), np.int64)
    m = len(new) - int(drop.sum())
    dep_ptr = np.zeros(m + 1, np.int64)
    np.cumsum(np.bincount(pairs[:, 0], minlength=m), out=dep_ptr[1:])
    kept = ~drop
    fields = {f: getattr(cat, f)[kept] for f in Program.ARRAYS}
    before = np.concatenate([[0], np.cumsum(kept)])  # kept instructions before each index: the buffers' new ranges
    buffers = tuple(replace(b, first=int(before[b.first]), last=int(before[b.last])) for b in cat.buffers)
    return Program(**fields, dep_ptr=dep_ptr, dep_idx=pairs[:, 1].astype(np.int64), sbuf_bytes=int(sbuf_total),
                   psum_bytes=int(psum_total), buffers=buffers)
