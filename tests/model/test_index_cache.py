"""The persisted timeline index: reopening from it gives the same index, and it is only ever a cache."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from model.timeline_traces import write_timeline_trace

from explorer.model.timeline import index_cache, trace_index
from explorer.model.timeline.trace_index import TraceIndex
from simcore.trace import open_trace

MODES = ("opcode", "kernel", "op", "layer")


@pytest.fixture
def trace_path(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_index, "SAVE_MIN_EVENTS", 0)  # the test trace is small
    return write_timeline_trace(tmp_path / "t.trnx", interleave=False)


def _saved(path) -> TraceIndex:
    built = TraceIndex.build(open_trace(path))
    built.colours("opcode")
    assert built.save(validated=True)
    return built


def _same_index(a: TraceIndex, b: TraceIndex) -> None:
    assert a.lanes.keys() == b.lanes.keys() and a.tracks == b.tracks
    edges = np.linspace(-1000, 101_000, 333)
    for tid, la in a.lanes.items():
        lb = b.lanes[tid]
        assert (la.lo, la.hi, la.disjoint) == (lb.lo, lb.hi, lb.disjoint)
        assert np.array_equal(la.start, lb.start) and np.array_equal(la.dur, lb.dur)
        assert la.coverage.total == lb.coverage.total
        for x, y in zip(la.coverage.fractions_and_last(edges), lb.coverage.fractions_and_last(edges)):
            assert np.array_equal(x, y)
    for mode in MODES:
        ca, cb = a.colours(mode), b.colours(mode)
        assert ca.names == cb.names and np.array_equal(ca.time, cb.time)
        for t in ca.codes:
            assert np.array_equal(ca.codes[t][0:len(ca.codes[t])], cb.codes[t][0:len(cb.codes[t])])


def test_reopening_maps_the_saved_index_and_skips_nothing_it_needs(trace_path):
    built = _saved(trace_path)
    assert (trace_path / index_cache.CACHE_FILE).is_file()
    reopened = TraceIndex.open(open_trace(trace_path, validate=False))
    assert reopened.saved is not None and reopened.validated
    _same_index(built, reopened)


def test_a_changed_table_makes_the_saved_index_stale(trace_path):
    _saved(trace_path)
    f = trace_path / "instructions.arrow"
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1))
    trace = open_trace(trace_path, validate=False)
    assert index_cache.load(trace) is None
    rebuilt = TraceIndex.open(trace)
    assert rebuilt.saved is None and not rebuilt.validated
    assert rebuilt.save(validated=True)  # replaced, and good again
    assert TraceIndex.open(open_trace(trace_path)).saved is not None


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "list-header"])
def test_a_damaged_saved_index_is_ignored(trace_path, damage):
    built = _saved(trace_path)
    f = trace_path / index_cache.CACHE_FILE
    data = f.read_bytes()
    f.write_bytes({"truncate": data[: len(data) // 2], "garbage": os.urandom(len(data)), "empty": b"",
                   "list-header": index_cache.MAGIC + struct.pack("<Q", 6) + b"[1, 2]"}[damage])
    reopened = TraceIndex.open(open_trace(trace_path, validate=False))
    assert reopened.saved is None
    _same_index(built, reopened)
    if damage == "list-header":   # JSON, but not the header's object: no index, never an AttributeError
        assert not index_cache.mark_validated(open_trace(trace_path, validate=False))


def test_a_directory_that_refuses_the_file_goes_without(trace_path):
    (trace_path / index_cache.CACHE_FILE).mkdir()  # what the tool did not write: left alone
    (trace_path / index_cache.CACHE_FILE / "notes.txt").write_text("mine")
    built = TraceIndex.build(open_trace(trace_path))
    assert not built.save(validated=True)
    assert (trace_path / index_cache.CACHE_FILE / "notes.txt").read_text() == "mine"
    assert not [p for p in trace_path.iterdir() if ".tmp-" in p.name]
    assert TraceIndex.open(open_trace(trace_path)).saved is None


def test_the_trace_is_still_a_valid_trace_with_the_index_beside_it(trace_path):
    _saved(trace_path)
    for args in (["validate", str(trace_path)], ["info", str(trace_path)], ["summary", str(trace_path), "--json"]):
        proc = subprocess.run([sys.executable, "-m", "explorer.cli.main", *args], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_small_traces_write_no_file(tmp_path):
    path = write_timeline_trace(tmp_path / "small.trnx")
    assert not TraceIndex.build(open_trace(path)).save(validated=True)
    assert not (path / index_cache.CACHE_FILE).exists()
