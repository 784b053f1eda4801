"""The timeline's index persisted beside the trace it indexes, so reopening costs no pass over it.

Building the index reads every row of the interval tables (track runs, disjointness,
prefix sums of busy time, the colourings' used names): seconds for 100M events. It is
saved once, atomically, as `timeline-index.cache` inside the trace directory: a small
JSON header and raw little-endian arrays, memory-mapped on open (the prefix sums are
8 bytes per event; nothing else grows with the trace).

It is a cache, never part of the trace: no table refers to it, meta.json does not list
it, `trnx validate` ignores it, deleting it only makes the next open slower. It is used
only when its format version is this code's and its stamp matches the trace: meta.json's
bytes and every table file's inode, size, modification and change times, as `os.stat`
reports them (a file rewritten in place changes its change time, which no user can set
back). A stale, damaged or foreign file is ignored and rewritten; a trace directory that
is read-only simply goes without.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from simcore.atomic import atomic_path
from simcore.errors import UserError
from simcore.trace import Trace
from simcore.trace import schema as S

CACHE_FILE = S.INDEX_CACHE_FILE  # one of the trace format's DISPOSABLE_FILES: a trace holding it is still ours
FORMAT = "trnx-timeline-index"
VERSION = 1
MAGIC = b"TRNXIDX\x00"
ALIGN = 64


def stamp(trace: Trace) -> dict[str, Any]:
    """What must not change for a saved index to still describe `trace`."""
    meta = trace.path / "meta.json"
    files = {}
    for f in [meta, *trace.table_files()]:
        st = f.stat()
        files[str(f.relative_to(trace.path))] = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    return {"meta_blake2b": hashlib.blake2b(meta.read_bytes(), digest_size=16).hexdigest(), "files": files}


class SavedIndex:
    """A memory-mapped index file: its header's `info` and its arrays (read-only views); or, not
    `persisted`, the same found in memory for a trace that had none (`index_capture.scan`)."""

    def __init__(self, info: dict[str, Any], arrays: dict[str, np.ndarray], *, persisted: bool = True) -> None:
        self.info, self.arrays, self.persisted = info, arrays, persisted

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def __contains__(self, name: str) -> bool:
        return name in self.arrays


def load(trace: Trace) -> SavedIndex | None:
    """The saved index of `trace`, or None when there is none or it does not match (never raises)."""
    path = trace.path / CACHE_FILE
    try:
        if not path.is_file():
            return None
        with open(path, "rb") as fh:
            read = _matching_header(fh, trace)
        if read is None:
            return None
        header, n = read
        data = _align(len(MAGIC) + 8 + n)
        size = path.stat().st_size
        mm = np.memmap(path, dtype=np.uint8, mode="r") if size > data else np.zeros(0, np.uint8)
        arrays = {}
        for name, (offset, dtype, length) in header["arrays"].items():
            dt = np.dtype(dtype)
            start, stop = data + offset, data + offset + length * dt.itemsize
            if offset % ALIGN or stop > size:
                return None
            arrays[name] = mm[start:stop].view(dt) if length else np.zeros(0, dt)
        return SavedIndex(header.get("info", {}), arrays)
    except (OSError, ValueError, TypeError, KeyError, UnicodeDecodeError, json.JSONDecodeError, struct.error):
        return None


def save(trace: Trace, arrays: dict[str, np.ndarray | list[np.ndarray]], info: dict[str, Any]) -> bool:
    """Write the index atomically into the trace directory; False when it cannot be written
    (a read-only trace, a full disk): the index is a cache, so that is not an error. An array
    may be given as a list of chunks of one dtype (written one after another, never joined)."""
    try:
        layout: dict[str, list] = {}
        offset = 0  # from the first byte after the header, aligned
        for name, a in arrays.items():
            parts = a if isinstance(a, list) else [a]
            dtype = parts[0].dtype
            size, nbytes = sum(int(c.size) for c in parts), sum(c.nbytes for c in parts)
            layout[name] = [offset, np.dtype(dtype).newbyteorder("<").str, size]
            offset = _align(offset + nbytes)
        header = json.dumps({"format": FORMAT, "version": VERSION, "stamp": stamp(trace), "info": info,
                             "arrays": layout}).encode("utf-8")
        data = _align(len(MAGIC) + 8 + len(header))
        with companion_path(trace.path, CACHE_FILE) as tmp, open(tmp, "wb") as fh:
            fh.write(MAGIC + struct.pack("<Q", len(header)) + header)
            for name, a in arrays.items():
                fh.seek(data + layout[name][0])
                for c in a if isinstance(a, list) else [a]:
                    np.ascontiguousarray(c, dtype=np.dtype(layout[name][1])).tofile(fh)
            fh.truncate(data + offset)
        return True
    except (OSError, ValueError, TypeError, UserError):
        return False


HEADER_ROOM = (64 << 10) - len(MAGIC) - 8
"""The header's bytes in a spooled index file (padded with JSON whitespace): its arrays are written
from byte 64 KiB on before the header is known."""


class Spool:
    """An index file written while its trace is: the big arrays (a table's prefix sums, 8 bytes an
    event) go to the file as they are computed, instead of into memory to be written after the
    trace, on the path to the capture's end; `finish` adds the small arrays and the header.

    The file starts without MAGIC (zeros) until `finish` writes the header last, so until then
    it is no index to `load`; it lives in the temporary directory of the trace being written
    (TraceWriter.companion), so it appears with the trace and goes with it if the write fails.
    Each array is appended in one run of chunks; `append` returns False for an array whose run
    was ended by another's (the caller then keeps that one in memory: `read`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.data = _align(len(MAGIC) + 8 + HEADER_ROOM)
        self.end = 0  # from `data`
        self.placed: dict[str, list] = {}  # name -> [offset from data, dtype, items]
        self._open: str | None = None  # the array whose run is the last

    def append(self, name: str, chunk: np.ndarray) -> bool:
        """Write `chunk` after what `name` holds; False (nothing written) when another array's run
        came after `name`'s."""
        at = self.placed.get(name)
        if at is None:
            self.end = _align(self.end)
            at = self.placed[name] = [self.end, np.dtype(chunk.dtype).newbyteorder("<").str, 0]
        elif self._open != name:
            return False
        self._open = name
        _pwrite_all(self._fd, np.ascontiguousarray(chunk, dtype=np.dtype(at[1])), self.data + self.end)
        self.end += chunk.nbytes
        at[2] += int(chunk.size)
        return True

    def read(self, name: str) -> np.ndarray:
        """What `name` holds, read back into memory."""
        offset, dtype, items = self.placed.pop(name)
        out = np.empty(items, np.dtype(dtype))
        if out.nbytes:
            view = memoryview(out).cast("B")
            got = 0
            while got < len(view):
                n = os.preadv(self._fd, [view[got:]], self.data + offset + got)
                if n <= 0:
                    raise OSError(f"{self.path}: short read")
                got += n
        return out

    def finish(self, trace: Trace, arrays: dict[str, np.ndarray | list[np.ndarray] | None],
               info: dict[str, Any]) -> bool:
        """Complete the file as the index of `trace`: `arrays` in this order (as `save` takes them),
        None for one this spool holds; False (the file removed) when it cannot be written. A header
        too big for its room makes a new file (`save`), the spooled arrays copied into it."""
        try:
            layout: dict[str, list] = {}
            end = self.end
            for name, a in arrays.items():
                if a is None:
                    layout[name] = self.placed[name]
                    continue
                parts = a if isinstance(a, list) else [a]
                end = _align(end)
                layout[name] = [end, np.dtype(parts[0].dtype).newbyteorder("<").str, sum(int(c.size) for c in parts)]
                for c in parts:
                    _pwrite_all(self._fd, np.ascontiguousarray(c, dtype=np.dtype(layout[name][1])), self.data + end)
                    end += c.nbytes
            header = json.dumps({"format": FORMAT, "version": VERSION, "stamp": stamp(trace), "info": info,
                                 "arrays": layout}).encode("utf-8")
            if len(header) > HEADER_ROOM:
                mapped = np.memmap(self.path, np.uint8, "r")
                whole = {n: mapped[self.data + o:self.data + o + k * np.dtype(d).itemsize].view(d)
                         if a is None else a for (n, a), (o, d, k) in zip(arrays.items(), layout.values())}
                if save(trace, whole, info):  # (renamed over this file)
                    return True
                self.discard()
                return False
            os.ftruncate(self._fd, self.data + _align(end))
            _pwrite_all(self._fd, MAGIC + struct.pack("<Q", HEADER_ROOM) + header.ljust(HEADER_ROOM), 0)
            return True
        except (OSError, ValueError, TypeError, UserError):
            self.discard()
            return False
        finally:
            self.close()

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:  # a trace whose write failed took the file with it; the descriptor goes too
        self.close()

    def discard(self) -> None:
        """Close and remove the file."""
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def _pwrite_all(fd: int, data: Any, offset: int) -> None:
    view = memoryview(data).cast("B")
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], offset + done)


