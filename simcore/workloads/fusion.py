"""Which ops run as one kernel: the NKI kernels NxD Inference ships (`--fusion on`, the default).

NxD Inference's Llama tutorials enable `--fused-qkv --qkv-kernel-enabled --mlp-kernel-enabled
--attn-kernel-enabled` (libraries/nxd-inference/tutorials/trn2-llama3.3-70b-tutorial.rst); the kernels
are the NKI library's (nki/library/api/qkv and mlp): the QKV kernel fuses the residual add of the
previous layer's output, the RMSNorm and RoPE around the QKV projection; the MLP kernel fuses the
residual add, the RMSNorm, gate/up, the activation and -- for token generation (TKG: batch x
tokens <= 96, the library's threshold) -- the down projection. `fuse` rewrites an op sequence into
those kernels; entries that are not ops (collectives) end a run, so nothing fuses across them.
Training steps are not fused (these are inference kernels). `--fusion off` keeps one kernel per op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from simcore.workloads.ops import Op

FUSION_MODES = ("on", "off")
TKG_MAX_TOKENS = 96   # NKI library QKV/MLP kernels: TKG below batch x seqlen 96, CTE above

# (matmul leaf names a prologue of residual add + norm fuses into, epilogue op kind it absorbs, fused name)
_KERNELS = {
    "qkv_proj": ("rope", "fused_qkv"),
    "gate_up_proj": ("silu_mul", "fused_mlp"),
    "lm_head": (None, "fused_lm_head"),
}


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _fusable(run: list[Op], i: int) -> tuple[int, Op] | None:
    """If run[i:] starts a fused kernel: (ops it takes, the fused op). The residual add joins the kernel
    in TKG mode only: in CTE (prefill) the matmul's cores each normalise the rows they read, and every
    one of them storing the whole residual stream would multiply its writes by the cores."""
    j = i
    parts: list[Op] = []
    if j + 2 < len(run) and run[j].kind == "residual_add" and run[j + 2].kind == "matmul" \
            and run[j + 2].params["m"] <= TKG_MAX_TOKENS and run[j].params["rows"] == run[j + 2].params["m"]:
        parts.append(run[j])
        j += 1
    if j >= len(run) or run[j].kind != "rmsnorm":
        return None
    parts.append(run[j])
    j += 1
    if j >= len(run) or run[j].kind != "matmul" or _leaf(run[j].name) not in _KERNELS:
        return None
    mm = run[j]
    parts.append(mm)
    j += 1
    epi, fused = _KERNELS[_leaf(mm.name)]
    if epi is not None and j < len(run) and run[j].kind == epi:
        parts.append(run[j])
        j += 1
        tkg = mm.params["m"] <= TKG_MAX_TOKENS
        if fused == "fused_mlp" and tkg and j < len(run) and run[j].kind == "matmul" and _leaf(run[j].name) == "down_proj":
            parts.append(run[j])
            j += 1
    prefix = mm.name.rsplit(".", 1)[0] + "." if "." in mm.name else ""
    op = Op(prefix + fused, "fused", dict(parts=tuple(parts), m=mm.params["m"]), mm.dtype, mm.layer)
    return j - i, op


def _flash_decoding(op: Op) -> Op:
    """Decode attention as NxD Inference's flash decoding runs it: split over the keys when a chip's cores
    outnumber its (sequence, KV head) pairs (simcore.lowering.kernels._shard_split_kv)."""
    return Op(op.name, op.kind, dict(op.params, split_kv=True), op.dtype, op.layer)


def fuse_run(run: list[Op]) -> list[tuple[Op, list[Op]]]:
    """A run of consecutive ops with the fusable patterns replaced: (op, the original ops it stands for)."""
    out: list[tuple[Op, list[Op]]] = []
    i = 0
    while i < len(run):
        got = _fusable(run, i)
        if got is None:
            o = run[i]
            decode_attn = o.kind == "attention" and o.params["q_len"] <= 8 and not o.params.get("backward")
            out.append((_flash_decoding(o) if decode_attn else o, [o]))
            i += 1
        else:
            n, op = got
            out.append((op, run[i:i + n]))
            i += n
    return out


def fuse_ops(ops: Sequence[Op]) -> list[Op]:
    """A plain op list (a single-chip step) with its fusable runs fused."""
    return [op for op, _ in fuse_run(list(ops))]


def fuse(entries: Sequence[Any], op_of: Callable[[Any], Op | None], wrap: Callable[[Op, list[Any]], Any]) -> list[Any]:
    """`entries` with each run of consecutive ops fused (an entry `op_of` maps to None ends a run).
    `wrap(op, entries)` makes the entry of a new op from the entries it replaces; an op left as it was
    keeps its entry."""
    out: list[Any] = []
    run: list[Any] = []

    def flush() -> None:
        if not run:
            return
        ops = [op_of(e) for e in run]
        by_id = {id(o): e for o, e in zip(ops, run)}
        for new, old in fuse_run(ops):
            out.append(by_id[id(new)] if id(new) in by_id else wrap(new, [by_id[id(o)] for o in old]))
        run.clear()

    for e in entries:
        if op_of(e) is None:
            flush()
            out.append(e)
        else:
            run.append(e)
    flush()
    return out
