"""The SBUF and PSUM buffers a kernel's lowering allocates: what the memory view shows.

A lowering decides its tiles, blocking and multi-buffering (simcore.lowering.matmul,
attention, elementwise) and sums their bytes into the kernel's footprint
(`Program.sbuf_bytes`, the `State Buffer Usage` counter). It also names each buffer here:
one `Buffer` per tensor and buffer slot (a triple-buffered stream is three), with the
partitions its tile spans and the bytes the lowering counted for it, so a program's footprint
is exactly the sum of its SBUF buffers. Buffers live from the first to the last instruction of
the program range that allocated them (the whole kernel, or one problem of a grouped matmul),
as an NKI kernel's tensors live for the kernel's scope.

Addresses are a bump allocator's for one program: SBUF buffers one after another from byte 0
of their partitions, PSUM buffers on whole banks. A grouped matmul's problems share the core's
memory through a ring (`ring`): a problem takes the addresses after the previous one's, wrapping
to 0 when it would not fit, and waits for the problems whose addresses it reuses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from simcore.trace.schema import ALLOCATION_KINDS as KINDS, ALLOCATION_MEMORIES as MEMORIES


@dataclass(frozen=True)
class Buffer:
    """One allocation: `bytes` over partitions [0, partitions) of `memory` at byte `address` of each,
    live from program instruction `first` to `last` (exclusive; -1: the program's end)."""

    tensor: str
    kind: str
    partitions: int
    bytes: int
    memory: str = "sbuf"
    address: int = 0
    first: int = 0
    last: int = -1

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.memory not in MEMORIES:
            raise ValueError(f"buffer {self.tensor}: unknown kind {self.kind!r} or memory {self.memory!r}")
        if self.partitions <= 0 or self.bytes < 0:
            raise ValueError(f"buffer {self.tensor}: {self.partitions} partitions, {self.bytes} bytes")

    @property
    def per_partition(self) -> int:
        """Bytes in each of its partitions (the address range it takes there)."""
        return math.ceil(self.bytes / self.partitions)

    def placed(self, offset: int, length: int, shift: dict[str, int]) -> Buffer:
        """The same buffer in a program placed `offset` instructions later (`length`: its program's
        instructions) and `shift[memory]` bytes higher (Program.concat)."""
        last = length if self.last < 0 else self.last
        return replace(self, first=self.first + offset, last=last + offset, address=self.address + shift[self.memory])


def slots(tensor: str, kind: str, partitions: int, each: int, count: int, memory: str = "sbuf") -> list[Buffer]:
    """`count` buffer slots of `each` bytes (a multi-buffered stream), named '<tensor> [i/count]'."""
    if count == 1:
        return [Buffer(tensor, kind, partitions, each, memory)]
    return [Buffer(f"{tensor} [{i + 1}/{count}]", kind, partitions, each, memory) for i in range(count)]


def split_bytes(total: int, weights: tuple[int, ...]) -> list[int]:
    """`total` bytes split in proportion to `weights`, summing exactly to `total`."""
    w = sum(weights)
    parts = [total * x // w for x in weights]
    parts[-1] += total - sum(parts)
    return parts


def stack(buffers: list[Buffer], bank_bytes: int) -> list[Buffer]:
    """The buffers at a bump allocator's addresses: SBUF from 0 in order, PSUM on whole banks of
    `bank_bytes` per partition."""
    top = {"sbuf": 0, "psum": 0}
    out = []
    for b in buffers:
        out.append(replace(b, address=top[b.memory]))
        size = b.per_partition
        top[b.memory] += math.ceil(size / bank_bytes) * bank_bytes if b.memory == "psum" else size
    return out


def extent(buffers: tuple[Buffer, ...] | list[Buffer], memory: str) -> int:
    """The highest address (exclusive) the buffers of `memory` reach in a partition."""
    return max((b.address + b.per_partition for b in buffers if b.memory == memory), default=0)


def ring(extents: list[int], capacity: int) -> tuple[list[int], list[list[int]]]:
    """Addresses of programs that run one after another in one memory of `capacity` bytes per
    partition, each taking the `extents[i]` bytes after the previous one's and wrapping to 0 when it
    would not fit: (start address of each, the earlier programs whose addresses each reuses, which it
    must wait for). A program reuses what an earlier one holds until a later one has reused it all."""
    starts: list[int] = []
    waits: list[list[int]] = []
    held: list[tuple[int, int, int]] = []  # (start, end, program) of the addresses still held
    top = 0
    for i, size in enumerate(extents):
        if top + size > capacity:
            top = 0
        lo, hi = top, top + size
        waits.append(sorted(j for a, b, j in held if a < hi and lo < b and size > 0))
        held = [(a, b, j) for a, b, j in held if not (lo <= a and b <= hi)] + ([(lo, hi, i)] if size > 0 else [])
        starts.append(lo)
        top = hi
    return starts, waits
