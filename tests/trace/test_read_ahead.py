"""The window's analyses read their columns ahead from disk (simcore.trace.read_ahead): the same
numbers as `trnx summary` whether the kernel reads ahead, refuses, fails or has no madvise."""

from __future__ import annotations

import ctypes
import errno
import json
import sys
from pathlib import Path

import pytest

import simcore
from explorer.cli.commands.summary import build_report
from explorer.model.analysis import trace_analysis
from explorer.model.analysis.trace_analysis import WINDOW_READS, TraceAnalysis
from explorer.model.scope import Scope
from explorer.model.timeline.trace_index import TraceIndex
from simcore.trace import open_trace, read_ahead
from simcore.trace import schema as S

OPTIONS = dict(workload="llama3.1-8b", phase="prefill", seq=512, layers=1, detail="instruction")


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ra") / "t.trnx"
    simcore.capture(out_path=out, **OPTIONS)
    return out


def _failing(code: int):
    def madvise(addr, length, advice):
        ctypes.set_errno(code)
        return -1
    return madvise


@pytest.mark.parametrize("madvise", ["kernel", "refused", "failing", "none"])
def test_the_window_reports_what_the_cli_reports_however_reading_ahead_goes(captured, monkeypatch, madvise):
    monkeypatch.setattr(read_ahead, "MIN_BYTES", 0)  # a small trace is read ahead too
    started: list = []
    real_start = read_ahead.start
    monkeypatch.setattr(read_ahead, "start", lambda *a, **k: started.append(real_start(*a, **k)) or started[-1])
    if madvise == "refused":  # a kernel without MADV_POPULATE_READ nor WILLNEED
        monkeypatch.setattr(read_ahead, "_madvise", _failing(errno.EINVAL))
    elif madvise == "failing":  # pages the kernel cannot read (EFAULT, EIO...)
        monkeypatch.setattr(read_ahead, "_madvise", _failing(errno.EIO))
    elif madvise == "none":  # no madvise in this C library
        monkeypatch.setattr(read_ahead, "_madvise", None)
    window = TraceAnalysis.for_window(TraceIndex.build(open_trace(captured, validate=False, checksums=False)))
    report = json.loads(json.dumps(build_report(str(captured), Scope(), True, True)))
    assert report["metrics"] == json.loads(json.dumps(window.summary.metrics))
    assert report["per_chip"] == json.loads(json.dumps({str(c): s.metrics for c, s in window.per_chip.items()}))
    assert report["recommendations"] == json.loads(json.dumps([r.to_dict() for r in window.recommendations]))
    if madvise == "none":
        assert started == [None]
    else:
        ahead = started[0]
        ahead.join(30)
        assert ahead.done.is_set()  # ended (stopped once the analyses were done, or finished)
        if madvise != "kernel":
            assert ahead.read == 0


def test_reading_ahead_brings_in_the_columns_asked_for(captured, monkeypatch):
    trace = open_trace(captured, validate=False, checksums=False)
    table = trace.table("instructions")
    ranges = read_ahead.column_ranges(table, ("start_ns", "dur_ns"))
    for name in ("start_ns", "dur_ns"):  # every buffer of the columns asked for is inside a range
        for chunk in table.column(name).chunks:
            buf = chunk.buffers()[1]
            assert any(lo <= buf.address and buf.address + buf.size <= hi for lo, hi in ranges)
    monkeypatch.setattr(read_ahead, "MIN_BYTES", 0)
    ahead = read_ahead.start(ranges, keep=table, budget=1 << 40)
    ahead.join(30)
    assert ahead.done.is_set()
    if sys.platform == "linux":  # every byte asked for was asked of the kernel
        assert ahead.how in ("populate", "willneed")
        assert ahead.read >= sum(hi - lo for lo, hi in ranges)


def test_a_budget_reads_the_first_ranges_only(monkeypatch):
    monkeypatch.setattr(read_ahead, "_madvise", None)
    assert read_ahead._first([(0, 100), (200, 300), (400, 500)], 150) == [(0, 100), (200, 250)]
    assert read_ahead.start([(0, 1 << 30)]) is None  # no madvise: nothing started, the scan reads as before


def test_the_columns_read_ahead_are_the_traces():
    """A column renamed in the schema would silently stop being read ahead: name the real ones."""
    for table, columns in WINDOW_READS.items():
        assert set(columns) <= set(S.spec(table).schema.names), table
    assert trace_analysis.WINDOW_READS is WINDOW_READS
