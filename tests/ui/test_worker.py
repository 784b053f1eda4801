"""The background workers: results on the GUI thread, failures as one sentence, the kinds apart."""

from __future__ import annotations

import threading

from explorer.ui.analysis_session import run_in_background
from explorer.ui.tools.background import run_tool
from simcore.errors import UserError


def _collect(results: list):
    return lambda ok, value: results.append((ok, value, threading.current_thread() is threading.main_thread()))


def test_results_and_failures_come_back_on_the_gui_thread(qtbot, capsys):
    results: list = []
    run_tool(lambda: 42, _collect(results))
    run_tool(lambda: (_ for _ in ()).throw(UserError("no such column 'x'.")), _collect(results))
    run_tool(lambda: 1 / 0, _collect(results))
    qtbot.waitUntil(lambda: len(results) == 3, timeout=5000)
    assert results[0] == (True, 42, True)
    assert results[1] == (False, "no such column 'x'.", True)
    assert results[2] == (False, "an internal error (ZeroDivisionError) stopped the attempt to run this tool; this is a "
                                 "bug in trn3-explorer, please report it with the details printed on stderr.", True)
    assert "ZeroDivisionError" in capsys.readouterr().err  # a bug keeps its traceback for the report


def test_a_long_analysis_does_not_hold_up_a_tool(qtbot):
    release = threading.Event()
    analysis: list = []
    tool: list = []
    run_in_background(lambda: release.wait(10), _collect(analysis))
    run_tool(lambda: "query done", _collect(tool))
    try:
        qtbot.waitUntil(lambda: tool == [(True, "query done", True)], timeout=5000)
        assert analysis == []  # still running
    finally:
        release.set()
    qtbot.waitUntil(lambda: analysis == [(True, True, True)], timeout=5000)


def test_results_ready_together_let_the_window_breathe_between_them(qtbot):
    """Two slow results (30 ms each to show) that arrive together are shown in separate
    passes of the event loop: a 5 ms timer (input, a repaint) ticks between them instead of
    the window freezing for their sum."""
    import time

    from PySide6.QtCore import QTimer

    events: list[str] = []

    def slow_show(name: str):
        def show(ok, value) -> None:
            events.append(f"{name} starts")
            time.sleep(0.03)
            events.append(f"{name} ends")
        return show

    gate = threading.Event()
    a = run_tool(lambda: gate.wait(5), slow_show("a"))
    b = run_in_background(lambda: gate.wait(5), slow_show("b"))
    gate.set()
    a.result(5)
    b.result(5)  # both results are waiting for the GUI thread now
    heartbeat = QTimer(interval=5)
    heartbeat.timeout.connect(lambda: events.append("tick"))
    heartbeat.start()
    try:
        qtbot.waitUntil(lambda: "b ends" in events and "a ends" in events, timeout=5000)
    finally:
        heartbeat.stop()
    first = min(events.index("a ends"), events.index("b ends"))
    second = max(events.index("a starts"), events.index("b starts"))
    assert first < second and "tick" in events[first:second]


def test_workers_run_nicer_than_the_gui_thread(qtbot):
    """On a loaded machine the scheduler gives a core to the window's own pass before its workers'
    computations (a jump starts both at once): each worker thread runs WORKER_NICENESS nicer than
    the thread that started it (Linux; elsewhere nothing changes)."""
    from explorer.ui import thread_priority, worker
    from explorer.ui.selection_worker import run_for_selection

    gui = thread_priority.niceness()
    if gui is None:
        return  # not Linux: no per-thread niceness
    assert worker.WORKER_NICENESS > 0
    seen: list = []
    for run in (run_in_background, run_tool, run_for_selection):
        run(thread_priority.niceness, lambda ok, value: seen.append(value))
    qtbot.waitUntil(lambda: len(seen) == 3, timeout=5000)
    assert seen == [min(gui + worker.WORKER_NICENESS, 19)] * 3
