"""Row-wise kernels (norms, softmax, activations, residual adds, rope, router/top-k,
embedding gathers, optimizer updates) lowered to DMA + Vector/Scalar/GpSimd instructions.

A row-wise kernel walks its rows in tiles of 128 (one row per partition) and its columns
in chunks that fit SBUF; per tile it loads its inputs, runs a fixed sequence of engine
steps over the tile, and stores its outputs. Tiles are triple-buffered: the loads of
tile t wait only for tile t-3 to finish with its buffer, so DMA overlaps compute. A
buffer set is the tile's inputs and outputs in their dtypes plus one working tile for
intermediate results; the column chunk is the widest (up to MAX_COLS) whose NBUF sets
fit the core's SBUF budget (`Hardware.sbuf_budget`), and the kernel's SBUF footprint is
exactly those sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcore.errors import ConfigError
from simcore.hardware import Hardware
from simcore.lowering import costs as C
from simcore.lowering.buffers import Buffer, slots
from simcore.lowering.engines import GPSIMD, SCALAR, VECTOR
from simcore.lowering.program import ROLE_IN, ROLE_OUT, ProgramBuilder

NBUF = 3
MAX_COLS = 8192  # widest column chunk per tile (16 KiB of BF16 per partition per DMA: well past the 4 KiB DMA knee)
COL_ALIGN = 512  # narrower chunks are cut to a multiple of this (whole moving-tile widths)
FULL_WIDTH = ("Activation", "ActivationReduce", "Exponential", "TensorTensor", "TensorScalar", "TensorCopy",
              "QuantizeMX")  # opcodes that write a tile as wide as their input (the others write per-row values)


@dataclass(frozen=True)
class Step:
    """One instruction per tile: engine, opcode, elements per partition as a multiple of the
    tile's columns (`per_col`) plus a constant (`extra`), its dtype, and if it is a transcendental."""

    engine: str
    opcode: str
    per_col: float = 1.0
    extra: float = 0.0
    dtype: str = "bf16"
    transcendental: bool = False


@dataclass(frozen=True)
class RowwiseKernel:
    rows: int
    cols: int
    loads: tuple[float, ...]    # bytes per element of each input read from HBM
    stores: tuple[float, ...]   # bytes per element of each output written to HBM
    steps: tuple[Step, ...]
    row_reductions: int = 0     # reductions along a row (a folded layout adds a cross-partition step each)
    fold: bool = True           # few rows may be spread over all partitions (False: one row per partition, as given)
    tensors: tuple[tuple[str, str], ...] = ()  # (name, kind) of each load then each store (default: input i, output i)

    def tensor(self, i: int) -> tuple[str, str]:
        """(name, kind) of load i (0..) or, after the loads, store i - len(loads)."""
        if i < len(self.tensors):
            return self.tensors[i]
        nl = len(self.loads)
        return (f"input {i}", "activations") if i < nl else (f"output {i - nl}", "activations")


def _fold(k: RowwiseKernel, partitions: int) -> RowwiseKernel:
    """Few long rows (decode: one token) spread over all partitions instead of a few:
    [rows, cols] is laid out [128, rows*cols/128]; each row reduction then needs one
    cross-partition all-reduce on GpSimd."""
    cols = math.ceil(k.rows * k.cols / partitions)
    steps = list(k.steps)
    for _ in range(k.row_reductions):
        steps.insert(1, Step("gpsimd", "PartitionAllReduce", 0, 16, "fp32"))
    return RowwiseKernel(partitions, cols, k.loads, k.stores, tuple(steps), 0, tensors=k.tensors)


def _elem_bytes(dtype: str) -> float:
    return 4.0 if dtype in ("fp32", "int32") else 2.0


def _work_bytes_per_elem(k: RowwiseKernel) -> float:
    """A working tile (widest step dtype) when more than one step writes a full-width result."""
    wide = [st for st in k.steps if st.per_col > 0 and (st.opcode in FULL_WIDTH or st.engine == "exp")]
    return max(_elem_bytes(st.dtype) for st in wide) if len(wide) > 1 else 0.0


