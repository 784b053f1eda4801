"""Model additions the analysis panels use: `export_tables.area_events` (export an area
selection) and `hierarchy.COLUMN_DOCS` (the operator tree's column tooltips)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from model.timeline_traces import DMA_ID0, timeline_tables, write_timeline_trace

from explorer.model.analysis.export_tables import AREA_COLUMNS, area_events
from explorer.model.analysis.hierarchy import COLUMN_DOCS, ROW_COLUMNS
from simcore.trace import open_trace


def test_area_events_lists_every_event_on_the_rows_overlapping_the_window(tmp_path):
    trace = open_trace(write_timeline_trace(tmp_path / "t.trnx"))
    # TensorMatrix (0), qSyncIO0 (2), Kernels (3) and chip 1's CC (5) over [9.5 us, 21 us)
    got = area_events(trace, [0, 2, 3, 5], 9_500, 21_000)
    assert list(got.columns) == list(AREA_COLUMNS)
    t = timeline_tables()
    ins = t["instructions"]
    on_mm = ins["track_id"] == 0
    start, end = ins["start_ns"], ins["start_ns"] + ins["dur_ns"]
    want_ins = set(ins["id"][on_mm & (start < 21_000) & (end > 9_500)].tolist())  # 9..20
    assert set(got.loc[got["table"] == "instructions", "id"]) == want_ins == set(range(9, 21))
    assert set(got.loc[got["table"] == "dma", "id"]) == {DMA_ID0 + 1, DMA_ID0 + 2}  # [10, 11) and [20, 21) us
    assert got.loc[got["table"] == "kernels", "name"].tolist() == ["matmul_qkv"]
    cc = got[got["table"] == "collectives"]  # rank 1 of all-reduce 0: arrives 12 us, ends 25 us
    assert cc["id"].tolist() == [0] and cc["start_ns"].tolist() == [12_000] and cc["end_ns"].tolist() == [25_000]
    assert got["start_ns"].is_monotonic_increasing
    dma = got[got["table"] == "dma"].iloc[0]
    assert (dma["name"], dma["bytes"], dma["track"]) == ("DMA hbm->sbuf", 65536, "qSyncIO0")
    mm = got[(got["table"] == "instructions")].iloc[0]
    assert (mm["name"], mm["flops"], mm["kernel_id"]) == ("MultiplyMoving", 2 * 128 * 128 * 512, 0)


def test_area_events_of_an_empty_area_and_unknown_tracks(tmp_path):
    trace = open_trace(write_timeline_trace(tmp_path / "t.trnx"))
    assert area_events(trace, [1], 100_000, 200_000).empty
    assert area_events(trace, [99], 0, 100_000).empty
    assert list(area_events(trace, [], 0, 100_000).columns) == list(AREA_COLUMNS)


def test_column_docs_cover_the_operator_tables_metric_columns_and_match_the_docs():
    metric_columns = ("dur_ns", "share_percent", "flops", "model_flops", "hbm_bytes", "tflops", "gbps",
                      "arithmetic_intensity", "bound", "instruction_count")
    assert set(metric_columns) <= set(COLUMN_DOCS) <= set(ROW_COLUMNS)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    # the formulas the tooltips state are the documented ones
    for key, formula in (("tflops", "flops / dur_ns / 1e3"), ("gbps", "hbm_bytes / dur_ns"),
                         ("arithmetic_intensity", "flops / hbm_bytes")):
        assert formula in COLUMN_DOCS[key] and formula in docs
    assert np.all([doc.endswith(".") for doc in COLUMN_DOCS.values()])


def test_summarize_trace_and_chips_is_summarize_and_summarize_per_chip(tmp_path):
    from model import analysis_traces as at

    from explorer.model.analysis.summary import summarize, summarize_per_chip, summarize_trace_and_chips

    trace = open_trace(at.write(tmp_path / "basic.trnx"))  # 2 chips, a kernel-only core, throttling
    whole, per_chip = summarize_trace_and_chips(trace)
    assert whole.to_dict() == summarize(trace).to_dict()
    want = summarize_per_chip(trace)
    assert set(per_chip) == set(want) == {0, 1}
    assert all(per_chip[c].to_dict() == want[c].to_dict() for c in want)
