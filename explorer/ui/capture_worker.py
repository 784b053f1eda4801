"""Run `simcore.capture` in a QThread so the window stays responsive, with progress and cancel.

Cancel sets a `threading.Event` the simulator checks between ops; the trace writer
then removes its temporary directory, so nothing is left at the output path. If the
capture had already finished writing when Cancel arrived, the new trace is removed
too, unless it replaced an older trace (overwrite), which is gone by then.
"""

from __future__ import annotations

import shutil
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from PySide6.QtCore import QThread, Signal

from simcore.errors import describe, memory_sentence, user_caused


class CaptureWorker(QThread):
    """Emits `progressed(fraction, message)`, then one of `succeeded(path)`, `failed(message)`, `cancelled()`."""

    progressed = Signal(float, str)
    succeeded = Signal(object)  # Path of the written trace
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, options: dict[str, Any], out_path: Path, compression: str | None = None, parent=None) -> None:
        super().__init__(parent)
        self.options = dict(options)
        self.out_path = Path(out_path)
        self.compression = compression
        self.cancel_event = threading.Event()
        self.existed_before = self.out_path.exists()

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_event.is_set()

    def _progress(self, fraction: float, message: str) -> None:
        self.progressed.emit(float(fraction), str(message))

    def run(self) -> None:  # the worker thread
        import simcore.capture as sc
        from explorer.model.timeline.index_capture import IndexRecorder

        recorder = IndexRecorder()  # the timeline's index as the trace is written: opening it maps the index
        try:
            path = sc.capture(self.options, self.out_path, progress=self._progress, cancel=self.cancel_event,
                              compression=self.compression, observer=recorder)
            recorder.save(path)
        except sc.CaptureCancelled:
            self.cancelled.emit()
        except MemoryError as exc:
            self.failed.emit(memory_sentence(exc, "capture this workload",
                                             advice="try fewer layers or kernel detail, or free memory"))
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            self.failed.emit(f"cannot write{where}: {exc.strerror or exc}.")
        except Exception as exc:  # one sentence in the dialog; a bug also keeps its traceback on stderr
            if not user_caused(exc):
                traceback.print_exc(file=sys.stderr)
            self.failed.emit(describe(exc, "capture this workload"))
        else:
            if self.cancel_event.is_set() and not self.existed_before:
                shutil.rmtree(path, ignore_errors=True)
                self.cancelled.emit()
            else:  # (an --overwrite run that finished before Cancel: the old trace is gone, keep the new one)
                self.succeeded.emit(Path(path))
