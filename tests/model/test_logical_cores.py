"""A parallel capture's rows name their logical NeuronCore: the details of a kernel on physical
core 3 at LNC=2 say logical core 1, and a rank's CC row is its own."""

from __future__ import annotations

import numpy as np

import simcore
from explorer.model.timeline.event_details import event_details
from explorer.model.timeline.trace_index import EventRef, TraceIndex
from simcore.trace import open_trace


def test_event_details_name_the_logical_core(tmp_path):
    path = simcore.capture(out_path=tmp_path / "tp4.trnx", hardware="trn3-ultraserver-gen1", workload="llama3.1-8b",
                           tp=4, layers=1)
    trace = open_trace(path)
    index = TraceIndex.build(trace)
    k = trace.to_pandas("kernels")
    row = int(np.flatnonzero(k.core.to_numpy() == 3)[0])
    d = event_details(index, EventRef("kernels", row))
    assert dict(d.fields)["track"].endswith("chip 0, core 3 (logical core 1)")
    c = trace.to_pandas("collectives")
    tracks = trace.to_pandas("tracks").set_index("track_id")
    rank_rows = tracks.loc[c.track_id.unique()]
    assert sorted(rank_rows.lcore) == [0, 1, 2, 3] and set(rank_rows.core) == {-1}
    cc = event_details(index, EventRef("collectives", int(np.flatnonzero(c.track_id == rank_rows.index[2])[0])))
    assert dict(cc.fields)["track"] == rank_rows.name.iloc[2]
