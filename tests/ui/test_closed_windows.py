"""A closed window lets go of the view states its widgets followed.

A window's `ViewState` can outlive its widgets (a pending worker result holds it, or a
script holds the window): its psygnal signals must not call into deleted widgets, which
psygnal reported as "Internal C++ object ... already deleted" on every later emit.
"""

from __future__ import annotations

import warnings

import psygnal
from PySide6.QtCore import QCoreApplication, QEvent

from explorer.model.timeline.trace_index import EventRef
from explorer.model.timeline.view_state import ViewState


def signals_of(state: ViewState) -> dict[str, psygnal.SignalInstance]:
    names = [n for n, v in vars(ViewState).items() if isinstance(v, psygnal.Signal)]
    return {**{n: getattr(state, n) for n in names}, "viewport.changed": state.viewport.changed}


def receivers(state: ViewState) -> dict[str, int]:
    return {name: len(sig) for name, sig in signals_of(state).items() if len(sig)}


def close_and_delete(qtbot, widget) -> None:
    gone = []
    widget.destroyed.connect(lambda *_: gone.append(True))
    widget.close()
    widget.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    qtbot.waitUntil(lambda: bool(gone), timeout=5000)


def drive(state: ViewState, ref: EventRef) -> None:
    """What a late worker result or a script does to a state whose window is gone: no error, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state.select(ref)
        assert state.set_dependencies(ref, [])  # the arrows' worker result arriving after the close
        state.viewport.set_range(state.viewport.t0 + 10, state.viewport.t1 + 10)
        state.set_hover(state.viewport.t0 + 5)
        state.set_area(None)
        state.set_colour_mode("kernel")
        state.set_node("kernel:0")


def test_a_closed_compare_window_leaves_no_receivers_on_its_view_states(window, trace_path, qtbot):
    panels = window.analysis
    qtbot.waitUntil(lambda: panels.session.analysis is not None, timeout=60_000)
    compare = panels.open_compare(trace_path)  # the trace against itself: the smallest real compare
    qtbot.waitUntil(lambda: compare.diff is not None, timeout=60_000)
    states = [compare.side_a.view, compare.side_b.view]
    ref = EventRef("instructions", 0)
    compare.side_a.timeline.select(ref)
    assert all(receivers(s) for s in states)  # (the widgets were following them)
    close_and_delete(qtbot, compare)
    assert [receivers(s) for s in states] == [{}, {}]
    for s in states:
        drive(s, ref)
    assert window.isVisible()


def test_a_closed_main_window_leaves_no_receivers_on_its_view_state(qtbot, trace_path):
    from explorer.ui import open_window

    w = open_window(trace_path)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    state = w.view
    assert receivers(state)["dependencies_changed"] >= 2  # the timeline's arrows and the details panel
    close_and_delete(qtbot, w)
    assert receivers(state) == {}
    drive(state, EventRef("instructions", 0))
