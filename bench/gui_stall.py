"""How long the GUI thread stops answering, and where: a heartbeat and a stack sampler.

`Stall` runs a 5 ms QTimer on the GUI thread. Its longest gap between ticks is what a
user feels as a frozen window; beside it, the GUI thread's own CPU time during that gap
(`time.thread_time` read at the ticks) tells whether the thread was working (a block of
its own) or waiting, and its scheduler statistics (Linux) which wait: for a core on a loaded
machine (`worst_wait`), or asleep (the rest: for the GIL, the disk or a lock). With
`sample=True` a second thread looks at the GUI thread every 2 ms and, whenever the
heartbeat is more than `late_ms` overdue, counts the GUI thread's innermost project
frames: the profile of the blocks themselves, not of the idle time between them.
Work in Qt's C++ (layouts, painting of Qt's own widgets) has no Python frame; `timed_app`
makes the QApplication time each event it delivers, exclusive of the events nested in it,
so that work is named by its receiver and event type.
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])


def _where(frame, depth: int = 6) -> str:
    """The innermost project frames of a stack, innermost first ("file:line fn < ..."), after
    the innermost frame of all when that one is outside the project (a library's)."""
    out = []
    f = frame
    name = frame.f_code.co_filename
    if not name.startswith(ROOT) or "/.venv/" in name or "/bench/" in name:
        out.append(f"[{Path(name).name}:{frame.f_lineno} {frame.f_code.co_name}]")
        depth += 1
    while f is not None and len(out) < depth:
        name = f.f_code.co_filename
        if name.startswith(ROOT) and "/bench/" not in name and "/.venv/" not in name:
            out.append(f"{Path(name).relative_to(ROOT)}:{f.f_lineno} {f.f_code.co_name}")
        f = f.f_back
    return " < ".join(out) or "(outside the project)"


def _functions(frame) -> set[str]:
    """Every project function on a stack (each once): a sample's inclusive attribution."""
    out = set()
    f = frame
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith(ROOT) and "/bench/" not in name and "/.venv/" not in name:
            out.add(f"{Path(name).relative_to(ROOT)}:{f.f_code.co_name}")
        f = f.f_back
    return out


class Stall:
    """The longest gap between 5 ms timer ticks on the GUI thread, its CPU time, and (optionally) its stacks."""

    def __init__(self, sample: bool = False, late_ms: float = 30.0, workers: bool = False) -> None:
        from PySide6.QtCore import QTimer

        self.timer = QTimer(interval=5)
        self.timer.timeout.connect(self._tick)
        self.last = 0.0
        self.last_cpu = 0.0
        self.last_wait = 0.0
        self.worst = 0.0
        self.worst_cpu = 0.0
        self.worst_wait = 0.0  # of the longest gap: the GUI thread runnable but waiting for a core (Linux)
        self._tid = threading.get_native_id()
        self.sample = sample
        self.late = late_ms / 1e3
        self.stacks: collections.Counter[str] = collections.Counter()
        self.workers = workers
        self.others: collections.Counter[str] = collections.Counter()
        self.inclusive: collections.Counter[str] = collections.Counter()
        self._gui = threading.get_ident()
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._names: dict[int, str] = {}

    def _core_wait(self) -> float:
        """Seconds the GUI thread has been runnable but off a core so far (schedstat; 0 elsewhere)."""
        try:
            with open(f"/proc/self/task/{self._tid}/schedstat") as f:
                return int(f.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    def _tick(self) -> None:
        now, cpu, wait = time.perf_counter(), time.thread_time(), self._core_wait()
        if now - self.last > self.worst:
            self.worst, self.worst_cpu, self.worst_wait = now - self.last, cpu - self.last_cpu, wait - self.last_wait
        self.last, self.last_cpu, self.last_wait = now, cpu, wait

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            if time.perf_counter() - self.last > self.late:
                self._take(sys._current_frames())  # (its frames die with the call: see _take)

    def _take(self, frames: dict) -> None:
        """Count one sample. No frame may outlive it: a frame kept keeps its locals alive, among them
        a Qt event that Qt then deletes, and its stale wrapper confuses PySide (see `_live`)."""
        frame = frames.pop(self._gui, None)
        if frame is not None:
            self.stacks[_where(frame)] += 1
            self.inclusive.update(_functions(frame))
        if not self.workers:
            return
        if len(self._names) != threading.active_count():
            self._names = {t.ident: t.name for t in threading.enumerate()}
        for ident, f in frames.items():  # what the other threads were doing meanwhile (holding the GIL?)
            name = self._names.get(ident, "?")
            if ident != threading.get_ident() and name.startswith(("trnx-", "TraceLoader")):
                where = _where(f)
                if "_worker" not in where and "wait" not in where.split(" < ")[0]:
                    self.others[f"{name}: {where}"] += 1

    def __enter__(self) -> Stall:
        self.last, self.last_cpu, self.worst, self.worst_cpu = time.perf_counter(), time.thread_time(), 0.0, 0.0
        self.last_wait, self.worst_wait = self._core_wait(), 0.0
        self.stacks.clear()
        self.others.clear()
        self.inclusive.clear()
        self.timer.start()
        if self.sample:
            self._stop.clear()
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.stop()
        self._tick()
        if self._sampler is not None:
            self._stop.set()
            self._sampler.join()
            self._sampler = None

    def top(self, n: int = 6) -> list[tuple[int, str]]:
        """The most often seen stacks while the heartbeat was late: (samples of 2 ms, stack)."""
        return [(k, s) for s, k in self.stacks.most_common(n)]

    def top_inclusive(self, n: int = 12) -> list[tuple[int, str]]:
        """Project functions by the samples (2 ms) they were on the GUI thread's stack while it was late."""
        return [(k, s) for s, k in self.inclusive.most_common(n)]

    def top_others(self, n: int = 4) -> list[tuple[int, str]]:
        """The other threads' most often seen stacks while the heartbeat was late."""
        return [(k, s) for s, k in self.others.most_common(n)]


def timed_app():
    """The QApplication, as a subclass that times each delivered event (see the module docstring).

    `app.slow` counts, per "Receiver(objectName) EventType", the exclusive time (ms) of
    deliveries over 5 ms while `app.recording`; call before anything creates the app.
    """
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    class TimedApp(QApplication):
        def __init__(self, argv) -> None:
            super().__init__(argv)
            self.recording = False
            self.slow: collections.Counter[str] = collections.Counter()
            self._nested = [0.0]

        def notify(self, receiver, event) -> bool:  # noqa: N802
            receiver, event = _live(receiver, QObject), _live(event, QEvent)
            if not self.recording or threading.get_ident() != _GUI[0]:
                return super().notify(receiver, event)
            self._nested.append(0.0)
            t = time.perf_counter()
            try:
                return super().notify(receiver, event)
            finally:
                took = time.perf_counter() - t
                inner = self._nested.pop()
                self._nested[-1] += took
                own = took - inner
                if own > 0.005:
                    try:
                        name = receiver.objectName()
                        parent = receiver.parent() if hasattr(receiver, "parent") else None
                        if parent is not None and (not name or name.startswith("qt_")):
                            name = f"{name} of {type(parent).__name__}({parent.objectName()})"
                        who = f"{type(receiver).__name__}({name}) {event.type().name}"
                    except (RuntimeError, AttributeError):
                        who = "(deleted)"
                    self.slow[who] += own * 1e3

    _GUI[0] = threading.get_ident()
    app = TimedApp(sys.argv[:1])
    app.setApplicationName("Trn3 Explorer")
    app.setOrganizationName("trn3-explorer")
    from explorer.ui.palette import apply_dark_theme

    apply_dark_theme(app)
    return app


_GUI = [0]


def _live(obj, cls):
    """`obj` as a valid wrapper of `cls`: an argument of a Python `notify` can arrive as a stale one.

    shiboken keeps the wrapper of a C++ object Qt has deleted (an event) for as long as Python
    still refers to it (a sampled frame, a traceback, a library keeping events) and finds it by
    address: a new object Qt makes at that address then reaches Python as that wrapper, a receiver
    typed QEvent, which `QApplication.notify` refused with a TypeError (PySide6 6.12) and the event
    was never delivered. Such a wrapper is invalidated (its C++ object is gone) and the address
    wrapped afresh."""
    if isinstance(obj, cls):
        return obj
    import shiboken6

    address = shiboken6.getCppPointer(obj)[0]
    shiboken6.invalidate(obj)
    return shiboken6.wrapInstance(address, cls)
