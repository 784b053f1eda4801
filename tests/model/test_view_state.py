"""The explorer's view state, headless: what the canvas, ruler and panels subscribe to.

Every assertion here is something a user sees in the window (what is selected and shown,
which range is on screen), checked without Qt.
"""

from __future__ import annotations

import pytest

from model.timeline_traces import DMA_ID0, write_timeline_trace
from explorer.model.timeline.selection import area_scope
from explorer.model.timeline.time_axis import nice_step, tick_label, tick_times
from explorer.model.timeline.trace_index import TraceIndex
from explorer.model.timeline.view_state import MIN_WIDTH_NS, ViewState
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return TraceIndex.build(open_trace(write_timeline_trace(tmp_path_factory.mktemp("v") / "t.trnx")))


class Recorder:
    """Every emission of the state's signals, in order."""

    def __init__(self, state: ViewState) -> None:
        self.seen: list[tuple] = []
        for name in ("index_changed", "selection_changed", "dependencies_changed", "area_changed", "area_preview", "hover_changed",
                     "colour_mode_changed", "node_changed"):
            getattr(state, name).connect(lambda *args, n=name: self.seen.append((n, *args)))
        state.viewport.changed.connect(lambda t0, t1: self.seen.append(("viewport", t0, t1)))

    def names(self) -> list[str]:
        return [s[0] for s in self.seen]


def test_showing_a_trace_fits_it_and_clears_what_was_selected(index):
    state = ViewState()
    rec = Recorder(state)
    state.set_index(index)
    assert (state.viewport.t0, state.viewport.t1) == tuple(map(float, index.span))
    assert state.colour_codes is not None and "MultiplyMoving" in state.colour_codes.names
    state.select(index.find_id(DMA_ID0))
    state.set_node("kernel:1")
    state.set_area(area_scope((0, 1), 0, 5000))
    state.set_index(index)
    assert (state.selected, state.area, state.node, state.selected_dependencies) == (None, None, None, [])
    assert rec.names().count("index_changed") == 2


def test_selecting_finds_dependencies_and_f_fits_it(index):
    state = ViewState()
    state.set_index(index)
    dma = index.find_id(DMA_ID0)
    rec = Recorder(state)
    state.select(dma)
    assert rec.seen == [("selection_changed", dma)] and state.selected_dependencies == []
    deps = state.find_dependencies(dma)
    assert [d.direction for d in deps] == ["unblocks"]
    assert state.set_dependencies(dma, deps)
    assert rec.seen[-1] == ("dependencies_changed", dma) and state.selected_dependencies == deps
    other = index.find_id(int(index.tables["instructions"].value("id", 0)))
    state.select(other)
    assert not state.set_dependencies(dma, deps)  # a stale answer for the previous selection is dropped
    assert state.selected_dependencies == [] and rec.seen[-1] == ("selection_changed", other)
    state.select(dma)
    state.fit_selection()
    s, e = index.interval(dma)
    assert state.viewport.t0 < s and e < state.viewport.t1 and state.viewport.width < 2 * (e - s)
    state.select(None)
    state.set_area(area_scope((1,), 10_000, 20_000))
    state.fit_selection()
    assert (state.viewport.t0, state.viewport.t1) == (10_000, 20_000)


def test_a_dragged_area_is_previewed_then_final(index):
    state = ViewState()
    state.set_index(index)
    rec = Recorder(state)
    drag = area_scope((0,), 100, 200)
    state.set_area(drag, final=False)
    state.set_area(area_scope((0,), 100, 900))
    assert rec.names() == ["area_preview", "area_changed"] and state.area.t1 == 900


def test_viewport_clamps_zooms_at_the_cursor_and_only_emits_changes(index):
    state = ViewState()
    state.set_index(index)
    vp = state.viewport
    rec = Recorder(state)
    vp.zoom(0.5, anchor=vp.t0)  # zoom in at the left edge: it stays put
    assert vp.t0 == pytest.approx(float(index.span[0]) - 0.0) and vp.width == pytest.approx(0.5 * (vp.hi - vp.lo))
    vp.set_range(vp.t0, vp.t1)  # no change, no signal
    vp.set_range(500, 500.5)  # narrower than the deepest zoom
    assert vp.width == MIN_WIDTH_NS
    vp.set_range(-1e12, 1e12)  # wider than the trace plus its margin
    assert vp.width == pytest.approx(1.1 * (vp.hi - vp.lo))
    assert rec.names() == ["viewport"] * 3


def test_hover_and_colour_mode_and_node(index):
    state = ViewState()
    state.set_index(index)
    rec = Recorder(state)
    state.set_hover(12.5)
    state.set_hover(12.5)  # same time: nothing
    state.set_colour_mode("kernel")
    state.set_node("")  # no node: nothing
    state.set_node("op:3")
    assert rec.seen == [("hover_changed", 12.5), ("colour_mode_changed", "kernel"), ("node_changed", "op:3")]
    assert state.colour_codes.mode == "kernel"
    with pytest.raises(ValueError):
        state.set_colour_mode("rainbow")


def test_time_axis_ticks():
    assert [nice_step(x) for x in (0.7, 3, 40, 151)] == [1, 5, 50, 200]
    ticks = tick_times(1_000, 11_000, 1100, origin=1_000)  # 10 us over 1100 px: a tick per 1 us
    assert ticks[0] == 1_000 and ticks[1] - ticks[0] == 1_000 and ticks[-1] == 11_000
    assert tick_label(1_500_000, 500_000) == "1.5 ms" and tick_label(2_000, 1_000) == "2 us"


def test_the_selection_is_the_area_else_the_visible_range_cut_to_the_trace():
    from explorer.model.scope import Scope
    from explorer.model.timeline.selection import covers_trace, selection_scope

    span = (100, 10_000)
    area = area_scope((3, 1), 500, 900)
    assert selection_scope(span, area, (0.0, 50_000.0)) is area  # rows in screen order kept
    assert selection_scope(span, None, (250.4, 800.2)) == Scope(250, 801)
    assert selection_scope(span, None, (-50.0, 99_999.0)) == Scope(100, 10_000)
    assert covers_trace(selection_scope(span, None, None), span)
    assert not covers_trace(selection_scope(span, area_scope((1,), 0, 20_000), None), span)
