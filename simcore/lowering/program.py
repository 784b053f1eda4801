"""A kernel program: one core's per-engine instruction streams for one kernel, as numpy arrays.

Generators add instructions in vectorised batches (`ProgramBuilder.add`), each with a
program-order key; `build()` sorts by key, so a queue executes its instructions in key
order and every dependency points to an earlier instruction (checked). Dependencies are
semaphore waits: an instruction starts after the instructions it names have finished.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simcore.dtypes import DTYPE_TABLE
from simcore.lowering.buffers import Buffer, stack
from simcore.lowering.costs import dma_ns
from simcore.lowering.engines import N_COMPUTE_ENGINES, SYNC


class Vocab:
    """Strings (opcodes, dtypes, memories, kernel names) to stable small integer codes."""

    def __init__(self, values: tuple[str, ...] = ()) -> None:
        self.codes: dict[str, int] = {}
        self.values: list[str] = []
        for v in values:
            self.code(v)

    def code(self, value: str) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.values)
            self.values.append(value)
        return c


OPCODES = Vocab((
    "LoadStationary", "MultiplyMoving", "Transpose", "TensorTensor", "TensorScalar", "TensorCopy",
    "TensorReduce", "Activation", "ActivationReduce", "Exponential", "QuantizeMX", "Max8", "FindIndex8",
    "AffineSelect", "Iota", "PartitionAllReduce", "DmaTrigger", "DmaTransfer",
    # the collective engine's steps (multi-chip captures, `CC` rows of instruction-detail cores)
    "CcReduceScatter", "CcAllGather", "CcAllToAll", "CcSend", "CcRecv",
    # the runtime's work on a core (`Runtime` rows, simcore.timing.runtime)
    "HostStep", "StepLaunch", "OpBarrier", "KernelLaunch",
    # the cores of one kernel meeting to exchange partial results (simcore.lowering.fused)
    "CoreBarrier",
))
DTYPES = Vocab(tuple(DTYPE_TABLE))   # the trace's dtype codes: simcore.dtypes' table order
MEMORIES = Vocab(("hbm", "sbuf", "psum", "remote"))
OP = OPCODES.codes
DT = DTYPES.codes
MEM = MEMORIES.codes

_FIELDS_I64 = ("flops", "bytes", "hbm_read", "hbm_write")

# What tensor a DMA moves, for fused kernels (simcore.lowering.fused): ROLE_IN + j loads the kernel's j-th
# activation input, ROLE_OUT stores its output, ROLE_LINK marks the first instruction of a stage that
# consumes the stage before it in SBUF; 0 is anything else (weights, caches, compute).
ROLE_IN, ROLE_OUT, ROLE_LINK = 1, 16, 32


@dataclass
class Program:
    """Instructions of one kernel on one core, in program (topological) order."""

    engine: np.ndarray      # int16: engine/queue id within the core
    dur: np.ndarray         # float64 ns: nominal duration (before throttle and DMA sharing)
    lat: np.ndarray         # float64 ns: fixed latency added to the ready time (DMA)
    opcode: np.ndarray      # int16 code in OPCODES
    dtype: np.ndarray       # int8 code in DTYPES
    flops: np.ndarray       # int64: hardware FLOPs (tensor engine only)
    bytes: np.ndarray       # int64: bytes touched (SBUF/PSUM for compute, moved for DMA)
    partitions: np.ndarray  # int32: SBUF partitions a DMA spans (0 for compute)
    src: np.ndarray         # int8 memory code (DMA), -1 otherwise
    dst: np.ndarray         # int8
    hbm_read: np.ndarray    # int64 bytes read from HBM
    hbm_write: np.ndarray   # int64 bytes written to HBM
    pe: np.ndarray          # bool: runs on the PE array (subject to the power throttle)
    role: np.ndarray        # int8: which tensor a DMA moves (ROLE_*), 0 otherwise
    dep_ptr: np.ndarray     # int64 CSR over instructions
    dep_idx: np.ndarray     # int64 indices of earlier instructions
    sbuf_bytes: int = 0     # SBUF footprint of the kernel's buffers
    psum_bytes: int = 0     # PSUM footprint
    buffers: tuple[Buffer, ...] = ()  # the SBUF/PSUM buffers behind the footprints (simcore.lowering.buffers)

    ARRAYS = ("engine", "dur", "lat", "opcode", "dtype", "flops", "bytes", "partitions", "src", "dst", "hbm_read",
              "hbm_write", "pe", "role")

    def __len__(self) -> int:
        return len(self.engine)

    @property
    def is_dma(self) -> np.ndarray:
        return self.partitions > 0

    def total(self, name: str, mask: np.ndarray | None = None) -> int:
        arr = getattr(self, name)
        return int(arr.sum() if mask is None else arr[mask].sum())

    @staticmethod
    def concat(parts: list["Program"], shifts: list[dict[str, int]] | None = None,
               waits: list[list[tuple[int, str]]] | None = None) -> "Program":
        """Programs run one after another in program order (each keeps its own dependencies):
        what one builder gives for pieces added at increasing, non-overlapping keys. `shifts[i]`
        moves part i's buffers up by so many bytes per memory; `waits[i]` holds (earlier part j,
        memory): part i's first instruction that writes that memory (SBUF: its first Sync
        instruction, which triggers its loads; PSUM: its first PE instruction) waits for part j's
        last instruction, as it reuses part j's addresses there."""
        if len(parts) == 1 and not shifts:
            return parts[0]
        sizes = np.array([len(p) for p in parts], np.int64)
        offs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        ndeps = np.array([len(p.dep_idx) for p in parts], np.int64)
        doffs = np.concatenate([[0], np.cumsum(ndeps)[:-1]])
        arrays = {f: np.concatenate([getattr(p, f) for p in parts]) for f in Program.ARRAYS}
        dep_idx = np.concatenate([p.dep_idx + o for p, o in zip(parts, offs)]).astype(np.int64)
        dep_ptr = np.concatenate([[0]] + [p.dep_ptr[1:] + d for p, d in zip(parts, doffs)]).astype(np.int64)
        if waits and any(waits):
            dep_ptr, dep_idx = _add_waits(parts, offs, waits, dep_ptr, dep_idx)
        shifts = shifts or [{"sbuf": 0, "psum": 0}] * len(parts)
        buffers = tuple(b.placed(int(o), len(p), sh) for p, o, sh in zip(parts, offs, shifts) for b in p.buffers)
        return Program(**arrays, dep_ptr=dep_ptr, dep_idx=dep_idx,
                       sbuf_bytes=max(p.sbuf_bytes for p in parts), psum_bytes=max(p.psum_bytes for p in parts),
                       buffers=buffers)


