"""Duration statistics and histograms (Tracy's find-zone) against pandas on the same tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from explorer.model.query import TraceQuery
from explorer.model.stats import Window, duration_histogram, duration_query, duration_stats
from explorer.model.timeline.field_search import field_search
from explorer.model.timeline.trace_index import TraceIndex
from simcore.trace import open_trace

DECODE = Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-8b-decode.trnx"


@pytest.fixture(scope="module")
def q():
    return TraceQuery(open_trace(DECODE))


def test_kernel_stats_equal_pandas(q):
    got = duration_stats(q, "kernel").set_index("name")
    k = q.trace.to_pandas("kernels").astype({"name": str})
    g = k.groupby("name")["dur_ns"]
    assert list(got.index) == list(g.sum().sort_values(ascending=False, kind="stable").index)
    assert (got["count"] == g.count()[got.index]).all() and (got["total_ns"] == g.sum()[got.index]).all()
    assert np.allclose(got["mean_ns"], g.mean()[got.index])
    assert np.allclose(got["p50_ns"], g.quantile(0.5)[got.index]) and np.allclose(got["p95_ns"], g.quantile(0.95)[got.index])
    assert (got["max_ns"] == g.max()[got.index]).all()
    slow = got.loc["flash_decode"]
    row = k[k["kernel_id"] == slow["slowest_id"]].iloc[0]
    assert row["name"] == "flash_decode" and row["dur_ns"] == slow["max_ns"]


def test_opcode_stats_over_a_window_and_tracks_equal_pandas(q):
    i = q.trace.to_pandas("instructions").astype({"opcode": str})
    tracks = tuple(sorted(i["track_id"].unique()[:3].tolist()))
    w = Window(100_000, 400_000, tracks)
    got = duration_stats(q, "opcode", w).set_index("name")
    sel = i[(i["start_ns"] >= 100_000) & (i["start_ns"] < 400_000) & i["track_id"].isin(tracks)]
    want = sel.groupby("opcode")["dur_ns"].agg(["count", "sum", "max"])
    assert not any(n.startswith("DMA") for n in got.index)  # DMA queues are not among those tracks
    assert sorted(got.index) == sorted(want.index)
    assert (got["count"] == want["count"][got.index]).all() and (got["total_ns"] == want["sum"][got.index]).all()
    assert (got["max_ns"] == want["max"][got.index]).all()


def test_histogram_counts_every_event_once_and_its_range_selects_them(q):
    h = duration_histogram(q, "opcode", "MultiplyMoving")
    d = q.trace.to_pandas("instructions").query("opcode == 'MultiplyMoving'")["dur_ns"].to_numpy()
    assert h.total == len(d)
    assert (np.histogram(d, bins=h.edges)[0] == h.counts).all()
    i = int(np.argmax(h.counts))  # the tallest bin, as a user would drag over it
    lo, hi = h.edges[i], h.edges[i + 1]
    text = duration_query("opcode", "MultiplyMoving", lo, hi)
    hits = field_search(TraceIndex.build(q.trace), text)
    assert hits.count == int(((d >= np.floor(lo)) & (d <= np.ceil(hi))).sum()) >= h.counts[i]



def _selected(q, grouping, name, window, lo, hi):
    """The events the histogram's range [lo, hi] selects, by table, from the field search."""
    text = duration_query(grouping, name, lo, hi, window, q.trace.span_ns[0])
    hits = field_search(TraceIndex.build(q.trace), text)
    by_table: dict[str, int] = {}
    for lane, h in zip(hits.lanes, hits.hits):
        by_table[lane.events.name] = by_table.get(lane.events.name, 0) + len(h)
    return {t: n for t, n in by_table.items() if n}


def test_an_op_histograms_range_selects_the_kernels_of_those_ops(q):
    """Per op the histogram counts ops (op-level durations); its range selects their kernels
    (an op has no row of its own), not instructions of an op's length (which selected none)."""
    ops = q.trace.to_pandas("ops").astype({"name": str, "level": str})
    ops = ops[(ops["level"] == "op") & (ops["name"] == "attention.core")]
    kernels = q.trace.to_pandas("kernels")
    for window in (Window(), Window(1_000_000, 3_000_000, (0, 1))):  # the area's rows do not apply to ops
        h = duration_histogram(q, "op", "attention.core", window)
        mine = ops if window.t0 is None else ops[(ops["start_ns"] >= window.t0) & (ops["start_ns"] < window.t1)]
        assert h.total == len(mine) > 0
        i = int(np.argmax(h.counts))
        lo, hi = h.edges[i], h.edges[i + 1]
        chosen = mine[(mine["dur_ns"] >= np.floor(lo)) & (mine["dur_ns"] <= np.ceil(hi))]
        assert len(chosen) >= h.counts[i] > 0
        want = int(kernels["op_id"].isin(chosen["op_id"]).sum())
        assert _selected(q, "op", "attention.core", window, lo, hi) == {"kernels": want} and want >= len(chosen)


def test_a_histogram_of_the_selected_area_selects_in_that_area(q):
    """The area's histogram counts events starting in its window on its rows; its range selects
    those, not the name's events over the whole trace."""
    i = q.trace.to_pandas("instructions").astype({"opcode": str})
    mm = i[i["opcode"] == "MultiplyMoving"]
    tracks = tuple(sorted(mm["track_id"].unique()[:2].tolist()))
    window = Window(100_000, 400_000, tracks)
    h = duration_histogram(q, "opcode", "MultiplyMoving", window)
    lo, hi = h.edges[0], h.edges[-1]
    assert 0 < h.total < len(mm)
    assert _selected(q, "opcode", "MultiplyMoving", window, lo, hi) == {"instructions": h.total}
    assert _selected(q, "opcode", "MultiplyMoving", Window(), lo, hi)["instructions"] > h.total
    k = q.trace.to_pandas("kernels").astype({"name": str})
    name = k["name"].value_counts().index[0]
    window = Window(1_000_000, 2_000_000, tuple(sorted(k["track_id"].unique()[:1].tolist())))
    h = duration_histogram(q, "kernel", name, window)
    assert 0 < h.total < (k["name"] == name).sum()
    assert _selected(q, "kernel", name, window, h.edges[0], h.edges[-1]) == {"kernels": h.total}

def test_quantiles_of_durations_past_32_bits_are_exact(tmp_path):
    """Durations that fit 32 bits are read as such (less memory, the same values); one that does
    not keeps the 64-bit values, with quantiles pandas agrees with."""
    from model.timeline_traces import HARDWARE, timeline_tables

    from simcore.trace import TraceWriter

    results = {}
    for long in (False, True):
        t = timeline_tables()
        k = t["kernels"]
        k["dur_ns"] = k["dur_ns"].copy()
        if long:
            k["dur_ns"][-1] = 3 * 2**31 + 7  # a kernel of 6.4 s
        path = tmp_path / f"long{long}.trnx"
        with TraceWriter(path, {"hardware": HARDWARE, "workload": {"name": "tiny-llm", "kind": "model"}}) as w:
            for name, data in t.items():
                w.write(name, data)
        q = TraceQuery(open_trace(path))
        got = duration_stats(q, "kernel").set_index("name")
        g = q.trace.to_pandas("kernels").astype({"name": str}).groupby("name")["dur_ns"]
        assert (got["p50_ns"] == g.quantile(0.5)[got.index]).all() and (got["p95_ns"] == g.quantile(0.95)[got.index]).all()
        assert (got["max_ns"] == g.max()[got.index]).all()
        results[long] = got
    assert results[True]["max_ns"].max() == 3 * 2**31 + 7
