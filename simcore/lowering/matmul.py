"""Matmul lowering: C[M,N] = A[M,K] @ B[K,N] as a blocked, multi-buffered NKI-style kernel.

Layout (nki.isa.nc_matmul): the stationary tile is A^T[k, m] (contraction on the 128
partitions, at most 128 columns), the moving tile is B[k, n] (at most 512 columns), the
result accumulates in fp32 in one PSUM bank per (m, n) tile. Activations are kept
transposed between layers (the producer writes A^T), so no transposes are needed.

Loop nest per core: for each (n block, m block, k block): DMA the A and B blocks into
SBUF (multi-buffered, so loads overlap compute); for each m tile and k step:
LoadStationary A^T, then one MultiplyMoving per n tile into its PSUM bank. After the
block's last k step the banks are evacuated (Scalar copy, or a Vector add into an fp32
SBUF accumulator when K spans several blocks) and, after the last k block, cast and
stored to HBM. PSUM banks are double-buffered (bank sets alternate between groups).
MX dtypes take 512 contraction rows per pass and need scale tensors (one uint8 per 32
elements, counted in the bytes); activations arriving in BF16 are quantized on the
Vector engine first (QuantizeMX, or a cast for FP8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcore.dtypes import dtype_bytes, is_mx
from simcore.errors import ConfigError
from simcore.hardware import Hardware
from simcore.lowering import costs as C
from simcore.lowering.buffers import Buffer, slots
from simcore.lowering.engines import MATRIX, SCALAR, TENSOR, VECTOR
from simcore.lowering.program import OP as C_OP, ROLE_IN, ROLE_OUT, ProgramBuilder

MOVING = 512
SPAN = 1e7  # program-order key space per block


OUT_BUFS = 4  # bf16 output tiles (one m tile x the block's columns) in flight to the store queue


@dataclass(frozen=True)
class MatmulPlan:
    nbt: int    # n tiles per block (PSUM banks per m tile)
    mbt: int    # m tiles per block
    kbt: int    # k steps per block
    nbuf: int   # SBUF buffers per input stream
    sbuf_bytes: int   # every SBUF buffer the kernel allocates (the sum of matmul_buffers')
    est_ns: float
    a_resident: bool = False   # A loaded once and kept for every n block
    psum_res: bool = False     # accumulators stay in PSUM across k blocks
    psum_banks: int = 0        # PSUM banks allocated


def _sizes(total: int, tile: int) -> np.ndarray:
    n = max(1, math.ceil(total / tile))
    s = np.full(n, tile, np.int64)
    s[-1] = total - tile * (n - 1)
    return s


def matmul_buffers(hw: Hardware, m: int, k: int, n: int, dtype: str, a_bytes: float, quant: bool,
                   nbt: int, mbt: int, kbt: int, nbuf: int) -> tuple[list[Buffer], bool, bool]:
    """(buffers, A resident, PSUM-resident accumulators) of a blocking: what the lowering allocates.
    SBUF: `nbuf` slots per input stream (A^T in its HBM dtype plus its quantised copy, B), or all of
    A^T when it stays resident across n blocks; the fp32 SBUF accumulator of one block when K spans
    several blocks and the accumulators do not stay in PSUM; OUT_BUFS bf16 output tiles. PSUM: two
    sets of a group's banks (one accumulating while the other is evacuated). A^T and B have the
    contraction on their partitions; the accumulator and output tiles the rows of C."""
    P = hw.partitions
    kp = hw.contraction_per_pass(dtype)
    mt, kt, nt = math.ceil(m / P), math.ceil(k / kp), math.ceil(n / MOVING)
    nbt, mbt, kbt = min(nbt, nt), min(mbt, mt), min(kbt, kt)
    wb = dtype_bytes(dtype)
    kb, mrows, ncols = min(k, kbt * kp), min(m, mbt * P), min(n, nbt * MOVING)
    nblk, mblk, kblk = math.ceil(nt / nbt), math.ceil(mt / mbt), math.ceil(kt / kbt)
    rows_per_partition = max(1, kp // P)  # MX passes put 4 contraction rows on each partition
    a_total = m * k * (a_bytes + (wb if quant else 0.0))
    a_res = mblk == 1 and nblk > 1 and a_total <= hw.sbuf_budget / 8
    psum_res = kblk > 1 and mbt * nbt <= hw.psum_banks // 2
    a_in = "A^T (bf16, to quantise)" if quant else "A^T"
    out: list[Buffer] = []
    if a_res:
        kparts = min(P, math.ceil(k / rows_per_partition))
        out.append(Buffer(a_in + ", resident", "activations", kparts, math.ceil(m * k * a_bytes)))
        if quant:
            out.append(Buffer(f"A^T ({dtype}), resident", "activations", kparts, math.ceil(m * k * wb)))
    else:
        kparts = min(P, math.ceil(kb / rows_per_partition))
        out += slots(a_in + " block", "activations", kparts, math.ceil(kb * mrows * a_bytes), nbuf)
        if quant:
            out += slots(f"A^T ({dtype}) block", "activations", kparts, math.ceil(kb * mrows * wb), nbuf)
    out += slots("B block", "weights", min(P, math.ceil(kb / rows_per_partition)), math.ceil(kb * ncols * wb), nbuf)
    if kblk > 1 and not psum_res:
        out.append(Buffer("C accumulator (fp32)", "accumulators", min(P, mrows), mrows * ncols * 4))
    out += slots("C tile (bf16)", "activations", P, P * ncols * 2, OUT_BUFS)
    banks = mbt * nbt if psum_res else nbt
    out += slots("C partial sums (fp32)", "accumulators", P, banks * hw.psum_bank_bytes, 2, "psum")
    return out, a_res, psum_res


def footprint(buffers: list[Buffer], memory: str) -> int:
    """Bytes of the buffers in `memory` (`sbuf` or `psum`)."""
    return sum(b.bytes for b in buffers if b.memory == memory)


def plan_matmul(hw: Hardware, m: int, k: int, n: int, dtype: str, a_bytes: float, quant: bool = False) -> MatmulPlan:
    """Pick block sizes the way a tuned NKI kernel would: fit SBUF, minimise estimated time."""
    kp = hw.contraction_per_pass(dtype)
    P = hw.partitions
    mt, kt, nt = math.ceil(m / P), math.ceil(k / kp), math.ceil(n / MOVING)
    wb = dtype_bytes(dtype)
    budget = hw.sbuf_budget
    n_last = n - MOVING * (nt - 1)
    te = mt * kt * ((nt - 1) * float(C.matmul_ns(hw, MOVING, dtype)) + float(C.matmul_ns(hw, n_last, dtype)))
    mm_avg = te / (mt * kt * nt)
    d = hw.data["dma"]
    evac_add = float(C.vector_ns(hw, MOVING, "fp32"))
    best: MatmulPlan | None = None
    for nbt in (4, 2, 1):
        if (nbt > nt and nbt > 1) or 2 * nbt > hw.psum_banks:
            continue
        for mbt in (16, 8, 4, 2, 1):
            if mbt > mt and mbt > 1:
                continue
            for kbt in sorted({kt, 64, 32, 16, 8, 4, 2, 1}, reverse=True):
                if kbt > kt:
                    continue
                kb = min(k, kbt * kp)
                a_blk = kb * min(m, mbt * P) * a_bytes
                b_blk = kb * min(n, nbt * MOVING) * wb
                nblk = math.ceil(nt / nbt)
                mblk = math.ceil(mt / mbt)
                kblk = math.ceil(kt / kbt)
                blocks = nblk * mblk * kblk
                blk_dma = float(C.dma_ns(hw, a_blk, P) + C.dma_ns(hw, b_blk, P))
                blk_te = min(mbt, mt) * min(kbt, kt) * min(nbt, nt) * mm_avg
                nbuf = 2 if blk_dma + d["latency_ns"] <= blk_te else 3
                bufs, a_res, psum_res = matmul_buffers(hw, m, k, n, dtype, a_bytes, quant, nbt, mbt, kbt, nbuf)
                sbuf, banks = footprint(bufs, "sbuf"), footprint(bufs, "psum") // hw.psum_bank_bytes
                if sbuf > budget or banks > hw.psum_banks:
                    continue
                dma = blocks * blk_dma + float(C.dma_ns(hw, m * n * 2, P))
                sync = (2 * blocks + mt * nblk) * d["descriptor_ns"]
                evac = mt * nt * kblk * evac_add / (1 if kblk > 1 else 2)
                est = max(te, dma, sync, evac) + d["latency_ns"] + blk_dma + blk_te + 2 * evac_add
                cand = MatmulPlan(nbt, mbt, kbt, nbuf, sbuf, est, a_res, psum_res, banks)
                if best is None or est < best.est_ns * 0.999:
                    best = cand
    if best is None:  # even the smallest blocks do not fit: impossible with real presets
        smallest, _, _ = matmul_buffers(hw, m, k, n, dtype, a_bytes, quant, 1, 1, 1, 2)
        need, banks = footprint(smallest, "sbuf"), footprint(smallest, "psum") // hw.psum_bank_bytes
        raise ConfigError(
            f"hardware preset '{hw.name}' is too small for a {m}x{k}x{n} {dtype} matmul: even its smallest blocking needs "
            f"{need:,} bytes of SBUF and {banks} PSUM banks per core, and the preset has {budget:,} usable bytes and "
            f"{hw.psum_banks} banks; raise sbuf.bytes_per_core or psum.banks."
        )
    return best


@dataclass
class MatmulInfo:
    model_flops: int
    plan: MatmulPlan


def _expand(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For parents with `counts` children each: (parent index, local index) per child."""
    counts = np.asarray(counts, np.int64)
    parent = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return parent, np.arange(len(parent)) - starts[parent]


