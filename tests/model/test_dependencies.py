"""Flows both ways, the binding wait chain and a kernel's critical path."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from model import analysis_traces as at

from explorer.model.analysis.dependencies import Dependencies
from simcore.errors import UserError
from simcore.trace import open_trace


@pytest.fixture(scope="module")
def deps(tmp_path_factory):
    return Dependencies(open_trace(at.write(tmp_path_factory.mktemp("d") / "basic.trnx")))


def test_predecessors_and_successors_come_from_flows(deps):
    p = deps.predecessors(2)
    assert p[["id", "node", "kind", "slack_ns"]].values.tolist() == [[20, "dma:20", "semaphore", 600]]
    assert p["track_id"].item() == at.T_Q0 and p["name"].item() == "DMA hbm->sbuf"
    s = deps.successors(3)
    assert s[["id", "kind", "slack_ns"]].values.tolist() == [[6, "data", 0]]
    assert deps.predecessors(20).empty
    flows = pd.read_feather(deps.trace.path / "flows.arrow")
    for eid in (2, 4, 6, 8, 20, 3):
        assert sorted(deps.predecessors(eid)["id"]) == sorted(flows[flows.dst_id == eid].src_id)
        assert sorted(deps.successors(eid)["id"]) == sorted(flows[flows.src_id == eid].dst_id)


def test_wait_chain_follows_the_constraint_that_finished_last(deps):
    chain = deps.wait_chain(4)
    assert chain["id"].tolist() == [20, 2, 4]
    assert chain["edge"].tolist() == ["semaphore", "data", ""]
    assert np.isnan(chain["slack_ns"].iloc[0]) and chain["slack_ns"].tolist()[1:] == [600, 0]
    # instruction 5 has no flows: it waited for the previous instruction on its engine
    assert deps.wait_chain(5)["edge"].tolist()[-2] == "engine_order"


def test_critical_path_of_a_kernel(deps):
    cp = deps.critical_path(100)
    assert cp.steps["id"].tolist() == [20, 2, 4, 5]
    assert (cp.start_ns, cp.end_ns, cp.busy_ns, cp.slack_ns) == (0, 2200, 1600, 600)
    top = cp.time_by_track.iloc[0]
    assert top["track_id"] == at.T_MATRIX and top["busy_ns"] == 1100


def test_bad_ids(deps):
    with pytest.raises(UserError, match="event 999"):
        deps.wait_chain(999)
    with pytest.raises(UserError, match="instruction detail"):
        deps.critical_path(102)
    with pytest.raises(UserError, match="kernel 555"):
        deps.critical_path(555)


def test_same_answers_when_rows_are_not_grouped_by_track_nor_sorted_by_id(tmp_path):
    tables = at.basic_tables()
    ins = tables["instructions"]
    order = [8, 2, 5, 0, 3, 6, 1, 4, 7]  # interleaves tracks; keeps each track's starts increasing
    tables["instructions"] = {c: [v[i] for i in order] for c, v in ins.items()}
    deps = Dependencies(open_trace(at.write(tmp_path / "shuffled.trnx", tables)))
    assert deps.wait_chain(4)["id"].tolist() == [20, 2, 4]
    assert deps.wait_chain(5)["edge"].tolist()[-2] == "engine_order"
    assert deps.critical_path(100).steps["id"].tolist() == [20, 2, 4, 5]
    assert deps.predecessors(2)["id"].tolist() == [20]


def test_chain_waited_ns_is_what_kept_the_event_waiting(deps):
    chain = deps.wait_chain(4)  # DMA 20 -> instruction 2 (+600 ns slack) -> instruction 4
    lead = chain.iloc[:-1]
    assert Dependencies.chain_waited_ns(chain) == int(lead["dur_ns"].sum()) + 600
    assert Dependencies.chain_waited_ns(chain.iloc[-1:]) == 0  # nothing before it


def test_same_answers_when_flows_are_not_in_destination_order(tmp_path):
    tables = at.basic_tables()
    tables["flows"] = {c: v[::-1] for c, v in tables["flows"].items()}  # the in-place search cannot be used
    shuffled = Dependencies(open_trace(at.write(tmp_path / "flows.trnx", tables)))
    assert shuffled._incoming._in_place is None
    ordered = Dependencies(open_trace(at.write(tmp_path / "ordered.trnx")))
    assert ordered._incoming._in_place is not None
    for eid in (2, 3, 4, 6, 8, 20):
        for a, b in ((shuffled.predecessors(eid), ordered.predecessors(eid)),
                     (shuffled.successors(eid), ordered.successors(eid))):
            assert a.sort_values("id").reset_index(drop=True).equals(b.sort_values("id").reset_index(drop=True))
    assert shuffled.wait_chain(4)["id"].tolist() == [20, 2, 4]


def test_wait_chain_back_is_newest_first_and_stops_at_the_first_cross_engine_wait(tmp_path):
    from model import analysis_traces as at2
    from simcore.trace import open_trace as ot

    deps = Dependencies(ot(at2.write(tmp_path / "b.trnx")))
    full = deps.wait_chain(4)  # oldest first: DMA 20 -> instruction 2 -> instruction 4
    w = deps.wait_chain_back(4)  # 4 waited on 2 (data): that is a cross-engine wait, so it stops at 2
    assert w.steps["id"].tolist() == [4, 2] and w.more and w.cause_hops == 1
    assert w.steps["edge"].tolist() == ["data", ""]
    w2 = deps.wait_chain_back(4, causes=2)
    assert w2.steps["id"].tolist() == full["id"].tolist()[::-1] == [4, 2, 20] and not w2.more
    assert w2.steps["edge"].tolist() == ["data", "semaphore", ""]
    assert w2.waited_ns == w2.steps["start_ns"].iloc[0] - w2.steps["start_ns"].iloc[-1]
    assert len(deps.wait_chain_back(4, causes=99, max_steps=1).steps) == 1
