"""Open a trace and build its index off the GUI thread, reporting progress; then verify its
checksums, still off the GUI thread, so a big trace shows as fast as before (`damaged` if not).

A trace with no saved index (from elsewhere, or its cache deleted) is indexed in one compiled
pass over its big tables (`index_capture.scan`) and shown before it is validated: validation
reads every column of every table (15 s of a 100M-event trace's 8.4 GB when it is not in
memory), so it runs after the first frame, on this thread, and a trace that fails it is closed
with the reason (`refused`), as one failing its checksums is; then the index is saved."""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QThread, Signal

from explorer.model.timeline import index_cache, lod, scan_ahead
from explorer.model.timeline.trace_index import TraceIndex
from explorer.model.timeline.utilisation import Utilisation
from explorer.ui import thread_priority
from simcore.errors import MiB, MemoryNeed, describe, path_bytes, user_caused

GUI_MEMORY = MemoryNeed(280 * MiB, 1.6, 720 * MiB, 3.7)
"""The window's memory for a trace: `trnx view --smoke-test` peaked at 215 / 315 / 465 MiB RSS and
needed 630 / 793 / 1253 MiB of address space for 1 / 27 / 154 MiB traces (docs/PERFORMANCE.md)."""

from simcore.trace import open_trace
from simcore.trace.schema import META_FILE


class LoadCancelled(Exception):
    """The user pressed Cancel while a trace was loading."""


@dataclass
class LoadedTrace:
    path: Path
    index: TraceIndex
    utilisation: Utilisation
    validated: bool = True  # False: shown before validation, which the loader runs next


def load(path: Path, progress=None, colour_mode: str = "opcode") -> LoadedTrace:
    """Everything the window needs for a trace (call it off the GUI thread).

    A persisted index that matches the trace's files (`index_cache`) replaces both the full
    validation (it was written after one, of these very files) and the pass over the tables.
    """
    say = progress or (lambda f, m: None)
    say(0.0, f"opening {path.name}")
    if not (Path(path) / META_FILE).exists():  # a Neuron Explorer profile directory: imported first
        from explorer.interop.neuron_profile.as_trace import trace_path  # (not imported for a trace:
        # 0.08-0.16 s before the first frame of every open, which `trnx view` had paid before its window)

        path = Path(trace_path(str(path)))
    trace = open_trace(path, validate=False, checksums=False)  # meta, magic and schema now; data below;
    # checksums after the window shows it (TraceLoader.run)
    saved = index_cache.load(trace)
    validated = True
    if saved is None:
        reserved = scan_ahead.reserve(trace)  # its tables read, its prefix sums' pages given, while numba loads
        from explorer.model.timeline import index_capture  # (numba: imported when needed)

        # the frames' compiled loops after the scan's (loading both at once, each thread waited for
        # the other's imports: the scan started up to 2 s later on a 100M-event trace)
        lod.load_compiled_loops_apart()
        say(0.01, "indexing")
        saved = index_capture.scan(trace, reserved)  # in memory (dictionary codes scanned as read); None where it
        validated = saved is None  # gives up: validated first and built as before; else validated after
        # the first frame (TraceLoader.run)
    lod.load_compiled_loops_apart()  # the frames' compiled loops, beside this load (the first frame need not wait)
    if validated and (saved is None or not saved.info.get("validated")):
        say(0.01, "validating")
        validate_apart(path)
    if validated:  # validated now, or its stamp says these are the files that passed validation: no
        trace.codes_checked = True  # table's codes are scanned again
    index = TraceIndex.build(trace, lambda f, m: say(0.25 + 0.6 * f, m), saved=saved)
    say(0.86, "colouring")
    index.colours(colour_mode)
    say(0.93, "utilisation")
    util = Utilisation(index)
    say(1.0, "ready")
    return LoadedTrace(path, index, util, validated)


def validate_apart(path: Path, stop=None) -> None:
    """Validate the trace on mappings of its own, let go when done. Validation reads every
    column (every dictionary column's codes, the FLOPs, the bytes), much of which the window
    never reads again, and a mapped page counts in the process's memory while its mapping
    lives: validated on the window's trace, 0.23 GB of a 1.1 GB trace stayed resident.
    `stop()` true between table files raises LoadCancelled (the window closing)."""

    def check() -> None:
        if stop is not None and stop():
            raise LoadCancelled()

    open_trace(path, validate=False, checksums=False).validate(stop=check)


class TraceLoader(QThread):
    """Runs `load` in a thread; emits `loaded(LoadedTrace)` or `failed(message)`, and after
    `loaded`, `refused(path, message)` if a trace shown before its validation fails it, and
    `damaged(path, message)` if a table file does not match its checksum."""

    progressed = Signal(float, str)
    loaded = Signal(object)
    failed = Signal(str)
    refused = Signal(object, str)
    damaged = Signal(object, str)

    def __init__(self, path: Path, colour_mode: str = "opcode", parent=None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.colour_mode = colour_mode
        self._cancel = False

    def cancel(self) -> None:
        self._cancel = True

    def _progress(self, fraction: float, message: str) -> None:
        if self._cancel:
            raise LoadCancelled()
        self.progressed.emit(fraction, message)

    def run(self) -> None:  # runs in the worker thread
        try:
            result = load(self.path, self._progress, self.colour_mode)
        except LoadCancelled:
            self.failed.emit("")
        except Exception as exc:  # one sentence in the dialog; a bug also keeps its traceback on stderr
            if not user_caused(exc):
                traceback.print_exc(file=sys.stderr)
            self.failed.emit(describe(exc, f"open {self.path}", GUI_MEMORY.bytes_for(path_bytes(self.path))))
        else:
            if self._cancel:
                self.failed.emit("")
            else:
                self.loaded.emit(result)
                if not result.validated and not self._validate(result):
                    return
                result.index.save(validated=True)  # for the next open, after this one is on screen
                self._verify(result)

    def _validate(self, result: LoadedTrace) -> bool:
        """Validate a trace shown before it was; False (and `refused`) when it fails or is cancelled."""
        try:
            validate_apart(result.path, stop=lambda: self._cancel)
        except LoadCancelled:
            return False
        except Exception as exc:  # one sentence in the dialog (describe); a bug keeps its traceback on stderr
            if not user_caused(exc):
                traceback.print_exc(file=sys.stderr)
            self.refused.emit(result.path, describe(exc, f"open {result.path}"))
            return False
        result.index.trace.codes_checked = True
        result.validated = True
        return True

    def _verify(self, result: LoadedTrace) -> None:
        """Hash every table file against meta.json's checksums (format 1.3), after the trace is
        on screen: hashing a 10 GB trace takes seconds, which the window does not wait for. It
        reads the whole trace, so it yields the disk and the cores (`thread_priority`: this thread
        and the hashing threads it starts) to the first frames and the analyses, which read only
        what they need of a trace not in the page cache (docs/PERFORMANCE.md, cold opens)."""
        thread_priority.yield_to_foreground()
        try:
            result.index.trace.verify_checksums(stop=lambda: self._cancel)
        except Exception as exc:  # one sentence in the dialog (describe); a bug keeps its traceback on stderr
            if not user_caused(exc):
                traceback.print_exc(file=sys.stderr)
            self.damaged.emit(result.path, describe(exc, f"verify {result.path}"))
