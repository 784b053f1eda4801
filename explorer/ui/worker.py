"""A single background thread whose results come back on the GUI thread.

The analyses and the power tools each get one (`analysis_session`, `tools.background`):
one thread per kind keeps a burst of requests queued instead of fighting for the cores,
and two kinds keep a long query from holding up the summary (and the reverse). Results
cross back through a Qt signal, so callbacks never touch widgets off the GUI thread.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QObject, Signal

from simcore.errors import describe, user_caused

Callback = Callable[[bool, Any], None]


class _Bridge(QObject):
    """Lives on the GUI thread; the worker thread emits on it to hand results back."""

    finished = Signal(object)  # (callback, ok, value)


def _deliver(item: tuple[Callback, bool, Any]) -> None:
    callback, ok, value = item
    try:
        callback(ok, value)
    except RuntimeError as exc:  # the receiving widget was closed meanwhile
        if "deleted" not in str(exc):
            raise


class Worker:
    """One worker thread, created on first use (so no QObject exists before the QApplication).

    `doing` names the work in failure sentences (simcore.errors.describe): "cannot run this
    analysis: ...".
    """

    def __init__(self, thread_name: str, doing: str) -> None:
        self.thread_name = thread_name
        self.doing = doing
        self._bridge: _Bridge | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any], callback: Callback) -> Future:
        """Run `fn` on the worker; `callback(ok, result or one-sentence message)` runs on the GUI thread."""
        with self._lock:
            if self._bridge is None:
                self._bridge = _Bridge()
                self._bridge.finished.connect(_deliver)
                self._executor = ThreadPoolExecutor(1, thread_name_prefix=self.thread_name)
        bridge, doing = self._bridge, self.doing

        def work() -> None:
            try:
                value, ok = fn(), True
            except Exception as exc:  # one sentence; a bug also keeps its traceback on stderr
                if not user_caused(exc):
                    traceback.print_exc(file=sys.stderr)
                value, ok = describe(exc, doing), False
            bridge.finished.emit((callback, ok, value))

        return self._executor.submit(work)


class Latest:
    """Keeps only the newest request of one kind on a worker: older pending ones are dropped,
    stale results ignored (a result computed for a selection the user has since left)."""

    def __init__(self, run: Callable[[Callable[[], Any], Callback], Future]) -> None:
        self.run = run
        self.generation = 0
        self.pending: Future | None = None

    def submit(self, fn: Callable[[], Any], on_done: Callback) -> None:
        self.generation += 1
        gen = self.generation
        if self.pending is not None:
            self.pending.cancel()

        def done(ok: bool, value: Any) -> None:
            if gen == self.generation:
                self.pending = None
                on_done(ok, value)

        self.pending = self.run(fn, done)

    def cancel(self) -> None:
        self.generation += 1
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
