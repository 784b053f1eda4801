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
    key = ["kind", "bytes", "group_size"]
    median = d.groupby(key)["duration_ns"].transform("median")
    size = d.groupby(key)["duration_ns"].transform("size")
    assert (d["group_median_ns"] == median).all()
    want = d.loc[(size > 1) & (d["duration_ns"] >= 1.25 * median), "collective_id"].tolist()
    assert d.loc[d["outlier"], "collective_id"].tolist() == want and want  # the straggler makes some
    assert not d.loc[size == 1, "outlier"].any()  # a group of one has no outliers
    last = query(t, "SELECT collective_id, arg_max(chip, arrive_ns) c FROM collectives GROUP BY 1 ORDER BY 1").to_pandas()
    assert d.sort_values("collective_id")["slowest_chip"].tolist() == last["c"].tolist()
