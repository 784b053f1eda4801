"""What the index scan of a trace with no saved index needs, made ready on a thread while numba loads.

`index_capture.scan` cannot start before numba is imported and its compiled pass loaded (0.3-1.3 s,
holding the GIL). Two things it then waits for need no GIL, so `reserve` starts them first:

- reading the big tables, which checks every dictionary code of theirs (Arrow's min/max over
  ~720 MB of codes for a 100M-event trace: ~0.7 s);
- the pages of its busy-time prefix sums, one int64 a row (720 MB at 100M events). Pages a process
  touches first cost the kernel a zeroing each, and on a virtual machine whose free memory the
  host takes back, 0.3-2.5 s for those 720 MB, about what the scan's own arithmetic costs.
  `madvise(MADV_POPULATE_WRITE)` (Linux 5.14+, through ctypes, which lets go of the GIL) has the
  kernel give them now; elsewhere the pages are left to the scan, as before.
"""

from __future__ import annotations

import ctypes
import mmap
import threading

import numpy as np

MADV_POPULATE_WRITE = 23  # Linux 5.14+
MIN_BYTES = 64 << 20  # smaller prefix sums are not worth a thread
TABLES = ("instructions", "dma")  # the tables the scan passes over (`index_capture.RECORDED`)


class Reserved:
    """The tables being read and int64 arrays (contents undefined: the scan writes every row) being
    given their pages; `take` waits for both."""

    def __init__(self, trace, lengths: dict[str, int]) -> None:
        self.trace = trace
        self.arrays = {name: np.empty(n, np.int64) for name, n in lengths.items()}
        self.failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="scan-ahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for name in self.arrays:
                self.trace.table(name)  # (kept by the trace: the scan's read finds it)
        except BaseException as exc:  # noqa: BLE001 - the scan reads the table again and says what is wrong
            self.failed = exc
        for a in self.arrays.values():
            populate(a)

    def take(self, name: str, length: int) -> np.ndarray:
        """The array reserved for `name` if it has `length` rows (the table's, read), else a new one."""
        self._thread.join()
        a = self.arrays.pop(name, None)
        return a if a is not None and len(a) == length else np.empty(length, np.int64)

    def wait(self) -> None:
        """Wait for the tables to be read (the scan reads them after: from the trace's cache)."""
        self._thread.join()


def reserve(trace, tables: tuple[str, ...] = TABLES) -> Reserved | None:
    """Start reading the scan's tables and giving its prefix sums (rows + 1 int64 each, rows from
    meta.json) their pages; None when they are too small to matter or larger than the trace's files
    could hold (a meta.json that does not match its tables: the scan allocates what they need)."""
    lengths = {name: trace.row_count(name) + 1 for name in tables}
    size = sum(f.stat().st_size for f in trace.path.iterdir() if f.is_file())
    need = 8 * sum(lengths.values())
    if need < MIN_BYTES or need > size:
        return None
    return Reserved(trace, lengths)


def populate(a: np.ndarray) -> bool:
    """Have the kernel give every whole page of `a` now (the GIL let go meanwhile); False if it cannot."""
    page = mmap.PAGESIZE
    lo = -(-a.ctypes.data // page) * page
    hi = (a.ctypes.data + a.nbytes) // page * page
    if hi <= lo or _madvise is None:
        return False
    return _madvise(ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo), MADV_POPULATE_WRITE) == 0


def _libc_madvise():
    try:
        f = ctypes.CDLL(None).madvise  # (the C library this process runs on; no search for its file)
    except (OSError, AttributeError):
        return None
    f.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    f.restype = ctypes.c_int
    return f


_madvise = _libc_madvise()
