"""The `sbuf_allocations` rows of instruction-detail cores: each kernel's buffers
(simcore.lowering.buffers), at the addresses the lowering gave them, timed by the instructions
that use them.

A program's buffers are the same on every run of it (layers repeat their kernels), so they are
turned into columns once per program; a run only adds its times: a buffer lives
from the first start to the last end of the instructions of the program range that allocated it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.lowering.buffers import MEMORIES
from simcore.lowering.program import Program, Vocab
from simcore.trace import schema as S

KIND_VALUES = list(S.ALLOCATION_KINDS)
MEMORY_VALUES = list(S.ALLOCATION_MEMORIES)


class _Layout:
    """One program's buffers as columns, and the program ranges that time them."""

    def __init__(self, p: Program, tensors: Vocab) -> None:
        bufs = p.buffers
        n = len(p)
        self.program = p  # kept alive: the cache is keyed by id()
        self.memory = np.array([MEMORIES.index(b.memory) for b in bufs], np.int32)
        self.partitions = np.array([b.partitions for b in bufs], np.int32)
        self.address = np.array([b.address for b in bufs], np.int64)
        self.bytes = np.array([b.bytes for b in bufs], np.int64)
        self.tensor = np.array([tensors.code(b.tensor) for b in bufs], np.int32)
        self.kind = np.array([KIND_VALUES.index(b.kind) for b in bufs], np.int32)
        # a PSUM buffer is in use from the range's first PE instruction (which writes it; a grouped
        # matmul's problem waits there for the banks it reuses) to its last compute instruction (the
        # last evacuation reads it); an SBUF one from the range's first instruction to its last
        ranges = [(b.first, n if b.last < 0 else b.last, b.memory == "psum") for b in bufs]
        self.ranges = sorted(set(ranges))
        self.range_of = np.array([self.ranges.index(r) for r in ranges], np.int64)
        compute = p.partitions == 0
        self.first = [_some(np.flatnonzero(p.pe[a:b]) + a, a, b) if psum else slice(a, b) for a, b, psum in self.ranges]
        self.last = [_some(np.flatnonzero(compute[a:b]) + a, a, b) if psum else slice(a, b) for a, b, psum in self.ranges]


def _some(idx: np.ndarray, a: int, b: int) -> np.ndarray | slice:
    """`idx` if it holds any instruction, else the whole range [a, b)."""
    return idx if len(idx) else slice(a, b)


class AllocationRows:
    """Collects the rows kernel by kernel; `columns()` gives them for the writer."""

    def __init__(self) -> None:
        self.tensors = Vocab()
        self._layouts: dict[int, _Layout] = {}
        self._parts: list[dict[str, np.ndarray]] = []
        self._memo: tuple | None = None  # the last run's program, times and buffer spans

    def add(self, chip: int, core: int, kernel_id: int, p: Program, start: np.ndarray, end: np.ndarray) -> None:
        """The buffers of one run of `p` on `core` (`start`/`end`: its instructions' times in program order, ns)."""
        if not p.buffers:
            return
        lay = self._layouts.get(id(p))
        if lay is None:
            lay = self._layouts[id(p)] = _Layout(p, self.tensors)
        memo = self._memo  # the cores of a group add the same run one after another: its times once
        if memo is not None and memo[0] is p and memo[1] is start and memo[2] is end:
            t0, t1 = memo[3], memo[4]
        else:
            t0 = np.array([start[u].min() for u in lay.first], np.int64)
            t1 = np.array([end[u].max() for u in lay.last], np.int64)
            self._memo = (p, start, end, t0, t1)  # (holding them: another run's arrays cannot take their ids)
        n = len(lay.bytes)
        self._parts.append({
            "chip": np.full(n, chip, np.int32), "core": np.full(n, core, np.int32), "memory": lay.memory,
            "partition_start": np.zeros(n, np.int32), "partitions": lay.partitions, "address": lay.address,
            "bytes": lay.bytes, "start_ns": t0[lay.range_of], "end_ns": np.maximum(t1, t0)[lay.range_of],
            "kernel_id": np.full(n, kernel_id, np.int64), "tensor": lay.tensor, "kind": lay.kind,
        })

    def columns(self) -> dict[str, Any] | None:
        """Every row collected so far, in the order added (None if there are none); forgets them."""
        if not self._parts:
            return None
        parts, self._parts = self._parts, []
        cols: dict[str, Any] = {k: np.concatenate([x[k] for x in parts]) for k in parts[0]}
        cols["memory"] = (cols["memory"], MEMORY_VALUES)
        cols["tensor"] = (cols["tensor"], list(self.tensors.values))
        cols["kind"] = (cols["kind"], KIND_VALUES)
        return cols
