"""Collective durations over time and their outliers, on the straggler sample and checked with SQL."""

from __future__ import annotations

from pathlib import Path

from explorer.model.collective_durations import collective_durations
from explorer.model.query import query
from simcore.trace import open_trace

TP16 = Path(__file__).resolve().parents[2] / "sample_traces" / "llama3.1-70b-tp16-straggler.trnx"


def test_durations_equal_sql_and_the_straggler_marks_outliers():
    t = open_trace(TP16)
    d = collective_durations(t)
    sql = query(t, "SELECT collective_id, min(arrive_ns) s, max(end_ns) - min(arrive_ns) d FROM collectives "
                   "GROUP BY 1 ORDER BY 2").to_pandas()
    assert d["collective_id"].tolist() == sql["collective_id"].tolist()
    assert d["start_ns"].tolist() == sql["s"].tolist() and d["duration_ns"].tolist() == sql["d"].tolist()
    ar = d[d["kind"] == "all_reduce"]
    assert (ar["group_median_ns"] == ar["duration_ns"].median()).all()
    assert d.loc[d["outlier"], "collective_id"].tolist() == [3, 5, 7]  # >= 1.25x the all-reduces' median
    assert set(d["slowest_chip"]) == {5}  # the straggler arrives last everywhere
    assert not d.loc[d["kind"] == "all_gather", "outlier"].any()  # a group of one has no outliers
