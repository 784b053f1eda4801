"""Flash attention (forward, decode and backward) lowered to engine instructions.

Per unit of work (a batch entry, a KV head and a tile of up to 128 query rows -- in
decode the query heads of one KV group), the kernel walks the KV sequence in chunks of
512 (a moving tile):
  TE: LoadStationary Q^T, MultiplyMoving K^T chunk  -> S in PSUM
  Vector: running row max of S; GpSimd masks the diagonal chunk when causal
  exp(S - max) with a fused row sum: the Vector engine's accelerated `Exponential` on
  Trn3, the Scalar engine's activation on Trn2 (the point of Trn3's accelerated softmax)
  TE: Transpose P in 128-row pieces, copy P^T to SBUF, LoadStationary P^T,
      MultiplyMoving V -> O partial in PSUM
  Vector: O = O * alpha + O partial (online softmax rescale)
then normalises O and stores it. K and V are loaded once per (batch, KV head) when they
fit in SBUF, else streamed per unit; in decode they are the KV cache, read from HBM.
The tensor engine is software-pipelined one chunk ahead (S of chunk c+1 is issued
before the transposes and PV of chunk c), as a tuned NKI kernel does, so it does not
stall on every exponential.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcore.errors import ConfigError
from simcore.hardware import Hardware
from simcore.lowering import costs as C
from simcore.lowering.buffers import Buffer, slots, split_bytes
from simcore.lowering.matmul import _expand
from simcore.lowering.engines import GPSIMD, MATRIX, SCALAR, TENSOR, VECTOR
from simcore.lowering.program import OP as OPC, ROLE_IN, ROLE_OUT, ProgramBuilder

CHUNK = 512
SLOTS = 64.0
LAG = 4  # chunks the tensor engine runs ahead: S of chunk c+LAG is issued before PV of chunk c (LAG+1 S banks)


@dataclass(frozen=True)
class AttentionShape:
    batch: int
    q_heads: int        # query heads on this core
    kv_heads: int       # KV heads on this core (q_heads is a multiple)
    q_len: int          # new query tokens per sequence
    kv_len: int         # keys per sequence (context + new tokens)
    d_qk: int
    d_v: int
    causal: bool
    backward: bool = False

    @property
    def group(self) -> int:
        return self.q_heads // self.kv_heads

    def model_flops(self) -> int:
        """QK^T and PV FLOPs the model needs (causal: only the lower triangle)."""
        if self.causal:
            past = self.kv_len - self.q_len
            pairs = self.q_len * past + self.q_len * (self.q_len + 1) // 2
        else:
            pairs = self.q_len * self.kv_len
        f = 2 * self.batch * self.q_heads * pairs * (self.d_qk + self.d_v)
        return int(f * (2.5 if self.backward else 1))


DMA_KEYS = 2048   # keys per K/V load
RING = 3          # streamed K/V: load buffers in the ring


def _work_buffers(hw: Hardware, s: AttentionShape, q_slots: int) -> list[Buffer]:
    """SBUF of everything but K/V: Q^T tiles and the per-unit outputs of `q_slots` units in flight,
    exp(S - max) of the LAG+1 chunks the tensor engine runs ahead, the P^T pieces of two chunks,
    row statistics; training adds dO, O and the fp32 dQ accumulator per unit."""
    P = hw.partitions
    dpass = math.ceil(s.d_qk / P)
    A = "activations"
    out = slots("Q^T", A, P, dpass * P * P * 2, q_slots)  # 128 of d_qk on partitions x up to 128 query rows, bf16
    out += slots("exp(S - max)", "scratch", P, P * CHUNK * 2, LAG + 1)  # bf16, the chunks the tensor engine runs ahead
    out += slots("P^T pieces", "scratch", P, CHUNK * P * 2, 2)          # copied out of PSUM, bf16
    out += slots("O running (fp32)", "accumulators", P, P * s.d_v * 4, q_slots)
    out += slots("O (bf16)", A, P, P * s.d_v * 2, q_slots)             # the normalised tile stored
    out.append(Buffer("row max, sum, rescale (fp32)", "scratch", P, (LAG + 1) * P * 4 * 3))
    if s.backward:
        out += slots("dO, O", A, P, P * s.d_v * 4, q_slots)
        out += slots("dQ (fp32)", "gradients", P, P * s.d_qk * 4, q_slots)
    return out


def _kv_buffers(hw: Hardware, s: AttentionShape, kv: "_KvLoads", resident: bool, keys_per_load: int) -> list[Buffer]:
    """K^T (d_qk on partitions) and V (keys on partitions), the backward's fp32 dK and dV beside them,
    holding the most K/V bytes ever loaded and not yet released (`kv.sbuf_bytes`)."""
    P = hw.partitions
    how = "resident, 2 owners" if resident else f"ring of {RING} x {keys_per_load} keys"
    kind = "activations" if s.backward else "kv_cache"
    if s.backward:
        parts = split_bytes(kv.sbuf_bytes, (2 * s.d_qk, 2 * s.d_v, 4 * s.d_qk, 4 * s.d_v))
        names = (("K^T", kind), ("V", kind), ("dK (fp32)", "gradients"), ("dV (fp32)", "gradients"))
    else:
        parts = split_bytes(kv.sbuf_bytes, (s.d_qk, s.d_v))
        names = (("K^T", kind), ("V", kind))
    return [Buffer(f"{name} ({how})", k, min(P, s.d_qk) if name == "K^T" else P, nb)
            for (name, k), nb in zip(names, parts)]


@dataclass
class _KvLoads:
    ld_len: np.ndarray     # keys per load
    ld_key: np.ndarray     # program-order key of each load
    c_ld: np.ndarray       # the load each chunk reads
    rel_chunk: np.ndarray  # per load: the chunk whose last PV frees its buffer (-1: a free buffer)
    sbuf_bytes: int        # K/V buffers allocated: the most bytes ever loaded and not yet released
    grp: np.ndarray        # per load: its buffer group (an owner when resident, the load itself when streamed)
    grp_first_chunk: np.ndarray  # per group: the first chunk reading it
    grp_last_chunk: np.ndarray   # per group: the last chunk reading it
    depth: int             # a group's buffers are reused by the group `depth` later


def _kv_loads(s: AttentionShape, n_units, u_seq, u_kvh, u_kv, u_nchunk, c_unit, c_local, gkey, resident: bool,
              keys_per_load: int) -> _KvLoads:
    """K/V loads of one layout. Resident: each (sequence, KV head) loads all its keys once and keeps
    them for all its query tiles; the loads of owner o wait until owner o-2 is done (two owners'
    buffers). Streamed: each unit loads the keys it sees, and load i waits until the chunks of load
    i-RING are done (a ring of RING load buffers). Where the owner or load `depth` back finishes later
    in program order than this load is issued, the newest one finished before it is waited for, and
    the buffers then in use are counted: the footprint follows the dependencies, not the intent."""
    first_chunk_of_unit = np.cumsum(u_nchunk) - u_nchunk
    last_chunk_of_unit = np.cumsum(u_nchunk) - 1
    owner_key = u_seq * s.kv_heads + u_kvh if resident else np.arange(n_units)
    owner_first = np.r_[True, owner_key[1:] != owner_key[:-1]]
    owners = np.flatnonzero(owner_first)  # first unit of each K/V owner
    owner_of_unit = np.cumsum(owner_first) - 1
    last_unit_of_owner = np.r_[owners[1:] - 1, n_units - 1]
    load_len = np.full(len(owners), s.kv_len) if resident else u_kv[owners]  # streamed: only the keys it sees
    nld = np.ceil(load_len / keys_per_load).astype(np.int64)
    ld_owner, ld_local = _expand(nld)
    ld_len = np.minimum(keys_per_load, load_len[ld_owner] - ld_local * keys_per_load)
    ld_unit = owners[ld_owner]
    ld_key = gkey[first_chunk_of_unit[ld_unit] + np.minimum(ld_local * (keys_per_load // CHUNK), u_nchunk[ld_unit] - 1)] - 2
    ld_first_of_owner = np.cumsum(nld) - nld
    c_owner = owner_of_unit[c_unit]
    c_ld = ld_first_of_owner[c_owner] + np.minimum(c_local * CHUNK // keys_per_load, nld[c_owner] - 1)
    per_key = (s.d_qk + s.d_v) * (6 if s.backward else 2)  # K and V in bf16 (+ fp32 dK, dV accumulators)
    if resident:
        grp, depth = ld_owner, 2
        grp_last_chunk = last_chunk_of_unit[last_unit_of_owner]
        grp_bytes = load_len * per_key
    else:
        grp, depth = np.arange(len(ld_len)), RING
        grp_last_chunk = np.full(len(ld_len), -1, np.int64)
        np.maximum.at(grp_last_chunk, c_ld, np.arange(len(c_ld)))
        grp_last_chunk = np.maximum.accumulate(grp_last_chunk)
        grp_bytes = ld_len * per_key
    done_key = gkey[grp_last_chunk + LAG] + 20  # after the group's last PV (slots 10-12)
    rel_grp = np.minimum(grp - depth, np.searchsorted(done_key, ld_key, side="left") - 1)
    cs = np.concatenate([[0], np.cumsum(grp_bytes)])
    live = cs[grp + 1] - cs[np.maximum(rel_grp, -1) + 1]  # groups rel_grp+1 .. grp hold loaded keys
    rel_chunk = np.where(rel_grp >= 0, grp_last_chunk[np.maximum(rel_grp, 0)], -1)
    grp_first_chunk = np.full(len(grp_last_chunk), len(c_ld), np.int64)
    np.minimum.at(grp_first_chunk, grp[c_ld], np.arange(len(c_ld)))
    grp_first_chunk = np.minimum(grp_first_chunk, grp_last_chunk)  # (every group is read; a guard)
    return _KvLoads(ld_len, ld_key, c_ld, rel_chunk, int(live.max()), grp, grp_first_chunk, grp_last_chunk, depth)


def lower_attention(b: ProgramBuilder, hw: Hardware, s: AttentionShape, *, key0: float = 0.0) -> float:
    """Append the attention kernel; returns the next free key."""
    P = hw.partitions
    rows_per_seq = s.group * s.q_len  # query rows sharing one KV head
    q_tiles = max(1, math.ceil(rows_per_seq / P))
    n_units = s.batch * s.kv_heads * q_tiles
    u_seq = np.arange(n_units) // (s.kv_heads * q_tiles)
    u_kvh = (np.arange(n_units) // q_tiles) % s.kv_heads
    u_qt = np.arange(n_units) % q_tiles
    u_rows = np.minimum(P, rows_per_seq - u_qt * P)
    # causal: a query row at position p (within the new tokens) sees keys < past + p + 1;
    # rows of a tile are (head, token) pairs, token-major within a head group when q_len > 1
    past = s.kv_len - s.q_len
    if s.causal and s.q_len > 1:
        tok_per_tile = max(1, P // s.group) if s.group <= P else 1
        last_tok = np.minimum(s.q_len - 1, (u_qt + 1) * tok_per_tile - 1)
        u_kv = np.minimum(s.kv_len, past + last_tok + 1)
        first_tok = u_qt * tok_per_tile
        diag_from = past + first_tok  # chunks at or after this key index need a mask
    else:
        u_kv = np.full(n_units, s.kv_len)
        diag_from = np.full(n_units, s.kv_len + 1)
    u_nchunk = np.maximum(1, np.ceil(u_kv / CHUNK).astype(np.int64))
    c_unit, c_local = _expand(u_nchunk)
    NCH = len(c_unit)
    c_len = np.minimum(CHUNK, u_kv[c_unit] - c_local * CHUNK)
    c_len = np.maximum(c_len, 1)
    c_rows = u_rows[c_unit]
    c_diag = (c_local * CHUNK + c_len) > diag_from[c_unit]
    dpass = math.ceil(s.d_qk / P)
    nsub = np.ceil(c_len / P).astype(np.int64)
    sub_chunk, sub_local = _expand(nsub)
    NSUB = len(sub_chunk)
    sub_len = np.minimum(P, c_len[sub_chunk] - sub_local * P)
    sub_rows = c_rows[sub_chunk]

    exp_engine, _ = C.exp_ns(hw, 1)
    copy_engine = SCALAR if exp_engine == VECTOR else VECTOR
    P_BANKS = LAG + 3  # PSUM: S of LAG+1 chunks in flight, the P^T transposes, the PV partial output
    if P_BANKS > hw.psum_banks:
        raise ConfigError(f"hardware preset '{hw.name}' has {hw.psum_banks} PSUM banks, and flash attention needs {P_BANKS}; raise psum.banks.")
    psum = slots("S = QK^T (fp32)", "accumulators", P, hw.psum_bank_bytes, LAG + 1, "psum")
    psum += [Buffer("P^T transposes", "scratch", P, hw.psum_bank_bytes, "psum"),
             Buffer("O partial = PV (fp32)", "accumulators", P, hw.psum_bank_bytes, "psum")]
    gkey = key0 + np.arange(NCH + LAG) * SLOTS  # chunk c's S work at gkey[c], its PV work at gkey[c+LAG]
    first_chunk_of_unit = np.cumsum(u_nchunk) - u_nchunk
    last_chunk_of_unit = np.cumsum(u_nchunk) - 1

    # -- Q loads per unit, released by the final normalisation two units back (or earlier in program order)
    q_key = gkey[first_chunk_of_unit] - 1
    fin_keys = gkey[last_chunk_of_unit + LAG] + 31
    q_rel_u = np.minimum(np.arange(n_units) - 2, np.searchsorted(fin_keys, q_key, side="left") - 1)
    q_slots = int((np.arange(n_units) - q_rel_u).max())
    work_buffers = _work_buffers(hw, s, q_slots)
    work = sum(x.bytes for x in work_buffers)

    # -- K/V loads: per (seq, kv head) when two of them fit SBUF (resident), else streamed per unit
    # through a ring of load buffers; the first layout whose buffers fit the SBUF budget is taken
    for resident, keys_per_load in ((True, DMA_KEYS), (False, DMA_KEYS), (False, DMA_KEYS // 2), (False, CHUNK)):
        kv = _kv_loads(s, n_units, u_seq, u_kvh, u_kv, u_nchunk, c_unit, c_local, gkey, resident, keys_per_load)
        if kv.sbuf_bytes + work <= hw.sbuf_budget:
            break
    else:
        raise ConfigError(
            f"hardware preset '{hw.name}' is too small for this attention: even streaming K/V in {CHUNK}-key loads needs "
            f"{kv.sbuf_bytes + work:,.0f} bytes of SBUF per core, and the preset has {hw.sbuf_budget:,} usable; raise sbuf.bytes_per_core."
        )
    b.alloc(_kv_buffers(hw, s, kv, resident, keys_per_load) + work_buffers + psum,
            int(hw.data["psum"]["bank_bytes_per_partition"]))
    NLD = len(kv.ld_key)
    c_ld = kv.c_ld
    # ids (add order): K trig, K dma, V trig, V dma, Q trig, Q dma, then compute
    id0 = b.count
    k_dma = id0 + NLD
    v_dma = id0 + 3 * NLD
    q_dma = id0 + 4 * NLD + n_units
    after_q = id0 + 4 * NLD + 2 * n_units
    # compute instruction counts per chunk / sub-chunk (add order below)
    n_lsq = NCH * dpass
    n_mms = NCH * dpass
    n_mask = int(c_diag.sum())
    ids_lsq = after_q
    ids_mms = ids_lsq + n_lsq
    ids_mask = ids_mms + n_mms
    ids_max = ids_mask + n_mask
    ids_exp = ids_max + NCH
    ids_lst = ids_exp + NCH
    ids_tr = ids_lst + NSUB
    ids_cp = ids_tr + NSUB
    ids_lspv = ids_cp + NSUB
    ids_pv = ids_lspv + NSUB
    ids_upd = ids_pv + NSUB
    ids_fin = ids_upd + NCH
    last_pv_of_chunk = ids_pv + np.cumsum(nsub) - 1
    rel = np.where(kv.rel_chunk >= 0, last_pv_of_chunk[np.maximum(kv.rel_chunk, 0)], -1)
    k_bytes = (kv.ld_len * s.d_qk * 2).astype(np.int64)
    v_bytes = (kv.ld_len * s.d_v * 2).astype(np.int64)
    Q = hw.dma_queues
    LQ = max(1, Q - 1)
    got = b.dma(np.arange(NLD) % LQ, kv.ld_key, k_bytes, min(P, s.d_qk), "hbm", "sbuf", hw=hw, trigger_deps=(rel,))
    assert got[0] == k_dma
    b.dma((np.arange(NLD) + 1) % LQ, kv.ld_key + 0.5, v_bytes, P, "hbm", "sbuf", hw=hw, trigger_deps=(rel,))
    q_rel = np.where(q_rel_u >= 0, ids_fin + np.maximum(q_rel_u, 0), -1)
    got = b.dma((np.arange(n_units) + 2) % LQ, q_key, (u_rows * s.d_qk * 2).astype(np.int64), min(P, s.d_qk), "hbm", "sbuf",
                hw=hw, trigger_deps=(q_rel,), role=ROLE_IN)
    assert got[0] == q_dma
    # -- S = Q K^T per chunk (one pass per 128 of d_qk)
    pc, pl = _expand(np.full(NCH, dpass))
    lsq = b.add(TENSOR, gkey[pc] + 1 + pl * 0.01, C.load_stationary_ns(hw), "LoadStationary", "bf16", (q_dma + c_unit[pc],),
                bytes=(c_rows[pc] * P * 2).astype(np.int64))
    assert lsq[0] == ids_lsq
    bank_rel = np.where(np.arange(NCH) > LAG, ids_exp + np.arange(NCH) - LAG - 1, -1)
    d_this = np.minimum(P, s.d_qk - pl * P)
    mms = b.add(MATRIX, gkey[pc] + 1.5 + pl * 0.01, C.matmul_ns(hw, c_len[pc], "bf16"), "MultiplyMoving", "bf16",
                (lsq, k_dma + c_ld[pc], np.where(pl == 0, bank_rel[pc], -1)),
                flops=(2 * c_rows[pc] * d_this * c_len[pc]).astype(np.int64),
                bytes=(d_this * c_len[pc] * 2 + c_rows[pc] * c_len[pc] * 4).astype(np.int64), pe=True)
    assert mms[0] == ids_mms
    last_s = ids_mms + np.arange(NCH) * dpass + dpass - 1
    diag_idx = np.flatnonzero(c_diag)
    if n_mask:
        b.add(GPSIMD, gkey[diag_idx] + 2, C.gpsimd_ns(hw, c_len[diag_idx]), "AffineSelect", "fp32", (last_s[diag_idx],),
              bytes=(c_rows[diag_idx] * c_len[diag_idx] * 8).astype(np.int64))
    mask_of_chunk = np.full(NCH, -1, np.int64)
    mask_of_chunk[diag_idx] = ids_mask + np.arange(n_mask)
    mx = b.add(VECTOR, gkey[:NCH] + 3, C.vector_ns(hw, c_len, "fp32"), "TensorReduce", "fp32", (last_s, mask_of_chunk),
               bytes=(c_rows * c_len * 4).astype(np.int64))
    assert mx[0] == ids_max
    _, exp_dur = C.exp_ns(hw, c_len)
    ex = b.add(exp_engine, gkey[:NCH] + 4, exp_dur, "Exponential" if exp_engine == VECTOR else "ActivationReduce", "bf16",
               (mx,), bytes=(c_rows * c_len * 6).astype(np.int64))
    assert ex[0] == ids_exp
    # -- P^T pieces and PV, one chunk later in the tensor engine's order
    # all transposes of a chunk first, then its PV matmuls, so the copies overlap the transposes
    sk = gkey[sub_chunk + LAG] + 10 + sub_local * 0.01
    b.add(TENSOR, sk, C.load_stationary_ns(hw), "LoadStationary", "bf16", (ex[sub_chunk],),
          bytes=(sub_rows * sub_len * 2).astype(np.int64))
    tr = b.add(MATRIX, sk + 0.001, C.transpose_ns(hw, sub_rows), "Transpose", "bf16", (ids_lst + np.arange(NSUB),),
               flops=(2 * sub_rows * sub_len * sub_rows).astype(np.int64),
               bytes=(sub_rows * sub_len * 6).astype(np.int64), pe=True)
    # P^T copies PSUM -> SBUF run on the engine exp leaves free (Scalar on Trn3, Vector on Trn2)
    on_scalar = np.full(NSUB, copy_engine == SCALAR)
    cp_eng = np.where(on_scalar, SCALAR, VECTOR)
    cp_dur = np.where(on_scalar, C.scalar_ns(hw, sub_rows, "fp32"), C.vector_ns(hw, sub_rows, "fp32"))
    cp_op = np.where(on_scalar, OPC["Activation"], OPC["TensorCopy"])
    cp = b.add(cp_eng, sk + 0.002, cp_dur, cp_op, "bf16", (tr,), bytes=(sub_rows * sub_len * 6).astype(np.int64))
    b.add(TENSOR, sk + 1, C.load_stationary_ns(hw), "LoadStationary", "bf16", (cp,),
          bytes=(sub_rows * sub_len * 2).astype(np.int64))
    pv = b.add(MATRIX, sk + 1.001, C.matmul_ns(hw, np.full(NSUB, s.d_v), "bf16"), "MultiplyMoving", "bf16",
               (ids_lspv + np.arange(NSUB), v_dma + c_ld[sub_chunk]),
               flops=(2 * sub_rows * sub_len * s.d_v).astype(np.int64),
               bytes=(sub_len * s.d_v * 2 + sub_rows * s.d_v * 4).astype(np.int64), pe=True)
    assert pv[0] == ids_pv
    upd = b.add(VECTOR, gkey[LAG:] + 30, C.vector_ns(hw, np.full(NCH, s.d_v), "fp32"), "TensorTensor", "fp32",
                (last_pv_of_chunk,), bytes=(c_rows * s.d_v * 12).astype(np.int64))
    assert upd[0] == ids_upd
    fin_key = gkey[last_chunk_of_unit + LAG] + 31
    fin = b.add(VECTOR, fin_key, C.vector_ns(hw, np.full(n_units, s.d_v), "fp32"), "TensorScalar", "fp32",
                (ids_upd + last_chunk_of_unit,), bytes=(u_rows * s.d_v * 6).astype(np.int64))
    assert fin[0] == ids_fin
    b.dma(np.full(n_units, Q - 1), fin_key + 0.5, (u_rows * s.d_v * 2).astype(np.int64), u_rows, "sbuf", "hbm", (fin,), hw=hw,
          role=ROLE_OUT)
    next_key = float(gkey[-1] + SLOTS * 2)
    if s.backward:
        next_key = _lower_backward_extra(b, hw, s, kv, u_rows, first_chunk_of_unit, last_chunk_of_unit, c_unit, c_len,
                                         c_rows, sub_chunk, sub_len, sub_rows, NCH, NSUB, next_key)
    if s.q_len <= 8 and not s.backward:  # decode: append the new tokens' K and V to the KV cache
        nb = s.batch * s.kv_heads * s.q_len * (s.d_qk + s.d_v) * 2
        b.dma(Q - 1, next_key, nb, min(P, s.batch * s.kv_heads * s.q_len), "sbuf", "hbm", hw=hw)
        next_key += 2
    return next_key


def _lower_backward_extra(b, hw, s, kv, u_rows, first_chunk_of_unit, last_chunk_of_unit, c_unit, c_len, c_rows,
                          sub_chunk, sub_len, sub_rows, NCH, NSUB, key0):
    """The backward pass after the recomputed forward, in the same chunk order: dP = dO V^T and dS on
    Vector per chunk; per 128-key piece dV += P^T dO, dK += dS^T Q, dQ += dS K (with dS transposes).
    The forward's buffers have been reused by then, so it loads again what it reads -- K and V through
    the forward's buffer groups (owners or ring slots, released the same way), Q, O and dO per unit
    (released two units back) -- and stores dQ per unit and each group's dK, dV once its last chunk
    is done."""
    P = hw.partitions
    Q = hw.dma_queues
    LQ = max(1, Q - 1)
    n_units = len(u_rows)
    NLD = len(kv.ld_len)
    key = key0 + np.arange(NCH) * SLOTS
    # ids in add order: K, V loads (trigger + transfer each), Q, dO, O loads, then the compute, then stores
    id0 = b.count
    k_ld, v_ld = id0 + NLD, id0 + 3 * NLD
    q_ld = id0 + 4 * NLD + n_units
    do_ld = id0 + 4 * NLD + 3 * n_units
    c0 = id0 + 4 * NLD + 6 * n_units
    ids_acc = c0 + 3 * NCH + 7 * NSUB
    # K/V: a group's loads are issued before its first chunk; the group `depth` back (or an earlier one
    # finished before this point in program order) frees its buffers
    ld_key = key[kv.grp_first_chunk[kv.grp]] - 2
    done_key = key[kv.grp_last_chunk] + 40
    rel_grp = np.minimum(kv.grp - kv.depth, np.searchsorted(done_key, ld_key, side="left") - 1)
    rel = np.where(rel_grp >= 0, ids_acc + kv.grp_last_chunk[np.maximum(rel_grp, 0)], -1)
    # no more groups in flight than in the forward, whose footprint b.sbuf_bytes already holds
    assert (kv.grp - rel_grp <= kv.depth).all()
    got = b.dma(np.arange(NLD) % LQ, ld_key, (kv.ld_len * s.d_qk * 2).astype(np.int64), min(P, s.d_qk), "hbm", "sbuf",
                hw=hw, trigger_deps=(rel,))
    assert got[0] == k_ld
    b.dma((np.arange(NLD) + 1) % LQ, ld_key + 0.5, (kv.ld_len * s.d_v * 2).astype(np.int64), P, "hbm", "sbuf", hw=hw,
          trigger_deps=(rel,))
    # Q, dO and O per unit
    u_key = key[first_chunk_of_unit] - 1
    u_done = key[last_chunk_of_unit] + 40
    u_rel = np.minimum(np.arange(n_units) - 2, np.searchsorted(u_done, u_key, side="left") - 1)
    urel = np.where(u_rel >= 0, ids_acc + last_chunk_of_unit[np.maximum(u_rel, 0)], -1)
    for j, (width, parts) in enumerate(((s.d_qk, min(P, s.d_qk)), (s.d_v, u_rows), (s.d_v, u_rows))):
        got = b.dma((np.arange(n_units) + 2 + j) % LQ, u_key + 0.1 * j, (u_rows * width * 2).astype(np.int64), parts,
                    "hbm", "sbuf", hw=hw, trigger_deps=(urel,))
        assert got[0] == (q_ld, do_ld, do_ld + 2 * n_units)[j]
    o_ld = do_ld + 2 * n_units
    c_grp_ld = kv.c_ld
    ls = b.add(TENSOR, key, C.load_stationary_ns(hw), "LoadStationary", "bf16", (q_ld + c_unit,),
               bytes=(c_rows * P * 2).astype(np.int64))
    assert ls[0] == c0
    dp = b.add(MATRIX, key + 1, C.matmul_ns(hw, c_len, "bf16"), "MultiplyMoving", "bf16",
               (ls, v_ld + c_grp_ld, do_ld + c_unit), flops=(2 * c_rows * s.d_v * c_len).astype(np.int64),
               bytes=(s.d_v * c_len * 2).astype(np.int64), pe=True)
    ds = b.add(VECTOR, key + 2, C.vector_ns(hw, 2 * c_len, "fp32"), "TensorTensor", "fp32", (dp, o_ld + c_unit),
               bytes=(c_rows * c_len * 12).astype(np.int64))
    sk = key[sub_chunk] + 10 + np.arange(NSUB) % 64 * 0.01
    flops_pv = (2 * sub_rows * sub_len * s.d_v).astype(np.int64)
    flops_qk = (2 * sub_rows * sub_len * s.d_qk).astype(np.int64)
    ls1 = b.add(TENSOR, sk, C.load_stationary_ns(hw), "LoadStationary", "bf16", (ds[sub_chunk],))
    dv = b.add(MATRIX, sk + 0.001, C.matmul_ns(hw, np.full(NSUB, s.d_v), "bf16"), "MultiplyMoving", "bf16", (ls1,),
               flops=flops_pv, pe=True)
    tr = b.add(MATRIX, sk + 0.002, C.transpose_ns(hw, sub_rows), "Transpose", "bf16", (dv,),
               flops=(2 * sub_rows * sub_len * sub_rows).astype(np.int64), pe=True)
    cp = b.add(SCALAR, sk + 0.003, C.scalar_ns(hw, sub_rows, "fp32"), "Activation", "bf16", (tr,))
    ls2 = b.add(TENSOR, sk + 0.004, C.load_stationary_ns(hw), "LoadStationary", "bf16", (cp,))
    dk = b.add(MATRIX, sk + 0.005, C.matmul_ns(hw, np.full(NSUB, s.d_qk), "bf16"), "MultiplyMoving", "bf16", (ls2,),
               flops=flops_qk, pe=True)
    dq = b.add(MATRIX, sk + 0.006, C.matmul_ns(hw, np.full(NSUB, s.d_qk), "bf16"), "MultiplyMoving", "bf16",
               (dk, k_ld + c_grp_ld[sub_chunk]), flops=flops_qk, pe=True)
    last = dq[np.cumsum(np.bincount(sub_chunk, minlength=NCH)) - 1]
    acc = b.add(VECTOR, key + 40, C.vector_ns(hw, np.full(NCH, s.d_qk + s.d_v), "fp32"), "TensorTensor", "fp32", (last,),
                bytes=(c_rows * (s.d_qk + s.d_v) * 12).astype(np.int64))
    assert acc[0] == ids_acc
    # dQ per unit after its last chunk; each group's dK and dV after its last chunk
    b.dma(np.full(n_units, Q - 1), key[last_chunk_of_unit] + 41, (u_rows * s.d_qk * 2).astype(np.int64), u_rows, "sbuf",
          "hbm", (acc[last_chunk_of_unit],), hw=hw)
    g_keys = np.bincount(kv.grp, weights=kv.ld_len, minlength=len(kv.grp_last_chunk)).astype(np.int64)
    b.dma(np.full(len(g_keys), Q - 1), key[kv.grp_last_chunk] + 41.5, g_keys * (s.d_qk + s.d_v) * 2, P, "sbuf", "hbm",
          (acc[kv.grp_last_chunk],), hw=hw)
    return float(key[-1] + SLOTS * 2)
