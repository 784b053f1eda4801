"""Operator table and summary export to CSV (atomic, readable back with pandas)."""

from __future__ import annotations


import pandas as pd
import pytest

from model import analysis_traces as at

from explorer.model.analysis.export_tables import write_csv, write_operator_table, write_summary
from explorer.model.analysis.hierarchy import ROW_COLUMNS, Hierarchy
from explorer.model.analysis.summary import summarize
from simcore.errors import UserError
from simcore.trace import open_trace


def test_operator_table_and_summary_round_trip(tmp_path):
    t = open_trace(at.write(tmp_path / "b.trnx"))
    h = Hierarchy(t)
    out = write_operator_table(h, tmp_path / "ops.csv")
    back = pd.read_csv(out)
    assert list(back.columns) == list(ROW_COLUMNS) and len(back) == 5 + 4
    assert back.set_index("node").loc["kernel:100", "flops"] == 4_100_000
    s = write_summary(summarize(t, chips=[1]), tmp_path / "s.csv")
    m = pd.read_csv(s).set_index("metric")
    assert m.loc["hardware_flops", "value"] == 4_000_000
    assert pd.isna(m.loc["tensor_engine_active_time_percent", "value"])
    assert "kernel-level" in m.loc["tensor_engine_active_time_percent", "unavailable"]
    events = write_csv(h.children("kernel:100"), tmp_path / "sel.csv")
    assert len(pd.read_csv(events)) == 11
    assert not list(tmp_path.glob(".*tmp*"))  # nothing half-written left behind


def test_unwritable_target_is_a_user_error(tmp_path):
    h = Hierarchy(open_trace(at.write(tmp_path / "b.trnx")))
    with pytest.raises(UserError, match="does not exist"):
        write_operator_table(h, tmp_path / "missing" / "ops.csv")
