"""Regions (layers, ops, collectives) and their metrics side by side, checked with SQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.model.query import query
from explorer.model.regions import compare, regions
from explorer.model.timeline.trace_index import TraceIndex
from simcore.trace import open_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


@pytest.fixture(scope="module")
def tp16():
    return TraceIndex.build(open_trace(SAMPLES / "llama3.1-70b-tp16-straggler.trnx"))


def test_layers_ops_and_collectives_are_regions(tp16):
    r = regions(tp16)
    t = tp16.trace
    n_ops = query(t, "SELECT count(*) FROM ops WHERE level IN ('layer', 'op')").column(0)[0].as_py()
    assert (r["level"] != "collective").sum() == n_ops
    n_coll, t0, t1 = query(t, "SELECT count(DISTINCT collective_id), min(arrive_ns) FILTER (WHERE collective_id = 5), "
                              "max(end_ns) FILTER (WHERE collective_id = 5) FROM collectives").to_pandas().iloc[0]
    assert (r["level"] == "collective").sum() == n_coll > 5
    c5 = r[r["region"] == "collective:5"].iloc[0]
    assert (c5["t0"], c5["t1"]) == (t0, t1)
    assert r["name"].str.contains(" / ").any() and (r["t0"].diff().dropna() >= 0).all()


def test_compare_equals_sql_over_the_same_ranges(tp16):
    r = regions(tp16)
    layers = r[r["level"] == "layer"].head(2)
    cmp = compare(tp16, r, list(layers["region"]))
    assert list(cmp.columns) == list(layers["name"])
    for (_, row), col in zip(layers.iterrows(), cmp.columns):
        n, flops = query(tp16.trace, f"SELECT count(*), sum(flops) FROM instructions WHERE start_ns >= {row.t0} "
                                     f"AND start_ns < {row.t1}").to_pandas().iloc[0]
        assert cmp.loc["instructions", col] == n and cmp.loc["flops", col] == flops
        assert cmp.loc["duration_ns", col] == row.t1 - row.t0
        assert cmp.loc["achieved_tflops", col] == pytest.approx(flops / (row.t1 - row.t0) / 1e3)