@contextmanager
def companion_path(trace_dir: Path, name: str) -> Iterator[Path]:
    """Write one of the tool's disposable files (`schema.DISPOSABLE_FILES`) inside a trace
    directory, atomically: a temporary beside it, renamed over it when complete. Only those
    names: anything else in a trace directory is the user's, and makes --overwrite refuse it."""
    if name not in S.DISPOSABLE_FILES:
        raise ValueError(f"{name} is not one of the trace format's disposable files")
    with atomic_path(Path(trace_dir) / name) as tmp:
        yield tmp


def mark_validated(trace: Trace) -> bool:
    """Record in the saved index of `trace` (still matching it) that the trace has now passed full
    validation, so later opens skip it: an index recorded while a capture wrote the trace says it
    was never validated. Rewritten atomically (the arrays copied as they are); False when there is
    no matching index or it cannot be rewritten."""
    path = trace.path / CACHE_FILE
    try:
        with open(path, "rb") as src:
            read = _matching_header(src, trace)
            if read is None:
                return False
            header, n = read
            header.setdefault("info", {})["validated"] = True
            new = json.dumps(header).encode("utf-8")
            with companion_path(trace.path, CACHE_FILE) as tmp, open(tmp, "wb") as out:
                out.write(MAGIC + struct.pack("<Q", len(new)) + new)
                out.seek(_align(len(MAGIC) + 8 + len(new)))
                src.seek(_align(len(MAGIC) + 8 + n))
                shutil.copyfileobj(src, out, 16 << 20)
        return True
    except (OSError, ValueError, TypeError, KeyError, UnicodeDecodeError, json.JSONDecodeError, struct.error, UserError):
        return False


def _matching_header(fh: BinaryIO, trace: Trace) -> tuple[dict[str, Any], int] | None:
    """The JSON header of an index file open at its start, and its length in bytes; None when the
    file is not an index of this format and version or was built from other table files (the
    stamp). Leaves `fh` just after the header; malformed JSON raises (the callers' "no index")."""
    head = fh.read(len(MAGIC) + 8)
    if len(head) < len(MAGIC) + 8 or head[:len(MAGIC)] != MAGIC:
        return None
    (n,) = struct.unpack("<Q", head[len(MAGIC):])
    if n > 1 << 26:
        return None
    header = json.loads(fh.read(n).decode("utf-8"))
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("version") != VERSION \
            or header.get("stamp") != stamp(trace):
        return None
    return header, n


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN
