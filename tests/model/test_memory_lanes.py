"""The memory view's lanes: one per chip, core and memory of the allocations table, in that order, each
holding exactly its rows by start (equal to a pandas grouping of the same table)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from explorer.model import memory as M
from simcore.trace import open_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def test_lanes_equal_a_pandas_grouping_of_the_allocations():
    t = open_trace(SAMPLES / "llama3.1-70b-tp16-straggler.trnx")  # two instruction-detail chips
    a = t.to_pandas("sbuf_allocations")
    a["m"] = [M.ALLOCATION_MEMORIES.index(m) for m in a["memory"].astype(str)]
    groups = a.groupby(["chip", "core", "m"], sort=True)
    data = M.load_memory(t)
    assert [(lane.chip, lane.core, M.ALLOCATION_MEMORIES.index(lane.memory)) for lane in data.lanes] == list(groups.groups)
    assert len({lane.chip for lane in data.lanes}) == 2
    for lane, (_, g) in zip(data.lanes, groups):
        rows = g.sort_values("start_ns", kind="stable").index.to_numpy()
        assert np.array_equal(lane.rows, rows)
        assert np.array_equal(lane.start, g.loc[rows, "start_ns"].to_numpy())
        assert np.array_equal(lane.end, g.loc[rows, "end_ns"].to_numpy())
