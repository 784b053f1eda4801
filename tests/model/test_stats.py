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
