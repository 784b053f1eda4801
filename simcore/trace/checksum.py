"""Checksums of table files (format 1.3): computed while a file is written, verified when read.

A file's checksum is a hash list, so that verifying a big file can use every core: the SHA-256
of the concatenated SHA-256 digests of its consecutive BLOCK-byte blocks (the last one shorter;
an empty file is one empty block). meta.json records it as `"checksum": "sha256-64MiB:<hex>"`
in each table and partition entry (schema.CHECKSUM, ALGORITHM). The writer hashes each block as
soon as it is written, read back on other threads while it is still in the page cache; a reader
hashes a file's blocks in threads (hashlib works without the GIL) before it first maps the file.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

BLOCK = 64 << 20
ALGORITHM = "sha256-64MiB"
_READ = 4 << 20
_MAP = 16 << 20  # the window the writer's hasher maps at a time


def combine(block_digests: list[bytes]) -> str:
    """The file's checksum from its blocks' digests, as meta.json writes it."""
    return f"{ALGORITHM}:{hashlib.sha256(b''.join(block_digests)).hexdigest()}"


def _block_digest(fd: int, offset: int, length: int) -> bytes:
    h = hashlib.sha256()
    buf = bytearray(min(_READ, max(length, 1)))
    view = memoryview(buf)
    end = offset + length
    while offset < end:
        n = os.preadv(fd, [view[: min(len(buf), end - offset)]], offset)
        if n <= 0:
            raise OSError(f"unexpected end of file at byte {offset}")
        h.update(view[:n])
        offset += n
    return h.digest()


def _mapped_block_digest(fd: int, offset: int, length: int) -> bytes:
    """`_block_digest` hashing the file's pages where they are, mapped a window at a time: no copy
    out of the page cache (the writer's own files, which nobody truncates under it)."""
    if length <= 0 or offset % mmap.ALLOCATIONGRANULARITY:
        return _block_digest(fd, offset, length)
    h = hashlib.sha256()
    end = offset + length
    while offset < end:
        n = min(_MAP, end - offset)
        with mmap.mmap(fd, n, access=mmap.ACCESS_READ, offset=offset) as m, memoryview(m) as view:
            h.update(view)
        offset += n
    return h.digest()


def file_checksum(path: Path, pool: ThreadPoolExecutor | None = None) -> str:
    """The checksum of a file's bytes as they are now (its blocks hashed in `pool`'s threads)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        spans = [(o, min(BLOCK, size - o)) for o in range(0, size, BLOCK)] or [(0, 0)]
        if pool is None or len(spans) == 1:
            digests = [_block_digest(fd, o, n) for o, n in spans]
        else:
            digests = list(pool.map(lambda span: _block_digest(fd, *span), spans))
    finally:
        os.close(fd)
    return combine(digests)


def parse(value: object) -> str | None:
    """A checksum from meta.json: the value if well formed and of a known algorithm; None if of
    an algorithm this reader does not know (a later minor version's: not checked); ValueError if
    malformed."""
    if not isinstance(value, str) or ":" not in value:
        raise ValueError("malformed")
    algorithm, _, digest = value.partition(":")
    if algorithm != ALGORITHM:
        if not algorithm or not all(c.isalnum() or c in "-_" for c in algorithm):
            raise ValueError("malformed")
        return None
    if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        raise ValueError("malformed")
    return value


class WrittenFileHasher:
    """Hashes a file that another writer (pyarrow's native one) is writing: each block as soon as
    it is complete, read back on `pool`'s threads while its pages are still in the page cache.

    The writer's thread only submits work; the reads and SHA-256 run without the GIL, so hashing
    costs the capture's simulation neither the GIL nor a Python call per written buffer."""

    def __init__(self, path: Path, pool: ThreadPoolExecutor) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        self._pool = pool
        self._blocks: list[Future[bytes]] = []
        self._hashed_to = 0  # bytes covered by submitted blocks
        self._done = False
        self._checksum: str | None = None

    def written(self, size: int) -> None:
        """The file now holds `size` bytes: hash every block they complete."""
        while self._fd >= 0 and self._hashed_to + BLOCK <= size:
            self._blocks.append(self._pool.submit(_mapped_block_digest, self._fd, self._hashed_to, BLOCK))
            self._hashed_to += BLOCK

    def finish(self, size: int) -> None:
        """The file is complete, `size` bytes long: hash the rest (the checksum waits for it)."""
        if self._fd < 0 or self._done:
            return
        self.written(size)
        if size > self._hashed_to or not self._blocks:  # the shorter last block; an empty file's one
            self._blocks.append(self._pool.submit(_mapped_block_digest, self._fd, self._hashed_to, size - self._hashed_to))
        self._done = True

    @property
    def checksum(self) -> str:
        """The finished file's checksum (waits for its blocks' hashes)."""
        if self._checksum is None:
            if not self._done:
                raise RuntimeError("the file is not finished")
            try:
                self._checksum = combine([f.result() for f in self._blocks])
            finally:
                self.close()
        return self._checksum

    def close(self) -> None:
        """Stop hashing: drop the blocks not started, wait for the running ones, close the file."""
        if self._fd < 0:
            return
        for f in self._blocks:
            f.cancel()
        wait(self._blocks)
        os.close(self._fd)
        self._fd = -1
