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
