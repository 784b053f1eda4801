"""Checksums of table files (format 1.3): computed while a file is written, verified when read.

A file's checksum is a hash list, so that verifying a big file can use every core: the SHA-256
of the concatenated SHA-256 digests of its consecutive BLOCK-byte blocks (the last one shorter;
an empty file is one empty block). meta.json records it as `"checksum": "sha256-64MiB:<hex>"`
in each table and partition entry (schema.CHECKSUM, ALGORITHM). The writer hashes the bytes as
they go to disk (no second pass); a reader hashes a file's blocks in threads (hashlib works
without the GIL) before it first maps the file.
"""

from __future__ import annotations

import hashlib
import io
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BLOCK = 64 << 20
ALGORITHM = "sha256-64MiB"
_READ = 4 << 20


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


class HashingFile(io.RawIOBase):
    """A write-only file that hashes every byte written to it, block by block (wrapped in
    pyarrow.PythonFile by the trace writer)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._fh = open(path, "wb", buffering=0)
        self._digests: list[bytes] = []
        self._block = hashlib.sha256()
        self._in_block = 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        at = 0
        while at < len(view):  # hash up to the block's end, then start the next block
            take = min(len(view) - at, BLOCK - self._in_block)
            self._block.update(view[at:at + take])
            self._in_block += take
            at += take
            if self._in_block == BLOCK:
                self._digests.append(self._block.digest())
                self._block, self._in_block = hashlib.sha256(), 0
        written = 0
        while written < len(view):  # an unbuffered write may be short
            written += self._fh.write(view[written:])
        return written

    def tell(self) -> int:
        return self._fh.tell()

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()

    @property
    def checksum(self) -> str:
        """The checksum of everything written (call after the last write)."""
        blocks = self._digests + ([self._block.digest()] if self._in_block or not self._digests else [])
        return combine(blocks)
