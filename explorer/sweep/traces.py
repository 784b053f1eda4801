"""A sweep's kept traces: recognise one, and write one a remote worker sent back -- never
replacing anything.

A configuration's trace lives at traces/NNNN-grid.trnx. Something already there is either
that configuration's own trace (a complete trace whose recorded capture options are the
configuration's: an earlier run wrote it and was killed before recording the row; captures
are deterministic, so it is reused as it is) or something else, which is left alone and
makes the row fail with one sentence.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simcore.errors import UserError
from simcore.tempfiles import sibling
from simcore.trace.schema import plain_relative
from simcore.trace.target import clean_directory
from simcore.trace.target import install as move_into_place


def matching_trace(path: Path, options: Mapping[str, Any]) -> bool:
    """Is `path` a complete trace captured with exactly these options?"""
    from simcore.capture.options import CaptureConfig
    from simcore.trace import open_trace

    if path.is_symlink() or not path.is_dir():
        return False
    try:
        trace = open_trace(path)
        wanted = CaptureConfig.from_kwargs(dict(options)).given()
    except (UserError, OSError):
        return False
    capture = trace.meta.get("capture")
    return isinstance(capture, dict) and capture.get("options") == wanted


def taken(path: Path, options: Mapping[str, Any]) -> str | None:
    """Why `path` cannot take this configuration's trace (None: it is free, or already the trace)."""
    if not os.path.lexists(path) or matching_trace(path, options):
        return None
    return f"{path} exists and is not this configuration's trace; it was left alone (move it away and --resume)."


def install(files: Mapping[str, bytes], target: Path, options: Mapping[str, Any]) -> Path:
    """Write the files of a trace a worker sent back as `target`: into a hidden temporary sibling
    (`.NAME.trnx-tmp-PID-TAG`, removed on any failure), then renamed into place (never over
    anything: simcore.trace.target.install); a trace already
    there is kept if it is this configuration's, anything else is refused and left alone."""
    why = taken(target, options)
    if why is not None:
        raise UserError(why)
    if os.path.lexists(target):
        return target
    clean_directory(target.parent)
    tmp = sibling(target)
    try:
        tmp.mkdir()
        for rel, data in files.items():
            if not plain_relative(rel):
                raise UserError(f"a worker sent a trace file named {rel!r}; the trace was not written.")
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
        move_into_place(tmp, target, False)   # never replaces what appeared meanwhile
    finally:
        if os.path.lexists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)   # ours: a fresh temporary name
    return target