def set_bytes_per_elem(k: RowwiseKernel) -> float:
    """SBUF bytes per tile element of one buffer set: inputs and outputs in their dtypes, plus a
    working tile (widest step dtype) when more than one step writes a full-width result."""
    return float(sum(k.loads) + sum(k.stores) + _work_bytes_per_elem(k))


def rowwise_buffers(k: RowwiseKernel, partitions: int, chunk: int, sets: int) -> list[Buffer]:
    """The `sets` buffer sets of a tile of `partitions` x `chunk`: each input, output and the working tile."""
    per = list(k.loads) + list(k.stores)
    out: list[Buffer] = []
    for i, eb in enumerate(per):
        name, kind = k.tensor(i)
        out += slots(name, kind, partitions, math.ceil(partitions * chunk * eb), sets)
    work = _work_bytes_per_elem(k)
    if work:
        out += slots("working tile", "scratch", partitions, math.ceil(partitions * chunk * work), sets)
    return out


def column_chunk(hw: Hardware, k: RowwiseKernel) -> int:
    """The widest column chunk (<= MAX_COLS) whose NBUF buffer sets fit the SBUF budget."""
    per_col = NBUF * hw.partitions * set_bytes_per_elem(k)
    fit = int(hw.sbuf_budget // per_col) if per_col > 0 else MAX_COLS
    chunk = min(k.cols, MAX_COLS, fit)
    if chunk < k.cols and chunk > COL_ALIGN:
        chunk -= chunk % COL_ALIGN
    if chunk < 1:
        raise ConfigError(
            f"hardware preset '{hw.name}' is too small for a row-wise kernel: it needs {per_col:,.0f} bytes of SBUF per column, "
            f"and the preset has {hw.sbuf_budget:,} usable per core; raise sbuf.bytes_per_core."
        )
    return chunk


def _step_ns(hw: Hardware, st: Step, n: np.ndarray) -> tuple[int, np.ndarray]:
    if st.engine == "exp":  # exp(x - max) with fused sum: Vector's accelerated exponential if present
        return C.exp_ns(hw, n)
    if st.engine == "vector":
        if st.opcode == "QuantizeMX":
            return VECTOR, C.quantize_mx_ns(hw, n)
        return VECTOR, C.vector_ns(hw, n, st.dtype)
    if st.engine == "scalar":
        return SCALAR, C.scalar_ns(hw, n, st.dtype, transcendental=st.transcendental)
    if st.engine == "gpsimd":
        return GPSIMD, C.gpsimd_ns(hw, n)
    raise ValueError(st.engine)


def lower_rowwise(b: ProgramBuilder, hw: Hardware, k: RowwiseKernel, *, key0: float = 0.0) -> float:
    """Append a row-wise kernel; returns the next free key."""
    P = hw.partitions
    if k.rows <= 0 or k.cols <= 0:
        return key0
    if k.fold and k.rows < P // 2 and k.rows * k.cols >= 2 * P:
        k = _fold(k, P)
    chunk = column_chunk(hw, k)
    n_rt = math.ceil(k.rows / P)
    n_ct = math.ceil(k.cols / chunk)
    rows = np.minimum(P, k.rows - np.repeat(np.arange(n_rt), n_ct) * P)
    cols = np.minimum(chunk, k.cols - np.tile(np.arange(n_ct), n_rt) * chunk)
    T = len(rows)
    slots = 2 + len(k.loads) + len(k.steps) + len(k.stores)
    key = key0 + np.arange(T) * slots
    Q = hw.dma_queues
    LQ = max(1, Q - 1)
    # buffer sets in use: tile t reuses tile t-NBUF's (its loads wait for that tile's last step)
    buffers = rowwise_buffers(k, P, chunk, min(NBUF, T))
    assert sum(x.bytes for x in buffers) <= hw.sbuf_budget
    b.alloc(buffers, int(hw.data["psum"]["bank_bytes_per_partition"]))
    # ids: loads (trigger+transfer each), steps, stores
    id0 = b.count
    n_load_ids = 2 * T * len(k.loads)
    first_step = id0 + n_load_ids
    last_step = first_step + T * (len(k.steps) - 1) if k.steps else -1
    rel = np.where(np.arange(T) >= NBUF, (last_step + np.arange(T) - NBUF) if k.steps else -1, -1)
    ready = []
    for j, eb in enumerate(k.loads):
        got = b.dma((np.arange(T) + j) % LQ, key + 0.1 * (j + 1), (rows * cols * eb).astype(np.int64), rows, "hbm",
                    "sbuf", hw=hw, trigger_deps=(rel,), role=ROLE_IN + j)
        ready.append(got)
    prev = ready
    for j, st in enumerate(k.steps):
        n = np.maximum(cols * st.per_col + st.extra, 1)
        eng, dur = _step_ns(hw, st, n)
        opcode = st.opcode if st.engine != "exp" else ("Exponential" if eng == VECTOR else "ActivationReduce")
        got = b.add(eng, key + 1 + j, dur, opcode, st.dtype, tuple(prev),
                    bytes=(rows * n * 4).astype(np.int64))
        prev = [got]
    for j, eb in enumerate(k.stores):
        b.dma(np.full(T, Q - 1), key + 1 + len(k.steps) + 0.1 * (j + 1), (rows * cols * eb).astype(np.int64), rows,
              "sbuf", "hbm", tuple(prev), hw=hw, role=ROLE_OUT if j == 0 else 0)
    return float(key[-1] + slots + 1)


# -- the row-wise kernels a model needs ---------------------------------------------------------

A = "activations"

def rmsnorm(rows: int, cols: int) -> RowwiseKernel:
    return RowwiseKernel(rows, cols, (2,), (2,), (
        Step("scalar", "ActivationReduce", 1, 0, "bf16"),     # x^2 summed along the row
        Step("vector", "TensorScalar", 0, 1, "fp32"),          # rstd = (sum / n + eps)^-1/2
        Step("vector", "TensorTensor", 1, 0, "bf16"),          # x * rstd * gamma
    ), row_reductions=1, tensors=(("x", A), ("normalised x", A)))


def tile_exp(rows: int, cols: int) -> RowwiseKernel:
    """The NKI DMA introduction's kernel: a [rows, cols] BF16 tile loaded into `rows` partitions (not
    spread over more: which DMA engines serve it is the point), exp on the Scalar engine, stored back."""
    return RowwiseKernel(rows, cols, (2,), (2,), (Step("scalar", "Activation", 1, 0, "bf16", transcendental=True),),
                         fold=False, tensors=(("x", A), ("exp(x)", A)))


def softmax(rows: int, cols: int) -> RowwiseKernel:
    return RowwiseKernel(rows, cols, (2,), (2,), (
        Step("vector", "TensorReduce", 1, 0, "bf16"),          # row max
        Step("exp", "Exponential", 1, 0, "bf16"),              # exp(x - max), fused row sum
        Step("vector", "TensorScalar", 0, 1, "fp32"),          # 1 / sum
        Step("vector", "TensorScalar", 1, 0, "bf16"),          # scale
    ), row_reductions=2, tensors=(("scores", A), ("probabilities", A)))


def residual_add(rows: int, cols: int) -> RowwiseKernel:
    return RowwiseKernel(rows, cols, (2, 2), (2,), (Step("vector", "TensorTensor", 1, 0, "bf16"),),
                         tensors=(("x", A), ("residual", A), ("x + residual", A)))


def silu_mul(rows: int, cols: int) -> RowwiseKernel:
    """SwiGLU: silu(gate) * up; reads gate and up, writes one."""
    return RowwiseKernel(rows, cols, (2, 2), (2,), (
        Step("scalar", "Activation", 1, 0, "bf16", transcendental=True),
        Step("vector", "TensorTensor", 1, 0, "bf16"),
    ), tensors=(("gate", A), ("up", A), ("silu(gate) * up", A)))


def rope(rows: int, cols: int) -> RowwiseKernel:
    return RowwiseKernel(rows, cols, (2, 4), (2,), (
        Step("vector", "TensorTensor", 1, 0, "bf16"),          # x * cos
        Step("vector", "TensorTensor", 1, 0, "bf16"),          # rotate_half(x) * sin
        Step("vector", "TensorTensor", 1, 0, "bf16"),          # sum
    ), tensors=(("x", A), ("cos, sin", "weights"), ("rotated x", A)))


def router_topk(rows: int, experts: int, top_k: int) -> RowwiseKernel:
    rounds = math.ceil(top_k / 8)
    return RowwiseKernel(rows, experts, (2,), (4,), (
        Step("vector", "TensorReduce", 1, 0, "fp32"),
        Step("exp", "Exponential", 1, 0, "fp32"),              # router softmax
        Step("vector", "Max8", rounds, 0, "fp32"),             # top-k values, 8 per round
        Step("vector", "FindIndex8", rounds, 0, "fp32"),       # their expert indices
        Step("gpsimd", "Iota", 0, 16 * top_k, "int32"),        # token -> expert slot lists for dispatch
    ), row_reductions=2, tensors=(("router logits", A), ("expert weights, indices", A)))


def moe_combine(rows: int, cols: int, top_k: int) -> RowwiseKernel:
    return RowwiseKernel(rows, cols, tuple([2] * top_k), (2,), tuple(
        Step("vector", "TensorScalar" if i == 0 else "TensorTensor", 1, 0, "bf16") for i in range(top_k)),
        tensors=tuple((f"expert output {i + 1}", A) for i in range(top_k)) + (("combined", A),))


def embedding(rows: int, cols: int) -> RowwiseKernel:
    """Gather token rows from the embedding table (an indirect DMA) and write the activations."""
    return RowwiseKernel(rows, cols, (2,), (2,), (Step("gpsimd", "Iota", 0, 1, "int32"),),
                         tensors=(("embedding rows", "weights"), ("hidden", A)))


def sampling(rows: int, vocab: int) -> RowwiseKernel:
    """Greedy/top-k sampling over the logits: max8 rounds on Vector."""
    return RowwiseKernel(rows, vocab, (2,), (), (
        Step("vector", "Max8", 1, 0, "bf16"),
        Step("vector", "FindIndex8", 1, 0, "bf16"),
    ), row_reductions=1, tensors=(("logits", A),))


def cross_entropy(rows: int, vocab: int) -> RowwiseKernel:
    return RowwiseKernel(rows, vocab, (2,), (2,), (
        Step("vector", "TensorReduce", 1, 0, "bf16"),
        Step("exp", "Exponential", 1, 0, "bf16"),
        Step("vector", "TensorScalar", 1, 0, "bf16"),          # softmax - one_hot = dlogits
    ), row_reductions=2, tensors=(("logits", A), ("dlogits", "gradients")))


def adamw(params: int) -> RowwiseKernel:
    """AdamW over `params` parameters laid out [128, params/128]: reads fp32 master, bf16 grad,
    fp32 m and v; writes master, m, v and the bf16 weight (HBM bound)."""
    cols = max(1, math.ceil(params / 128))
    return RowwiseKernel(128, cols, (4, 2, 4, 4), (4, 4, 4, 2), (
        Step("vector", "TensorTensor", 2, 0, "fp32"),          # m, v moving averages
        Step("scalar", "Activation", 1, 0, "fp32", transcendental=True),  # sqrt(v)
        Step("vector", "TensorTensor", 3, 0, "fp32"),          # update with weight decay
        Step("vector", "TensorCopy", 1, 0, "bf16"),            # cast the new weight
    ), tensors=(("master weights (fp32)", "weights"), ("gradient", "gradients"), ("m", "optimizer_state"),
                ("v", "optimizer_state"), ("new master weights", "weights"), ("new m", "optimizer_state"),
                ("new v", "optimizer_state"), ("new weights (bf16)", "weights")))


def norm_backward(rows: int, cols: int) -> RowwiseKernel:
    return RowwiseKernel(rows, cols, (2, 2), (2,), (
        Step("scalar", "ActivationReduce", 1, 0, "bf16"),
        Step("vector", "TensorTensor", 2, 0, "bf16"),
    ), tensors=(("dy", "gradients"), ("x", A), ("dx", "gradients")))


def silu_mul_backward(rows: int, cols: int) -> RowwiseKernel:
    return RowwiseKernel(rows, cols, (2, 2, 2), (2, 2), (
        Step("scalar", "Activation", 1, 0, "bf16", transcendental=True),
        Step("vector", "TensorTensor", 3, 0, "bf16"),
    ), tensors=(("dh", "gradients"), ("gate", A), ("up", A), ("dgate", "gradients"), ("dup", "gradients")))
