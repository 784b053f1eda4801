"""Checksums of table files (format 1.3): computed while a file is written, verified when read.

A file's checksum is a hash list, so that verifying a big file can use every core: the hash of
the concatenated hashes of its consecutive BLOCK-byte blocks (the last one shorter; an empty
file is one empty block). meta.json records it as `"checksum": "<algorithm>:<hex>"` in each
table and partition entry (schema.CHECKSUM), the algorithm naming the hash and the block:
`sha256-64MiB` (1.3, 1.4) or `blake3-64MiB` (1.5 on: BLAKE3 costs about 0.3 s of CPU per GB
where SHA-256 with the CPU's SHA extensions costs 0.7, and hashing was a fifth of a big
capture's CPU). The writer hashes each block as soon as it is written, read back on other
threads while it is still in the page cache; a reader hashes a file's blocks in threads (both
hashes run without the GIL) before it first maps the file, with the algorithm its meta.json
names, so older traces verify as before.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from blake3 import blake3

BLOCK = 64 << 20
ALGORITHMS: dict[str, Callable[[], Any]] = {"sha256-64MiB": hashlib.sha256, "blake3-64MiB": blake3}
"""Every algorithm a reader verifies, by the name meta.json gives it: a hash of BLOCK-byte blocks."""
ALGORITHM = "blake3-64MiB"
"""The algorithm the writer records (format 1.5 on)."""
_READ = 4 << 20
_MAP = 16 << 20  # the window the writer's hasher maps at a time


def algorithm_of(checksum: str) -> str:
    """The algorithm a checksum from meta.json names (`sha256-64MiB` of `sha256-64MiB:<hex>`)."""
    return checksum.partition(":")[0]


def new_hash(algorithm: str) -> Any:
    """A fresh hash object of `algorithm` (a key of ALGORITHMS)."""
    try:
        return ALGORITHMS[algorithm]()
    except KeyError:
        raise ValueError(f"unknown checksum algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}") from None


def combine(block_digests: list[bytes], algorithm: str = ALGORITHM) -> str:
    """The file's checksum from its blocks' digests, as meta.json writes it."""
    h = new_hash(algorithm)
    h.update(b"".join(block_digests))
    return f"{algorithm}:{h.hexdigest()}"


def _block_digest(fd: int, offset: int, length: int, algorithm: str = ALGORITHM) -> bytes:
    h = new_hash(algorithm)
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


def _mapped_block_digest(fd: int, offset: int, length: int, algorithm: str = ALGORITHM) -> bytes:
    """`_block_digest` hashing the file's pages where they are, mapped a window at a time: no copy
    out of the page cache (the writer's own files, which nobody truncates under it)."""
    if length <= 0 or offset % mmap.ALLOCATIONGRANULARITY:
        return _block_digest(fd, offset, length, algorithm)
    h = new_hash(algorithm)
    end = offset + length
    while offset < end:
        n = min(_MAP, end - offset)
        with mmap.mmap(fd, n, access=mmap.ACCESS_READ, offset=offset) as m, memoryview(m) as view:
            h.update(view)
        offset += n
    return h.digest()


def file_checksum(path: Path, pool: ThreadPoolExecutor | None = None, algorithm: str = ALGORITHM) -> str:
    """The checksum of a file's bytes as they are now (its blocks hashed in `pool`'s threads),
    by `algorithm` (a key of ALGORITHMS: the one a recorded checksum names, to verify it)."""
    new_hash(algorithm)  # (an unknown one fails before the file is opened)
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        spans = [(o, min(BLOCK, size - o)) for o in range(0, size, BLOCK)] or [(0, 0)]
        if pool is None or len(spans) == 1:
            digests = [_block_digest(fd, o, n, algorithm) for o, n in spans]
        else:
            digests = list(pool.map(lambda span: _block_digest(fd, *span, algorithm), spans))
    finally:
        os.close(fd)
    return combine(digests, algorithm)


def parse(value: object) -> str | None:
    """A checksum from meta.json: the value if well formed and of a known algorithm; None if of
    an algorithm this reader does not know (a later minor version's: not checked); ValueError if
    malformed."""
    if not isinstance(value, str) or ":" not in value:
        raise ValueError("malformed")
    algorithm, _, digest = value.partition(":")
    if algorithm not in ALGORITHMS:
        if not algorithm or not all(c.isalnum() or c in "-_" for c in algorithm):
            raise ValueError("malformed")
        return None
    if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        raise ValueError("malformed")
    return value


class WrittenFileHasher:
    """Hashes a file that another writer (pyarrow's native one) is writing: each block as soon as
    it is complete, read back on `pool`'s threads while its pages are still in the page cache.

    The writer's thread only submits work; the reads and the hash run without the GIL, so hashing
    costs the capture's simulation neither the GIL nor a Python call per written buffer."""

    def __init__(self, path: Path, pool: ThreadPoolExecutor, algorithm: str = ALGORITHM) -> None:
        new_hash(algorithm)
        self.algorithm = algorithm
        self._fd = os.open(path, os.O_RDONLY)
        self._pool = pool
        self._blocks: list[Future[bytes]] = []
        self._hashed_to = 0  # bytes covered by submitted blocks
        self._done = False
        self._checksum: str | None = None

    def written(self, size: int) -> None:
        """The file now holds `size` bytes: hash every block they complete."""
        while self._fd >= 0 and self._hashed_to + BLOCK <= size:
            self._blocks.append(self._pool.submit(_mapped_block_digest, self._fd, self._hashed_to, BLOCK,
                                                  self.algorithm))
            self._hashed_to += BLOCK

    def finish(self, size: int) -> None:
        """The file is complete, `size` bytes long: hash the rest (the checksum waits for it)."""
        if self._fd < 0 or self._done:
            return
        self.written(size)
        if size > self._hashed_to or not self._blocks:  # the shorter last block; an empty file's one
            self._blocks.append(self._pool.submit(_mapped_block_digest, self._fd, self._hashed_to,
                                                  size - self._hashed_to, self.algorithm))
        self._done = True

    @property
    def checksum(self) -> str:
        """The finished file's checksum (waits for its blocks' hashes)."""
        if self._checksum is None:
            if not self._done:
                raise RuntimeError("the file is not finished")
            try:
                self._checksum = combine([f.result() for f in self._blocks], self.algorithm)
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