def _last_per_engine(p: Program) -> list[int]:
    """The last instruction of each engine queue `p` uses, loads into SBUF aside: a queue runs in
    order, so once these have finished every instruction of `p` that reads or writes its buffers has
    (a load is done before the compute that consumes it starts)."""
    last = np.full(int(p.engine.max()) + 1, -1, np.int64)
    keep = np.flatnonzero(~((p.src == MEM["hbm"]) & (p.dst == MEM["sbuf"])))
    np.maximum.at(last, p.engine[keep].astype(np.int64), keep.astype(np.int64))
    return [int(x) for x in last if x >= 0]


def _add_waits(parts: list[Program], offs: np.ndarray, waits: list[list[tuple[int, str]]], dep_ptr: np.ndarray,
               dep_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Program.concat's `waits` as extra dependencies (first in their owner's list: their predecessors
    come before any of the owner's own part, so each list stays sorted)."""
    owners, preds = [], []
    ends = [_last_per_engine(p) for p in parts]
    for i, ws in enumerate(waits):
        p = parts[i]
        for j, memory in sorted(set(ws)):
            first = np.flatnonzero(p.engine == SYNC if memory == "sbuf" else p.pe)
            if len(first):
                owners += [int(offs[i] + first[0])] * len(ends[j])
                preds += [int(offs[j] + e) for e in ends[j]]
    if not owners:
        return dep_ptr, dep_idx
    order = np.lexsort((np.array(preds), np.array(owners)))
    own, pre = np.array(owners, np.int64)[order], np.array(preds, np.int64)[order]
    dep_idx = np.insert(dep_idx, dep_ptr[own], pre)
    counts = np.bincount(own, minlength=len(dep_ptr) - 1)
    return dep_ptr + np.concatenate([[0], np.cumsum(counts)]), dep_idx


@dataclass
class _Batch:
    engine: int | np.ndarray
    key: np.ndarray
    dur: np.ndarray
    opcode: int | np.ndarray
    dtype: int
    deps: list[np.ndarray]
    lat: float = 0.0
    flops: np.ndarray | int = 0
    bytes: np.ndarray | int = 0
    partitions: np.ndarray | int = 0
    src: int = -1
    dst: int = -1
    hbm_read: np.ndarray | int = 0
    hbm_write: np.ndarray | int = 0
    pe: bool = False
    role: int = 0


@dataclass
class ProgramBuilder:
    """Collects batches of instructions; ids it returns index instructions in add order."""

    batches: list[_Batch] = field(default_factory=list)
    count: int = 0
    sbuf_bytes: int = 0
    psum_bytes: int = 0
    buffers: list[Buffer] = field(default_factory=list)

    def alloc(self, buffers: list[Buffer], bank_bytes: int) -> None:
        """Record the buffers a lowering allocates, at a bump allocator's addresses (PSUM on banks of
        `bank_bytes` per partition); the footprints become the larger of what they were and these
        buffers' totals per memory."""
        self.buffers.extend(stack(buffers, bank_bytes))
        self.sbuf_bytes = max(self.sbuf_bytes, sum(b.bytes for b in buffers if b.memory == "sbuf"))
        self.psum_bytes = max(self.psum_bytes, sum(b.bytes for b in buffers if b.memory == "psum"))

    def add(self, engine, key, dur, opcode, dtype: str, deps=(), *, lat: float = 0.0,
            flops=0, bytes=0, partitions=0, src: str | None = None, dst: str | None = None,
            hbm_read=0, hbm_write=0, pe: bool = False) -> np.ndarray:
        """Add len(key) instructions on `engine`; returns their ids. Each dep array holds one
        predecessor id per instruction (-1 for none)."""
        key = np.atleast_1d(np.asarray(key, np.float64))
        n = len(key)
        dur = np.broadcast_to(np.asarray(dur, np.float64), (n,))
        dep_list = []
        for d in deps:
            d = np.broadcast_to(np.asarray(d, np.int64), (n,))
            dep_list.append(d)
        op = OP[opcode] if isinstance(opcode, str) else np.asarray(opcode, np.int16)
        self.batches.append(_Batch(
            engine, key, dur, op, DT[dtype], dep_list, lat, flops, bytes, partitions,
            -1 if src is None else MEM[src], -1 if dst is None else MEM[dst], hbm_read, hbm_write, pe,
        ))
        ids = np.arange(self.count, self.count + n, dtype=np.int64)
        self.count += n
        return ids

    def dma(self, queue: int, key, nbytes, partitions, src: str, dst: str, deps=(), *, hw, trigger_deps=(),
            dtype: str = "bf16", role: int = 0) -> np.ndarray:
        """A DMA transfer triggered from the Sync engine: a DmaTrigger (descriptor generation)
        then the transfer on DMA queue `queue` after the fixed latency. Returns transfer ids.
        `role` (ROLE_*) says which tensor it moves; trigger and transfer both carry it."""
        key = np.atleast_1d(np.asarray(key, np.float64))
        n = len(key)
        nbytes = np.broadcast_to(np.asarray(nbytes, np.int64), (n,))
        partitions = np.broadcast_to(np.asarray(partitions, np.int64), (n,))
        d = hw.data["dma"]
        trig = self.add(SYNC, key - 1e-3, d["descriptor_ns"], "DmaTrigger", dtype, tuple(trigger_deps))
        self.batches[-1].role = role
        got = self.add(
            N_COMPUTE_ENGINES + np.asarray(queue), key, dma_ns(hw, nbytes, partitions), "DmaTransfer", dtype, (trig, *deps),
            lat=max(0.0, float(d["latency_ns"]) - float(d["descriptor_ns"])), bytes=nbytes,
            partitions=partitions, src=src, dst=dst,
            hbm_read=nbytes if src == "hbm" else 0, hbm_write=nbytes if dst == "hbm" else 0,
        )
        self.batches[-1].role = role
        return got

    def build(self) -> Program:
        if not self.batches:
            raise ValueError("empty program")
        sizes = [len(b.key) for b in self.batches]
        n = sum(sizes)

        def cat(name, dtype, default=None):
            vals = [getattr(b, name) if default is None else default(b) for b in self.batches]
            arrays = [type(v) is np.ndarray and v.ndim > 0 for v in vals]
            if not any(arrays):  # one value per batch: a single repeat instead of a broadcast per batch
                return np.repeat(np.asarray(vals, dtype), sizes)
            parts = []
            for v, s, is_array in zip(vals, sizes, arrays):
                parts.append(np.broadcast_to(np.asarray(v, dtype), (s,)) if is_array else np.full(s, v, dtype))
            return np.concatenate(parts)

        key = cat("key", np.float64)
        order = np.argsort(key, kind="stable")
        inv = np.empty(n, np.int64)
        inv[order] = np.arange(n)
        # dependencies: (owner, predecessor) pairs in the new order
        owners, preds = [], []
        base = 0
        for b, s in zip(self.batches, sizes):
            for d in b.deps:
                m = d >= 0
                if m.any():
                    owners.append(inv[np.arange(base, base + s)[m]])
                    preds.append(inv[d[m]])
            base += s
        if owners:
            own = np.concatenate(owners)
            pre = np.concatenate(preds)
            bad = pre >= own
            if bad.any():
                i = int(np.argmax(bad))
                raise AssertionError(f"dependency does not point backwards in program order (instr {own[i]} <- {pre[i]})")
            srt = np.lexsort((pre, own))
            own, pre = own[srt], pre[srt]
            dep_ptr = np.zeros(n + 1, np.int64)
            np.cumsum(np.bincount(own, minlength=n), out=dep_ptr[1:])
        else:
            pre = np.zeros(0, np.int64)
            dep_ptr = np.zeros(n + 1, np.int64)

        def field_(name, dtype, default=None):
            return cat(name, dtype, default)[order]

        return Program(
            engine=field_("engine", np.int16, lambda b: b.engine),
            dur=field_("dur", np.float64),
            lat=field_("lat", np.float64, lambda b: b.lat),
            opcode=field_("opcode", np.int16, lambda b: b.opcode),
            dtype=field_("dtype", np.int8, lambda b: b.dtype),
            flops=field_("flops", np.int64),
            bytes=field_("bytes", np.int64),
            partitions=field_("partitions", np.int32),
            src=field_("src", np.int8, lambda b: b.src),
            dst=field_("dst", np.int8, lambda b: b.dst),
            hbm_read=field_("hbm_read", np.int64),
            hbm_write=field_("hbm_write", np.int64),
            pe=field_("pe", np.bool_, lambda b: b.pe),
            role=field_("role", np.int8, lambda b: b.role),
            dep_ptr=dep_ptr,
            dep_idx=pre,
            sbuf_bytes=int(self.sbuf_bytes),
            psum_bytes=int(self.psum_bytes),
            buffers=tuple(self.buffers),
        )
