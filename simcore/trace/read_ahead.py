"""Read ahead of a scan: the columns an analysis is about to pass over, brought in from disk on a thread.

A trace's tables are memory-mapped, so a scan of a table not in the page cache waits for the disk at
every fault: the kernel reads a few MiB around the page and the scan stops until it is there, so the
disk's time adds to the scan's instead of running beside it. A trace right after `trnx capture` is
not in the page cache (the capture writes its tables around it: `diskwrite`), and neither is one
the cache has dropped; the window's analyses of a 100M-event capture then took 23-25 s against
12-15 s with the trace in memory, reading 9.9 GB where their columns hold 7.

`start(ranges)` has a thread fault in the given address ranges, in order, ahead of the scan
(`madvise(MADV_POPULATE_READ)`, Linux 5.14+, through ctypes, which lets go of the GIL; each call
returns once its pages are read, so the thread keeps one step of the disk's pace ahead and
the scan finds the pages there). Where the kernel refuses that, it asks for them to be read
(`MADV_WILLNEED`, which does not wait); where there is no madvise, nothing is done and the
scan faults the pages in as before. What is read is limited to half the memory available, so
pages read ahead are not dropped again before the scan comes to them. Nothing here changes a
value: only when the pages arrive.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import threading
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa

MADV_WILLNEED = 3
MADV_POPULATE_READ = 22  # Linux 5.14+
STEP = 32 << 20  # bytes faulted in by one call: the scan is never more than this behind the disk's reads
WILLNEED_STEP = 8 << 20  # the kernel reads at most its readahead window (8 MiB here) per MADV_WILLNEED call
MIN_BYTES = 64 << 20  # less is read in well under a second: not worth a thread
GAP = 1 << 20  # ranges closer than this are read as one (padding, a skipped small column)
PAGE = mmap.PAGESIZE


def column_ranges(table: pa.Table, columns: Iterable[str]) -> list[tuple[int, int]]:
    """The address ranges (start, end) of `columns`' buffers in `table`, record batch by record batch
    (the order a scan of the table meets them), neighbours merged. Absent columns are skipped."""
    names = [c for c in columns if c in table.schema.names]
    if not names:
        return []
    cols = [table.column(c) for c in names]
    out: list[tuple[int, int]] = []
    for i in range(cols[0].num_chunks) if all(c.num_chunks == cols[0].num_chunks for c in cols) else ():
        spans = sorted(s for c in cols for s in _spans(c.chunk(i)))
        out.extend(_merged(spans))
    if not out:  # chunked differently: column by column
        for c in cols:
            for chunk in c.chunks:
                out.extend(_merged(sorted(_spans(chunk))))
    return out


def _spans(chunk: pa.Array) -> list[tuple[int, int]]:
    arr = chunk.indices if pa.types.is_dictionary(chunk.type) else chunk
    return [(b.address, b.address + b.size) for b in arr.buffers() if b is not None and b.size > 0]


def _merged(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in spans:
        if out and lo - out[-1][1] <= GAP:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def table_ranges(tables: Mapping[str, pa.Table], columns: Mapping[str, Sequence[str]]) -> list[tuple[int, int]]:
    """Each table's `columns[name]` ranges, the tables in `columns`' order."""
    return [r for name, cols in columns.items() if name in tables for r in column_ranges(tables[name], cols)]


class ReadAhead:
    """A thread faulting in address ranges in order; `stop()` ends it after the step in flight.
    `done` is set when it ends; `read` counts the bytes it asked for."""

    def __init__(self, ranges: list[tuple[int, int]], keep: object = None) -> None:
        self.ranges = ranges
        self._keep = keep  # what holds the ranges' memory (the tables): alive while the thread reads
        self._stop = threading.Event()
        self.done = threading.Event()
        self.read = 0
        self.how = "none"
        self._thread = threading.Thread(target=self._run, name="read-ahead", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            advice, step = MADV_POPULATE_READ, STEP
            for lo, hi in self.ranges:
                lo -= lo % PAGE
                while lo < hi and not self._stop.is_set():
                    n = min(step, hi - lo)
                    err = advise(lo, n, advice)
                    if err == errno.EINVAL and advice == MADV_POPULATE_READ:  # an older kernel: ask, without waiting
                        advice, step = MADV_WILLNEED, WILLNEED_STEP
                        continue
                    if err == errno.EINVAL or err == -1:
                        return  # no such advice here: the scan reads as before
                    if err:  # not mapped, or the disk failed it: the scan meets (and says) what is wrong
                        break
                    self.how = "populate" if advice == MADV_POPULATE_READ else "willneed"
                    self.read += n
                    lo += n
                if self._stop.is_set():
                    return
        finally:
            self._keep = None
            self.done.set()


def start(ranges: list[tuple[int, int]], keep: object = None, budget: int | None = None) -> ReadAhead | None:
    """Read `ranges` ahead on a thread (None when they are too small to matter, or there is no
    madvise); at most `budget` bytes (default: half the memory available), the first ones."""
    if _madvise is None:
        return None
    total = sum(hi - lo for lo, hi in ranges)
    if total < MIN_BYTES:
        return None
    budget = available_bytes() // 2 if budget is None else budget
    if budget is not None and total > budget:
        ranges = _first(ranges, budget)
    return ReadAhead(ranges, keep)


def _first(ranges: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
    out = []
    for lo, hi in ranges:
        if budget <= 0:
            break
        out.append((lo, min(hi, lo + budget)))
        budget -= hi - lo
    return out


def available_bytes() -> int | None:
    """MemAvailable (Linux), else None (no limit)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def advise(addr: int, length: int, advice: int) -> int:
    """madvise over the whole pages of [addr, addr + length) (start rounded down): 0, the errno it
    failed with, or -1 where there is no madvise."""
    if _madvise is None:
        return -1
    lo = addr - addr % PAGE
    if _madvise(ctypes.c_void_p(lo), ctypes.c_size_t(addr + length - lo), advice) == 0:
        return 0
    return ctypes.get_errno() or -1


def _libc_madvise():
    try:
        f = ctypes.CDLL(None, use_errno=True).madvise  # (the C library this process runs on; no search for its file)
    except (OSError, AttributeError):
        return None
    f.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    f.restype = ctypes.c_int
    return f


_madvise = _libc_madvise()
