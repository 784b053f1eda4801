"""Deep links: the --goto grammar, where each link points, and links made from a place."""

from __future__ import annotations

import pytest

from explorer.model import deep_link as dl
from explorer.model.timeline.trace_index import EventRef, TraceIndex
from model.timeline_traces import DMA_ID0, write_timeline_trace
from simcore.errors import UserError
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return TraceIndex.build(open_trace(write_timeline_trace(tmp_path_factory.mktemp("dl") / "t.trnx")))


@pytest.mark.parametrize("link, span, event, node", [
    ("kernel:1", (50_000, 100_000), "softmax", "kernel:1"),
    ("instruction:50", (50_000, 50_800), "Transpose", "instruction:50"),
    (f"dma:{DMA_ID0 + 3}", (30_000, 31_000), "DMA hbm\u2192sbuf", f"dma:{DMA_ID0 + 3}"),
    ("collective:1", (60_000, 72_000), "all_reduce", None),
    ("op:attention.softmax", (50_000, 100_000), None, "op:4"),
    ("op:2", (0, 50_000), None, "op:2"),
    ("t=20us:30us", (20_000, 30_000), None, None),
])
def test_links_resolve_to_their_place(index, link, span, event, node):
    t = dl.resolve(index, link)
    assert t.t0 <= span[0] and span[1] <= t.t1 and (t.t1 - t.t0) < 2 * (span[1] - span[0]) + 2000
    assert (index.event_name(t.ref) if t.ref else None) == event
    if event and node:
        assert t.node == node and dl.link_for_event(index, t.ref) == link


@pytest.mark.parametrize("link, says", [
    ("kernel:9", "no kernel with id 9"),
    ("instruction:10003", "no instruction with id 10003"),  # that id is a DMA transfer
    ("op:nope", "no op named or numbered 'nope'"),
    ("kernel:x", "takes a number"),
    ("frame:3", "is not a link"),
    ("t=soon", "is not a link"),
    ("t=2ms:1ms", "ends before it starts"),
    ("instruction:99999999999999999999999", "no instruction with id 99999999999999999999999"),  # past int64
    ("dma:99999999999999999999999", "no DMA transfer with id 99999999999999999999999"),
    ("kernel:99999999999999999999999", "no kernel with id 99999999999999999999999"),
    ("collective:18446744073709551616", "no collective with id 18446744073709551616"),
    ("t=999s", "is outside the trace, which spans 0ns..100us"),  # a mistyped unit is not the trace's end
    ("t=-5ms:-1ms", "is outside the trace"),
    ("t=1s:2s", "is outside the trace"),
])
def test_bad_links_are_one_sentence(index, link, says):
    with pytest.raises(UserError, match=says):
        dl.resolve(index, link)


def test_a_copied_range_link_always_opens(index):
    """Copy link copies the visible range, which may reach into the margin the timeline shows around
    the trace: every range the viewport can show resolves, only links beyond it are refused."""
    from explorer.model.timeline.view_state import Viewport

    vp = Viewport()
    vp.set_limits(*index.span)
    for t0, t1 in ((-1e12, -1e12 + 2000), (1e12, 1e12 + 2000), (-1e12, 1e12)):
        vp.set_range(t0, t1)  # pushed against the margins at the narrowest and widest zooms
        link = dl.link_for_range(vp.t0, vp.t1)
        assert dl.resolve(index, link).t0 <= vp.t1, link


@pytest.mark.parametrize("ns", [0, 7, 1000, 1_200_000, 1_234_567, 2_000_000_000, 999_999])
def test_times_round_trip_exactly(ns):
    text = dl.format_time(ns)
    assert dl.parse(f"t={text}").t0 == ns
    assert dl.format_time(1_200_000) == "1.2ms"


def test_range_and_summary_links_use_the_grammar(index):
    assert dl.link_for_range(1_200_000, 1_500_000) == "t=1.2ms:1.5ms"
    assert dl.link_text("kernel:100", 0, 2200) == "kernel:100"
    assert dl.link_text("", 0, 2200) == "t=0ns:2.2us"
    assert dl.resolve(index, dl.link_text("", 0, 2200)).t1 == 2200
    assert dl.link_for_event(index, EventRef("collectives", 0)).startswith("collective:")
