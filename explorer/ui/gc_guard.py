"""Run Python's cyclic garbage collector on the GUI thread only.

The collector runs on whichever thread happens to allocate when a threshold is
crossed. When that is a worker (trace loading, analyses) and the garbage holds a
Qt object, its C++ destructor runs off the GUI thread: it takes Qt's object mutex
and then waits for the GIL the GUI thread holds while it waits for that mutex.
The app deadlocks (seen here: an analysis thread's pandas groupby collected a
QMenu while the timeline painted). pyqtgraph's GarbageCollector disables
automatic collection and collects from a GUI-thread timer instead.
"""

from __future__ import annotations

from pyqtgraph.util.garbage_collector import GarbageCollector

_collector: GarbageCollector | None = None


def install(interval_s: float = 0.5) -> None:
    """Move cyclic collection to a GUI-thread timer (idempotent; needs a QApplication)."""
    global _collector
    if _collector is None:
        _collector = GarbageCollector(interval=interval_s)
