"""Memory for the columns a capture builds and hands to the trace writer, used again once written.

A 100M-event capture builds ~9 GB of columns (each detailed track's rows, the flow batches) that
live only until the writer thread has written them. Fresh memory costs the kernel a zeroing pass
per page before the columns are filled (18% of that capture's CPU in a `perf record`): glibc maps
every block over 32 MiB anew and unmaps it when freed (the big engine tracks' columns are ~40 MB
each), and numpy asks for huge pages, so each such column is zeroed 2 MiB at a time. The pool
keeps the blocks instead and lends one again once nothing refers to it any more: a batch queued
or being written holds views of its block (the Arrow arrays keep the numpy arrays they wrap), so
CPython's reference count says when the writer is done with it. Blocks are kept until the pool
is let go (after a table's tracks): about as many of each size as were in flight at once.
"""

from __future__ import annotations

import sys

import numpy as np

ALIGN = 64  # each column starts on a 64-byte boundary, as Arrow's own buffers do
_SLACK = 2 << 20  # blocks are whole huge pages


def _unreferenced_count() -> int:
    """What `sys.getrefcount` says of a block nobody else refers to, read the way `_take` reads it.

    Measured, not assumed (3 on CPython 3.12: the list, the loop variable, the call's argument):
    an interpreter that borrows references (3.14 may) would otherwise make a lent block look free."""
    blocks = [np.empty(1, np.uint8)]
    for i in range(len(blocks)):
        b = blocks[i]
        return sys.getrefcount(b)
    raise AssertionError("unreachable")


_FREE_REFS = _unreferenced_count()  # a block whose count is above this is still lent


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


class ColumnPool:
    """Lends blocks carved into columns (`columns`), and takes them back once unreferenced."""

    def __init__(self) -> None:
        self._blocks: list[np.ndarray] = []  # uint8 blocks this pool allocated, lent or free
        self.allocated = 0  # blocks allocated (a test's and a bench's figure)
        self.reused = 0

    def columns(self, n: int, dtypes: dict[str, np.dtype | type]) -> dict[str, np.ndarray]:
        """Uninitialised columns of `n` rows each, one per name, carved from one block."""
        sizes = {k: _round_up(n * np.dtype(t).itemsize, ALIGN) for k, t in dtypes.items()}
        block = self._take(sum(sizes.values()))
        out, o = {}, 0
        for k, t in dtypes.items():
            out[k] = block[o:o + n * np.dtype(t).itemsize].view(t)
            o += sizes[k]
        return out

    def _take(self, nbytes: int) -> np.ndarray:
        best = None
        for i in range(len(self._blocks)):
            b = self._blocks[i]  # (not enumerate: its reused tuple would hold one more reference)
            if sys.getrefcount(b) > _FREE_REFS:
                continue  # still lent: a batch being written (or kept by the caller) refers to it
            # the smallest free block that fits, if no more than twice the need: a small track taking
            # a big track's block would make the next big track allocate anew
            if nbytes <= len(b) <= 2 * nbytes + _SLACK and (best is None or len(b) < len(self._blocks[best])):
                best = i
        if best is not None:
            self.reused += 1
            return self._blocks[best]
        block = np.empty(_round_up(nbytes + nbytes // 16, _SLACK), np.uint8)  # room for a slightly bigger track
        self._blocks.append(block)
        self.allocated += 1
        return block

    def clear(self) -> None:
        """Let every block go (those still lent live on in their views)."""
        self._blocks = []
