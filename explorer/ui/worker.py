"""A single background thread whose results come back on the GUI thread.

The analyses and the power tools each get one (`analysis_session`, `tools.background`):
one thread per kind keeps a burst of requests queued instead of fighting for the cores,
and two kinds keep a long query from holding up the summary (and the reverse). Results
cross back through a Qt signal, so callbacks never touch widgets off the GUI thread.

Every worker's results then wait in one queue and are handed over one per pass of the
event loop (a zero-interval timer), never several in a row: a deep link finishes a
kernel's details, its dependencies and the operator tree's rows at nearly the same time,
and delivered back to back (each 10-40 ms at 28M events) they froze the window for
their sum; one at a time, a click or a repaint gets its turn between them.

Worker threads run a little nicer than the GUI thread (WORKER_NICENESS, Linux): a jump starts the
window's repaint and its workers' computations at the same moment, and on a loaded machine the
GUI thread's pass otherwise waited for a core behind them. Not much nicer: a worker that holds
Python's GIL while the scheduler keeps it off a core makes the GUI thread wait for it (at +10
the GUI thread's waits for the GIL grew more than its waits for a core shrank).
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from explorer.ui import thread_priority
from simcore.errors import describe, user_caused

# How much nicer than the main (GUI) thread the workers run: on a loaded
# machine the scheduler then gives a core to the GUI thread's pass before its own workers'
# computations, which a jump starts at the same moment (docs/PERFORMANCE.md, "The GUI thread's
# waits in wall time").
WORKER_NICENESS = 5

Callback = Callable[[bool, Any], None]


class _Bridge(QObject):
    """Lives on the GUI thread; the worker thread emits on it to hand results back."""

    finished = Signal(object)  # (callback, ok, value)


class _Deliveries(QObject):
    """The results waiting for the GUI thread, from every worker, handed over one per event-loop pass."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: deque[tuple[Callback, bool, Any]] = deque()
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(0)
        self.timer.timeout.connect(self._next)

    def add(self, item: tuple[Callback, bool, Any]) -> None:
        self.queue.append(item)
        if not self.timer.isActive():
            self.timer.start()

    def _next(self) -> None:
        if not self.queue:
            return
        item = self.queue.popleft()
        try:
            _deliver(item)
        finally:  # started after the delivery: timers that fell due meanwhile (input, a repaint) go first
            if self.queue:
                self.timer.start()


_deliveries: list[_Deliveries] = []  # made on the GUI thread with the first worker


def _queue() -> _Deliveries:
    if not _deliveries:
        _deliveries.append(_Deliveries())
    return _deliveries[0]


def pending() -> list[tuple[Callback, bool, Any]]:
    """The results waiting for the GUI thread, oldest first (a snapshot)."""
    return list(_deliveries[0].queue) if _deliveries else []


def soon(step: Callable[[], None]) -> None:
    """Run `step` on the GUI thread in a later pass of the event loop, in turn with the workers'
    results: how a panel splits showing a result into parts that each leave the window free."""
    _queue().add((lambda ok, value: step(), True, None))


def after_repaint(step: Callable[[], None]) -> None:
    """`soon`, one turn later: the pass that paints what the caller just changed (a jump's zoomed
    timeline, ~15-20 ms at 28M events) runs an empty turn, and `step` comes in a pass of its own."""
    soon(lambda: soon(step))


def _deliver(item: tuple[Callback, bool, Any]) -> None:
    callback, ok, value = item
    try:
        callback(ok, value)
    except Exception as exc:  # the receiving widget was closed meanwhile (directly or through a signal)
        if not _widget_gone(exc):
            raise


def _widget_gone(exc: BaseException | None) -> bool:
    """Whether `exc` (or what caused it: psygnal wraps a slot's error) is Qt's "already deleted"."""
    while exc is not None:
        if isinstance(exc, RuntimeError) and "deleted" in str(exc):
            return True
        exc = exc.__cause__
    return False


def _niceness() -> int | None:
    """The niceness a worker started now gets: the main (GUI) thread's plus WORKER_NICENESS."""
    now = thread_priority.niceness(main=True)
    return None if now is None or not WORKER_NICENESS else min(now + WORKER_NICENESS, 19)


def _behind(nice: int | None) -> None:
    """A worker thread's first step: lower its CPU priority below the GUI thread's."""
    if nice is not None:
        thread_priority.set_niceness(nice)


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
                self._bridge.finished.connect(_queue().add)
                self._executor = ThreadPoolExecutor(1, thread_name_prefix=self.thread_name,
                                                    initializer=_behind, initargs=(_niceness(),))
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