def lower_matmul(b: ProgramBuilder, hw: Hardware, m: int, k: int, n: int, dtype: str, *, key0: float = 0.0,
                 quantize_a: bool = False, queue0: int = 0) -> tuple[MatmulInfo, float]:
    """Append one matmul's instructions to `b` (vectorised over all tiles); returns (info, next free key)."""
    P = hw.partitions
    kp = hw.contraction_per_pass(dtype)
    a_hbm_bytes = 2.0 if quantize_a else dtype_bytes(dtype)
    quant = quantize_a and dtype != "bf16"
    plan = plan_matmul(hw, m, k, n, dtype, a_hbm_bytes, quant)
    m_sz, k_sz, n_sz = _sizes(m, P), _sizes(k, kp), _sizes(n, MOVING)
    mt, kt, nt = len(m_sz), len(k_sz), len(n_sz)
    nbt, mbt, kbt = min(plan.nbt, nt), min(plan.mbt, mt), min(plan.kbt, kt)
    n_blocks, m_blocks, k_blocks = math.ceil(nt / nbt), math.ceil(mt / mbt), math.ceil(kt / kbt)
    wb = dtype_bytes(dtype)
    Q = hw.dma_queues
    LQ = max(1, Q - 1)
    store_queue = Q - 1
    mx = is_mx(dtype)
    assert plan.sbuf_bytes <= hw.sbuf_budget and plan.psum_banks <= hw.psum_banks
    bufs, _, _ = matmul_buffers(hw, m, k, n, dtype, a_hbm_bytes, quant, plan.nbt, plan.mbt, plan.kbt, plan.nbuf)
    b.alloc(bufs, int(hw.data["psum"]["bank_bytes_per_partition"]))

    # blocks in loop order (n block, m block, k block)
    B_nb, B_mb, B_kb = (x.ravel() for x in np.meshgrid(np.arange(n_blocks), np.arange(m_blocks), np.arange(k_blocks),
                                                       indexing="ij"))
    NB = len(B_nb)
    nm = np.minimum(mbt, mt - B_mb * mbt)
    nk = np.minimum(kbt, kt - B_kb * kbt)
    nn = np.minimum(nbt, nt - B_nb * nbt)
    stride = nbt + 3
    span = 2 + mbt * kbt * stride
    base = key0 + np.arange(NB) * span
    csum_k = np.concatenate([[0], np.cumsum(k_sz)])
    csum_m = np.concatenate([[0], np.cumsum(m_sz)])
    csum_n = np.concatenate([[0], np.cumsum(n_sz)])
    rows_k = csum_k[B_kb * kbt + nk] - csum_k[B_kb * kbt]
    rows_m = csum_m[B_mb * mbt + nm] - csum_m[B_mb * mbt]
    cols_n = csum_n[B_nb * nbt + nn] - csum_n[B_nb * nbt]
    a_bytes = (rows_k * rows_m * a_hbm_bytes).astype(np.int64)
    b_bytes = (rows_k * cols_n * wb).astype(np.int64)

    # groups = (block, m tile); LS = (group, k step); MM = (LS, n tile); evac = (group, n tile)
    g_blk, g_am = _expand(nm)
    NG = len(g_blk)
    ls_grp, ls_kl = _expand(nk[g_blk])
    NLS = len(ls_grp)
    ls_blk = g_blk[ls_grp]
    mm_ls, mm_nl = _expand(nn[ls_blk])
    NMM = len(mm_ls)
    mm_blk = ls_blk[mm_ls]
    last_kb = B_kb == k_blocks - 1
    st_grp = np.flatnonzero(last_kb[g_blk])
    NST = len(st_grp)
    # when a block's accumulators fit half the PSUM banks they stay in PSUM across k blocks
    # (evacuated once, after the last); otherwise each k block adds into an fp32 SBUF accumulator
    psum_res = plan.psum_res
    eg = st_grp if psum_res else np.arange(NG)          # groups that evacuate, in order
    if psum_res:
        pair_first = np.flatnonzero(B_kb == 0)
        cum_pair = np.cumsum(nm[pair_first]) - nm[pair_first]
        E = cum_pair[B_nb[g_blk] * m_blocks + B_mb[g_blk]] + g_am   # evac-group index of each group
    else:
        E = np.arange(NG)
    ev_e, ev_nl = _expand(nn[g_blk[eg]])
    ev_grp = eg[ev_e]
    NEV = len(ev_grp)
    ev_blk = g_blk[ev_grp]
    ev_start_of_eg = np.cumsum(nn[g_blk[eg]]) - nn[g_blk[eg]]
    NCAST = NST if (k_blocks > 1 and not psum_res) else 0

    # A stays resident in SBUF when there is one m block and it fits: later n blocks reuse it
    a_resident = plan.a_resident
    a_blocks = np.flatnonzero(B_nb == 0) if a_resident else np.arange(NB)
    NA = len(a_blocks)
    a_of_block = (B_kb if a_resident else np.arange(NB))  # index into the A loads
    # id bases in add order
    id0 = b.count
    dmaA = id0 + NA            # after the A loads' NA DmaTriggers
    dmaB = id0 + 2 * NA + NB   # after the B loads' NB DmaTriggers
    qid = id0 + 2 * NA + 2 * NB
    lsid = qid + (NA if quant else 0)
    mmid = lsid + NLS
    evid = mmid + NMM
    castid = evid + NEV
    sttrig = castid + NCAST
    stdma = sttrig + NST

    ls_start_of_grp = np.cumsum(nk[g_blk]) - nk[g_blk]
    mm_start_of_ls = np.cumsum(nn[ls_blk]) - nn[ls_blk]
    last_ls_of_blk = np.cumsum(nm * nk) - 1
    last_mm_of_blk = np.cumsum(np.bincount(mm_blk, minlength=NB)) - 1
    prev_blk = np.arange(NB) - plan.nbuf
    okb = prev_blk >= 0
    relA = np.where(okb, lsid + last_ls_of_blk[np.maximum(prev_blk, 0)], -1)[a_blocks]
    if a_resident:
        relA[:] = -1
    relB = np.where(okb, mmid + last_mm_of_blk[np.maximum(prev_blk, 0)], -1)

    # -- loads
    qa = (queue0 + 2 * np.arange(NB)) % LQ
    qb = (queue0 + 2 * np.arange(NB) + 1) % LQ
    got = b.dma(qa[a_blocks], base[a_blocks] + 0.2, a_bytes[a_blocks], P, "hbm", "sbuf", hw=hw, trigger_deps=(relA,),
                dtype="bf16" if quantize_a else dtype, role=ROLE_IN)
    assert got[0] == dmaA
    b.dma(qb, base + 0.4, b_bytes, P, "hbm", "sbuf", hw=hw, trigger_deps=(relB,), dtype=dtype)
    a_ready = dmaA + np.arange(NA)
    if quant:
        per_part = (rows_k * rows_m / P)[a_blocks]
        dur = C.quantize_mx_ns(hw, per_part) if mx else C.vector_ns(hw, per_part, "bf16")
        b.add(VECTOR, base[a_blocks] + 0.5, dur, "QuantizeMX" if mx else "TensorCopy", dtype, (a_ready,),
              bytes=(rows_k * rows_m * (2 + wb))[a_blocks].astype(np.int64))
        a_ready = qid + np.arange(NA)
    a_ready = a_ready[a_of_block]

    # -- LoadStationary
    ls_key = base[ls_blk] + 1 + (g_am[ls_grp] * kbt + ls_kl) * stride
    ls_last_mm = mmid + mm_start_of_ls + nn[ls_blk] - 1
    ls_rel = np.full(NLS, -1, np.int64)
    ls_rel[2:] = ls_last_mm[:-2]
    mi = B_mb[g_blk] * mbt + g_am  # global m tile per group
    ki = B_kb[ls_blk] * kbt + ls_kl
    got = b.add(TENSOR, ls_key, C.load_stationary_ns(hw), "LoadStationary", dtype, (a_ready[ls_blk], ls_rel),
                bytes=(k_sz[ki] * m_sz[mi[ls_grp]] * wb).astype(np.int64))
    assert got[0] == lsid

    # -- MultiplyMoving
    mm_grp = ls_grp[mm_ls]
    ni = B_nb[mm_blk] * nbt + mm_nl
    bank_dep = np.full(NMM, -1, np.int64)
    opens = (ls_kl[mm_ls] == 0) & ((B_kb[mm_blk] == 0) | (not psum_res))
    if psum_res:  # the bank set alternates between (n, m) block pairs: reuse the pair two back's banks
        pair = B_nb[mm_blk] * m_blocks + B_mb[mm_blk]
        first = np.flatnonzero(opens & (pair >= 2))
        p2 = pair[first] - 2
        a_m = g_am[mm_grp[first]]
        ok = a_m < nm[pair_first[np.maximum(p2, 0)]]
        first, e2 = first[ok], cum_pair[p2[ok]] + a_m[ok]
    else:  # each group's banks alternate with the group before it
        first = np.flatnonzero(opens & (mm_grp >= 2))
        e2 = E[mm_grp[first]] - 2
    if len(first):
        ok = mm_nl[first] < nn[g_blk[eg[e2]]]
        bank_dep[first[ok]] = evid + ev_start_of_eg[e2[ok]] + mm_nl[first[ok]]
    ms, ks, ns_ = m_sz[mi[mm_grp]], k_sz[ki[mm_ls]], n_sz[ni]
    got = b.add(MATRIX, ls_key[mm_ls] + 1 + mm_nl, C.matmul_ns(hw, ns_, dtype), "MultiplyMoving", dtype,
                (lsid + mm_ls, dmaB + mm_blk, bank_dep), flops=(2 * ms * ks * ns_).astype(np.int64),
                bytes=(ks * ns_ * wb + ms * ns_ * 4).astype(np.int64), pe=True)
    assert got[0] == mmid

    # -- PSUM evacuation after each block's last k step
    ev_ni = B_nb[ev_blk] * nbt + ev_nl
    ev_rows = m_sz[mi[ev_grp]]
    ev_cols = n_sz[ev_ni]
    last_ls_of_grp = ls_start_of_grp + nk[g_blk] - 1
    ev_key = base[ev_blk] + 1 + (g_am[ev_grp] * kbt + nk[ev_blk] - 1) * stride + nbt + 1.5 + ev_nl * 1e-3
    ev_mm = mmid + mm_start_of_ls[last_ls_of_grp[ev_grp]] + ev_nl
    if k_blocks == 1 or psum_res:
        on_scalar = ev_nl % 2 == 0
        eng = np.where(on_scalar, SCALAR, VECTOR)
        opc = np.where(on_scalar, C_OP["Activation"], C_OP["TensorCopy"])
        dur = np.where(on_scalar, C.scalar_ns(hw, ev_cols, "fp32"), C.vector_ns(hw, ev_cols, "fp32"))
        prev_acc = np.full(NEV, -1, np.int64)
        ebytes = ev_rows * ev_cols * 6
        # the evacuations write the group's bf16 output tile: one of OUT_BUFS, free once its store is done
        # (evacuating groups are the storing groups, in the same order)
        out_rel = np.where(ev_e >= OUT_BUFS, stdma + ev_e - OUT_BUFS, -1)
    else:
        first_kb = B_kb[ev_blk] == 0
        eng = np.where(first_kb, SCALAR, VECTOR)
        opc = np.where(first_kb, C_OP["Activation"], C_OP["TensorTensor"])
        dur = np.where(first_kb, C.scalar_ns(hw, ev_cols, "fp32"), C.vector_ns(hw, ev_cols, "fp32"))
        g_prev = ev_grp - nm[ev_blk]
        prev_acc = np.where(first_kb, -1, evid + ev_start_of_eg[np.maximum(g_prev, 0)] + ev_nl)
        ebytes = np.where(first_kb, ev_rows * ev_cols * 8, ev_rows * ev_cols * 12)
        out_rel = np.full(NEV, -1, np.int64)  # the final cast writes the output tile
    got = b.add(eng, ev_key, dur, opc, "fp32", (ev_mm, prev_acc, out_rel), bytes=ebytes.astype(np.int64))
    assert got[0] == evid

    # -- final cast (fp32 accumulator -> bf16) and store per m tile
    st_blk = g_blk[st_grp]
    st_cols = cols_n[st_blk]
    st_rows = m_sz[mi[st_grp]]
    last_ev = evid + ev_start_of_eg[E[st_grp]] + nn[st_blk] - 1
    other_ev = np.where(nn[st_blk] > 1, last_ev - 1, -1)
    st_key = base[st_blk] + 1 + (g_am[st_grp] * kbt + nk[st_blk] - 1) * stride + nbt + 2.2
    done = (last_ev, other_ev)
    if NCAST:
        cast_rel = np.where(np.arange(NST) >= OUT_BUFS, stdma + np.arange(NST) - OUT_BUFS, -1)
        b.add(SCALAR, st_key - 0.1, C.scalar_ns(hw, st_cols, "fp32"), "Activation", "fp32", (last_ev, cast_rel),
              bytes=(st_rows * st_cols * 6).astype(np.int64))
        done = (castid + np.arange(NST),)
    b.dma(np.full(NST, store_queue), st_key, (st_rows * st_cols * 2).astype(np.int64), st_rows, "sbuf", "hbm", done,
          hw=hw, role=ROLE_OUT)
    assert b.count == stdma + NST
    return MatmulInfo(2 * m * k * n, plan), key0 + NB * span + span
