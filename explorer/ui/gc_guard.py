"""Run Python's cyclic garbage collector on the GUI thread only.

The collector runs on whichever thread happens to allocate when a threshold is
crossed. When that is a worker (trace loading, analyses) and the garbage holds a
Qt object, its C++ destructor runs off the GUI thread: it takes Qt's object mutex
and then waits for the GIL the GUI thread holds while it waits for that mutex.
The app deadlocks (seen here: an analysis thread's pandas groupby collected a
QMenu while the timeline painted). pyqtgraph's GarbageCollector disables
automatic collection and collects from a GUI-thread timer instead.

Those collections must stay short: each one blocks the GUI thread. With a 28M-event
trace and its analyses loaded, the collector tracks ~200K objects, some of them big
containers, and one full collection took 120 ms of CPU (a middle one 160 ms), every few
seconds while tools ran. Once a trace's analyses are in, `settle` freezes what is alive
(`gc.freeze`: later collections skip it); `thaw` hands it back to the collector when the
trace is replaced or closed, and the next `settle` collects once, freeing its cycles.
"""

from __future__ import annotations

import gc

from pyqtgraph.util.garbage_collector import GarbageCollector

_collector: GarbageCollector | None = None


def install(interval_s: float = 0.5) -> None:
    """Move cyclic collection to a GUI-thread timer (idempotent; needs a QApplication)."""
    global _collector
    if _collector is None:
        _collector = GarbageCollector(interval=interval_s)


def settle() -> None:
    """A trace and its analyses are loaded: keep the collector off what is alive now.

    After a `thaw` (another trace was shown before) one full collection frees the previous
    trace's cycles first; on a first open there is none to free (a 28M-event load leaves ~500
    unreachable objects), so the GUI thread is spared that collection while the panels fill.
    """
    global _thawed
    if _collector is not None:
        if _thawed:
            gc.collect()
            _thawed = False
        gc.freeze()


def thaw() -> None:
    """A trace is being replaced or closed: what was frozen may become garbage; collect it again."""
    global _thawed
    if _collector is not None and gc.get_freeze_count():
        gc.unfreeze()
        _thawed = True


_thawed = False
