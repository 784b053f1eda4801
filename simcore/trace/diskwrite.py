"""Table files written around the page cache (O_DIRECT), so that the kernel's handling of
dirty pages does not set a big capture's pace.

A 100M-event capture writes ~9 GB. Through the page cache, the writing thread of this project's
2-core VMs spends 0.7-2.7 s of kernel CPU per GB making page-cache pages, more the fuller the cache
(bench/disk_write.py; `dd bs=16M` of 8 GiB: 21.7 s buffered, 7.9 s with O_DIRECT), and the trace
writer's thread took 6-15 s of a 15-32 s 100M capture. Starting each block's writeback at once
(sync_file_range) and waiting for it two blocks later cost it 8.5 s with the pages kept, 6 s with
them evicted (POSIX_FADV_DONTNEED): every byte still went into a page made for it. With O_DIRECT,
1.5-2.9 s (docs/PERFORMANCE.md, "Capture: table files written around the page cache").

So Arrow's IPC writer hands its buffers (without a copy) to a Python sink, DirectFile, that
gathers them in page-aligned chunks; one thread hashes each chunk into its block's hash (the
bytes as written), another writes it with O_DIRECT, while the trace writer's thread fills the
next. A file's tail is written padded to the page and the file truncated to its size. The bytes
are those Arrow's native file sink writes, so the files are the same bit for bit.

The page cache is still used where the filesystem refuses O_DIRECT (EINVAL at open: the caller
falls back to Arrow's native sink; at a write: the chunk is written again without the flag),
and when DIRECT is false.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from simcore.trace import checksum
from simcore.trace.checksum import ALGORITHM, combine, new_hash

DIRECT = True
"""Whether table files are written with O_DIRECT where the filesystem allows it."""

_ALIGN = 4096  # what O_DIRECT asks of offsets, lengths and memory (a page: every common disk's block)


def _pwrite_all(fd: int, view: memoryview, offset: int) -> None:
    while len(view):
        n = os.pwrite(fd, view, offset)
        view = view[n:]
        offset += n


class DirectIO:
    """What a trace's DirectFiles share: the threads that hash and write their chunks, and the
    chunks' memory (CHUNK bytes each, page aligned), at most IN_FLIGHT of them queued or being
    written at a time besides the one each open file fills."""

    CHUNK = 8 << 20
    IN_FLIGHT = 4
    WRITERS = 1

    def __init__(self) -> None:
        self.chunk = min(self.CHUNK, checksum.BLOCK)  # (BLOCK is a multiple of it)
        # one thread hashes every chunk in the order written (a block's hash is updated chunk after
        # chunk); another writes them, while the trace writer's thread fills the next
        self.hashing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace-digest")
        self.disk = ThreadPoolExecutor(max_workers=self.WRITERS, thread_name_prefix="trace-disk")
        self._free: list[mmap.mmap] = []
        self._flying: list[tuple[mmap.mmap, Future[Any], Future[Any]]] = []

    def take(self) -> mmap.mmap:
        """A chunk of memory to fill."""
        return self._free.pop() if self._free else mmap.mmap(-1, self.chunk)

    def send(self, memory: mmap.mmap, digest: Future[Any], write: Future[Any]) -> None:
        """`memory` is being hashed and written: it is free again once both are done. Waits while
        IN_FLIGHT chunks are."""
        self._flying.append((memory, digest, write))
        while len(self._flying) > self.IN_FLIGHT:
            self._land(0)
        i = 0
        while i < len(self._flying):
            if self._flying[i][1].done() and self._flying[i][2].done():
                self._land(i)
            else:
                i += 1

    def _land(self, i: int) -> None:
        memory, digest, write = self._flying.pop(i)
        wait_quietly(digest, write)  # (their errors are the file's to raise)
        if len(self._free) < self.IN_FLIGHT:  # (the rest is unmapped once no view of it is left)
            self._free.append(memory)

    def shutdown(self) -> None:
        """Wait for the threads' work and end them; free the memory."""
        while self._flying:
            self._land(0)
        self.hashing.shutdown()
        self.disk.shutdown()
        self._free.clear()


def wait_quietly(*futures: Future[Any]) -> None:
    for f in futures:
        if not f.cancelled():
            f.exception()


