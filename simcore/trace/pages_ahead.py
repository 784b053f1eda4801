"""Page-cache pages made ready ahead of a file's writes, on a thread of their own.

Writing a trace is mostly the kernel filling page-cache pages it must first allocate; on a VM
whose balloon takes freed memory back (this project's machines), a fresh page costs its first
touch on the host, and that, not the copy, is most of the writer thread's time (docs/PERFORMANCE.md,
issue 16). Pages read into the cache over a hole in the file (`posix_fadvise(WILLNEED)` past the
written end of a file extended with `ftruncate`) come zeroed and ready; the write then copies
over pages already there, as a rewrite does. Measured on a 3 GiB write in 40 MiB chunks: the
writing thread's CPU 6.8-8.2 s -> 3.1-3.3 s, the readahead thread's 0.5-0.6 s.

The file is extended only by the thread that writes it, between its writes (so the extension
never cuts a write short), and cut back to what was written when it is closed; the bytes are
those written. How far ahead grows with what was written (up to `AHEAD`), so a small table is
not padded with pages it never uses. Any error here only stops the readahead.
"""

from __future__ import annotations

import os
import threading
from collections import deque

AHEAD = 128 << 20
STEP = 16 << 20


class PagesAhead:
    """One daemon thread reading ahead for every file `open` hands out."""

    def __init__(self) -> None:
        self._work: deque[tuple[AheadFile, int, int]] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False

    def open(self, path: str | os.PathLike[str]) -> AheadFile | None:
        """A handle for the file at `path` (just created by its writer); None if it cannot be opened."""
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return None
        return AheadFile(self, fd)

    def _submit(self, f: AheadFile, lo: int, hi: int) -> None:
        with self._cond:
            if self._stop:
                return
            self._work.append((f, lo, hi))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="trace-pages", daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        """Stop the thread (what waits is dropped)."""
        with self._cond:
            self._stop = True
            self._work.clear()
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._work and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                f, lo, hi = self._work.popleft()
            f._read_ahead(lo, hi)


class AheadFile:
    """One file being written: `wrote(end)` after each write (in the writing thread), `close(size)`."""

    def __init__(self, owner: PagesAhead, fd: int) -> None:
        self._owner = owner
        self._fd = fd
        self._lock = threading.Lock()
        self.extended = 0  # the size the file was extended to
        self._written = 0

    def wrote(self, end: int) -> None:
        """The file is written up to `end`: extend it past that and read the extension ahead."""
        self._written = end
        target = end + min(end, AHEAD)
        if target - self.extended < STEP:
            return
        with self._lock:
            if self._fd < 0:
                return
            try:
                os.ftruncate(self._fd, target)
            except OSError:
                return
        lo, self.extended = max(self.extended, end), target
        self._owner._submit(self, lo, target)

    def _read_ahead(self, lo: int, hi: int) -> None:
        for at in range(lo, hi, STEP):
            with self._lock:
                if self._fd < 0 or at + STEP <= self._written:  # closed, or written meanwhile
                    continue
                try:
                    os.posix_fadvise(self._fd, at, min(STEP, hi - at), os.POSIX_FADV_WILLNEED)
                except OSError:
                    return

    def close(self, size: int | None) -> None:
        """Cut the file back to `size` bytes (what was written; None: leave it, it is being removed)."""
        with self._lock:
            if self._fd < 0:
                return
            try:
                if size is not None and self.extended > size:
                    os.ftruncate(self._fd, size)
            finally:
                os.close(self._fd)
                self._fd = -1
