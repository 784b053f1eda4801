"""One trace's pages in the page cache: evict them (a cold open without dropping the machine's
whole cache, which other measurements on a shared machine rely on) and count them.

    python bench/page_cache.py evict TRACE...      python bench/page_cache.py resident TRACE...

`evict` asks the kernel to drop each file's clean cached pages (posix_fadvise DONTNEED); pages
some process still maps stay, so it is done between runs, with no window open on the trace.
`resident` counts each file's cached pages (mincore on a mapping of it).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def files(trace: Path) -> list[Path]:
    return sorted(f for f in Path(trace).rglob("*") if f.is_file())


def evict(trace: Path) -> int:
    """Drop the cached pages of every file of `trace` (its disposable files too); their bytes."""
    total = 0
    for f in files(trace):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident_bytes(file: Path) -> int:
    """Bytes of `file` in the page cache now (mapping it faults nothing in)."""
    size = file.stat().st_size
    if size == 0:
        return 0
    fd = os.open(file, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {file}")
        try:
            vec = (ctypes.c_ubyte * ((size + PAGE - 1) // PAGE))()
            if _libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {file}")
            return sum(v & 1 for v in bytes(vec)) * PAGE
        finally:
            _libc.munmap(ctypes.c_void_p(addr), size)
    finally:
        os.close(fd)


def resident(trace: Path) -> dict[str, int]:
    """Cached bytes per file of `trace`."""
    return {f.name: resident_bytes(f) for f in files(trace)}


if __name__ == "__main__":
    what, *traces = sys.argv[1:]
    for t in traces:
        if what == "evict":
            print(f"{t}: {evict(Path(t)) / 2**30:.2f} GiB evicted")
        else:
            for name, n in resident(Path(t)).items():
                print(f"{t}/{name}: {n / 2**20:.1f} MiB cached")