class DirectFile:
    """A write-only file for pa.PythonFile: Arrow's buffers (handed over without a copy) gathered
    into page-aligned chunks, each hashed and written with O_DIRECT on `io`'s threads while the
    next fills; the tail written padded to the page and the file truncated to its size.

    The constructor raises OSError (EINVAL) where the filesystem refuses O_DIRECT (tmpfs): the
    caller then writes through the page cache. One that accepts the flag and refuses a write gets
    the write through the page cache."""

    def __init__(self, path: Path, io: DirectIO, algorithm: str = ALGORITHM) -> None:
        new_hash(algorithm)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
        self.algorithm = algorithm
        self.block = checksum.BLOCK
        self._io = io
        self._memory: mmap.mmap | None = None
        self._array: np.ndarray | None = None
        self._fill = 0  # bytes in `_memory`
        self._sent = 0  # bytes sent to be hashed and written
        self._hash: Any = None  # the block being hashed (on io.hashing's thread only)
        self._digests: list[bytes] = []  # (appended on io.hashing's thread)
        self._futures: list[Future[Any]] = []  # this file's writes and hashes not known to be done
        self.closed = False

    # -- the file-like protocol pa.PythonFile uses --------------------------------------------
    def write(self, data: Any) -> int:
        src = np.frombuffer(data, np.uint8)
        n = len(src)
        chunk = self._io.chunk
        i = 0
        while i < n:
            if self._array is None:
                self._memory = self._io.take()
                self._array = np.frombuffer(self._memory, np.uint8)
            k = min(chunk - self._fill, n - i)
            self._array[self._fill:self._fill + k] = src[i:i + k]
            self._fill += k
            i += k
            if self._fill == chunk:
                self._send(last=False)
        return n

    def tell(self) -> int:
        return self._sent + self._fill

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        """Send the tail, wait for every write; the file then holds exactly what was written."""
        if self.closed:
            return
        self.closed = True
        try:
            size = self.tell()
            self._send(last=True)
            for f in self._futures:
                f.result()  # (a write's error, e.g. a full disk, raised here)
            self._futures.clear()
            if size % _ALIGN:
                os.ftruncate(self.fd, size)
        finally:
            self._release()

    def abort(self) -> None:
        """Stop: wait for the writes under way (they use shared memory), close the file."""
        self.closed = True
        self._release()

    @property
    def checksum(self) -> str:
        """The file's checksum, from the digests of its blocks (once `close` has returned)."""
        if self._futures or not self.closed:
            raise RuntimeError("the file is not finished")
        return combine(self._digests, self.algorithm)

    # -- internals ------------------------------------------------------------------------------
    def _send(self, last: bool) -> None:
        """The chunk being filled to be hashed and written (`last`: the file's tail, padded)."""
        for f in [f for f in self._futures if f.done()]:
            f.result()  # (an earlier write's error: stop writing)
            self._futures.remove(f)
        if self._array is None:
            if not last:
                return
            self._memory = self._io.take()
            self._array = np.frombuffer(self._memory, np.uint8)
        memory, fill, offset = self._memory, self._fill, self._sent
        padded = -(-fill // _ALIGN) * _ALIGN
        self._array[fill:padded] = 0
        view = memoryview(memory)
        digest = self._io.hashing.submit(self._digest, view[:fill], offset, last)
        write = self._io.disk.submit(self._write, view[:padded], offset)
        self._futures += [digest, write]
        self._memory = self._array = None
        self._fill = 0
        self._sent += fill
        self._io.send(memory, digest, write)

    def _digest(self, view: memoryview, offset: int, last: bool) -> None:
        """(io.hashing's thread) Hash the chunk at `offset` into its block's hash; a block's digest
        is kept when the block is full or the file ends (an empty file: one empty block)."""
        if self._hash is None:
            if not len(view) and not (last and not self._digests):  # (the tail of a file of whole blocks)
                return
            self._hash = new_hash(self.algorithm)
        self._hash.update(view)
        if last or (len(view) and (offset + len(view)) % self.block == 0):
            self._digests.append(self._hash.digest())
            self._hash = None

    def _write(self, view: memoryview, offset: int) -> None:
        """(io.disk's thread) Write the chunk at `offset`."""
        if not len(view):
            return
        try:
            _pwrite_all(self.fd, view, offset)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
            # (a filesystem that opens with O_DIRECT and then refuses the write): through the cache
            fcntl.fcntl(self.fd, fcntl.F_SETFL, fcntl.fcntl(self.fd, fcntl.F_GETFL) & ~os.O_DIRECT)
            _pwrite_all(self.fd, view, offset)

    def _release(self) -> None:
        for f in self._futures:
            f.cancel()
        wait_quietly(*self._futures)
        self._futures.clear()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self._memory = self._array = None
