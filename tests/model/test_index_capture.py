"""The timeline's index recorded while a trace is written: the first open maps it, and it is the
index building the trace would give (same runs, disjointness, prefix sums and colour usage)."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest
from click.testing import CliRunner

from model.timeline_traces import HARDWARE, timeline_tables

import clirun

from explorer.cli.main import cli
from explorer.model.timeline import index_cache, index_capture
from explorer.model.timeline.index_capture import IndexRecorder
from explorer.model.timeline.trace_index import TraceIndex
from explorer.ui.loader import load
from simcore.errors import TraceFormatError
from simcore.trace import Trace, TraceWriter, open_trace

MODES = ("opcode", "kernel", "op", "layer")


@pytest.fixture(autouse=True)
def small_traces_too(monkeypatch):
    monkeypatch.setattr(index_capture, "SAVE_MIN_EVENTS", 0)


def _rows(data: dict, lo: int, hi: int) -> dict:
    return {k: (v[lo:hi] if isinstance(v, (np.ndarray, list)) else v) for k, v in data.items()}


def _write(path, tables: dict, cuts: dict[str, list[int]], recorder: IndexRecorder) -> None:
    """Write `tables`, the ones in `cuts` in several batches split at those rows."""
    w = TraceWriter(path, {"hardware": HARDWARE, "workload": {"name": "tiny-llm", "kind": "model"}})
    w.observer = recorder
    with w:
        for name, data in tables.items():
            edges = [0, *cuts.get(name, []), len(next(v for v in data.values() if isinstance(v, (np.ndarray, list))))]
            for lo, hi in zip(edges, edges[1:]):
                w.write(name, _rows(data, lo, hi))


def _same(a: TraceIndex, b: TraceIndex) -> None:
    assert a.lanes.keys() == b.lanes.keys()
    edges = np.linspace(-1000, 101_000, 333)
    for tid, la in a.lanes.items():
        lb = b.lanes[tid]
        assert (la.lo, la.hi, la.disjoint) == (lb.lo, lb.hi, lb.disjoint), tid
        assert la.coverage.total == lb.coverage.total
        for x, y in zip(la.coverage.fractions_and_last(edges), lb.coverage.fractions_and_last(edges)):
            assert np.array_equal(x, y)
    for name in a.tables:
        assert np.array_equal(a._cum[name], b._cum[name]), name
    for mode in MODES:
        ca, cb = a.colours(mode), b.colours(mode)
        assert ca.names == cb.names and np.array_equal(ca.time, cb.time), mode


def _overlapping_tables() -> dict:
    t = timeline_tables()
    ins = t["instructions"]
    ins["dur_ns"] = ins["dur_ns"].copy()
    ins["dur_ns"][600:] = 150  # the Vector row's later instructions overlap (every 100 ns)
    dma = t["dma"]
    dma["src"] = ["hbm"] * 6 + ["sbuf"] * 4  # the vocabularies grow in the second batch
    dma["dst"] = ["sbuf"] * 6 + ["psum"] * 2 + ["hbm"] * 2
    return t


def test_an_index_recorded_while_writing_is_the_built_one(tmp_path):
    path = tmp_path / "t.trnx"
    rec = IndexRecorder()
    # track 0 spans two batches; a batch ends track 0 and starts track 1; an overlap spans a cut
    _write(path, _overlapping_tables(), {"instructions": [37, 100, 650, 651], "dma": [6]}, rec)
    assert rec.save(path)
    trace = open_trace(path)
    opened = TraceIndex.open(trace)
    assert opened.saved is not None and opened.validated  # validated as it was saved
    built = TraceIndex.build(trace)
    assert not built.lanes[1].disjoint and built.lanes[0].disjoint
    _same(opened, built)


def test_the_first_open_of_a_recorded_trace_maps_the_index_without_validating_again(tmp_path, monkeypatch):
    path = tmp_path / "t.trnx"
    rec = IndexRecorder()
    _write(path, _overlapping_tables(), {"instructions": [500]}, rec)
    assert rec.save(path)
    validations = []
    real = Trace.validate
    monkeypatch.setattr(Trace, "validate", lambda self: (validations.append(self.path), real(self))[1])
    loaded = load(path)  # no pass over the tables: the recorder validated them while they were in memory
    assert validations == [] and loaded.index.saved is not None and loaded.index.validated
    _same(loaded.index, TraceIndex.build(open_trace(path, validate=False)))
    assert not loaded.index.save(validated=True)  # nothing left to do


def test_a_recorded_trace_that_does_not_validate_is_refused_on_its_first_open(tmp_path):
    path = tmp_path / "t.trnx"
    rec = IndexRecorder()
    tables = _overlapping_tables()
    tables["instructions"]["flops"] = tables["instructions"]["flops"].copy()
    tables["instructions"]["flops"][3] = -5  # nothing the index reads, but no trace counts negative FLOPs
    _write(path, tables, {"instructions": [500]}, rec)
    assert rec.save(path)
    assert index_cache.load(open_trace(path, validate=False)).info["validated"] is False
    with pytest.raises(TraceFormatError, match="negative flops"):
        load(path)


def test_a_table_the_recorder_does_not_understand_leaves_the_index_to_the_first_open(tmp_path):
    path = tmp_path / "t.trnx"
    rec = IndexRecorder()
    _write(path, timeline_tables(interleave=True), {}, rec)  # rows ordered by time across tracks
    assert rec.gave_up is not None and not rec.save(path)
    assert not (path / index_cache.CACHE_FILE).exists()
    _same(TraceIndex.open(open_trace(path)), TraceIndex.build(open_trace(path)))


def test_trnx_capture_leaves_the_index_beside_the_trace(tmp_path):
    out = tmp_path / "cap.trnx"
    res = CliRunner().invoke(cli, ["capture", "-w", "llama3.1-8b", "--phase", "prefill", "--seq", "512", "--layers", "1",
                                   "--cores", "0,3", "-o", str(out)])
    assert res.exit_code == 0, res.output
    trace = open_trace(out)
    saved = index_cache.load(trace)
    assert saved is not None and saved.info["validated"] is True
    _same(TraceIndex.open(trace), TraceIndex.build(trace))


def test_a_validated_index_spares_rereading_the_codes_until_a_file_changes(tmp_path):
    import pyarrow as pa
    import pyarrow.ipc as ipc

    path = tmp_path / "t.trnx"
    rec = IndexRecorder()
    _write(path, _overlapping_tables(), {"instructions": [500]}, rec)
    assert rec.save(path)
    assert load(path).index.trace.codes_checked  # these very files passed validation
    f = path / "instructions.arrow"
    table = ipc.open_file(pa.memory_map(str(f))).read_all().combine_chunks()
    op = table.column("opcode").chunk(0)
    bad = pa.DictionaryArray.from_arrays(pa.array([len(op.dictionary) + 7] * len(op), pa.int32()), op.dictionary, safe=False)
    table = table.set_column(table.schema.get_field_index("opcode"), table.schema.field("opcode"), bad)
    with pa.OSFile(str(f), "wb") as sink, ipc.new_file(sink, table.schema) as w:  # the file is replaced
        w.write_table(table)
    with pytest.raises(TraceFormatError, match="instructions.arrow (is damaged|cannot be read: dictionary code out of range)"):
        load(path)  # the stamp no longer matches: validated again, and refused



def test_saving_a_recorded_index_never_maps_the_big_tables_together(tmp_path, monkeypatch):
    """A capture validates its trace at save under the process's address-space limit: the big
    tables, whose rows were checked as written (flows too), are each mapped alone for their schema
    and let go, and the vocabularies come from the batches written, not from mapping the files."""
    import simcore.trace.reader as reader

    path = tmp_path / "t.trnx"
    rec = IndexRecorder()
    _write(path, _overlapping_tables(), {"instructions": [500], "dma": [6]}, rec)
    assert rec.checked_rows["flows"] == open_trace(path, validate=False).row_count("flows") > 0
    big = {"instructions", "dma", "flows"}
    together = []
    real = reader._read_file

    def read(file, *args, **kwargs):
        table = real(file, *args, **kwargs)
        live = {f.stem for t in Trace._live for f, v in t._files.items()} | {file.stem}
        together.append(live & big)
        return table

    monkeypatch.setattr(reader, "_read_file", read)
    monkeypatch.setattr(Trace, "_live", [], raising=False)
    real_init = Trace.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        Trace._live.append(self)

    monkeypatch.setattr(Trace, "__init__", init)
    assert rec.save(path)
    assert index_cache.load(open_trace(path, validate=False)).info["validated"] is True
    assert together and max(len(s) for s in together) == 1, together


def test_a_trace_without_an_index_is_scanned_to_the_built_one(tmp_path, monkeypatch):
    """The recorder's pass over the batches read back (a trace from elsewhere, or its cache deleted)."""
    from explorer.model.timeline import trace_index

    monkeypatch.setattr(trace_index, "SAVE_MIN_EVENTS", 0)
    path = tmp_path / "t.trnx"
    _write(path, _overlapping_tables(), {"instructions": [37, 100, 650, 651], "dma": [6]}, IndexRecorder())
    assert not (path / index_cache.CACHE_FILE).exists()
    trace = open_trace(path, validate=False)
    scanned = index_capture.scan(trace)
    assert scanned is not None and not scanned.persisted and not scanned.info["validated"]
    index = TraceIndex.build(trace, saved=scanned)
    _same(index, TraceIndex.build(open_trace(path)))
    assert index.save(validated=True)  # written, as an index built from the tables is
    assert index_cache.load(open_trace(path, validate=False)).info["validated"]
    _same(TraceIndex.open(open_trace(path)), TraceIndex.build(open_trace(path)))


def test_the_scan_leaves_a_trace_it_does_not_understand_to_the_build(tmp_path):
    path = tmp_path / "t.trnx"
    _write(path, timeline_tables(interleave=True), {}, IndexRecorder())  # rows ordered by time across tracks
    assert index_capture.scan(open_trace(path, validate=False)) is None


@pytest.mark.parametrize("cuts", [[550], [600], [300, 650, 651, 900], [100, 200, 560, 1000], [549, 551]])
def test_the_scan_split_over_two_threads_finds_the_one_pass_index(tmp_path, monkeypatch, cuts):
    """The halves of a table passed on two threads (where the second half starts inside a run, at
    a track's first row, inside the overlapping row, one row past the middle) give the index one
    pass in order gives: runs, disjointness, prefix sums, colour usage."""
    from explorer.model.timeline import trace_index

    monkeypatch.setattr(trace_index, "SAVE_MIN_EVENTS", 0)
    monkeypatch.setattr(index_capture, "SPLIT_MIN_ROWS", 0)
    split = []
    real = index_capture._on_two_threads
    monkeypatch.setattr(index_capture, "_on_two_threads", lambda a, b: (split.append(1), real(a, b))[1])
    path = tmp_path / "t.trnx"
    _write(path, _overlapping_tables(), {"instructions": cuts, "dma": [6]}, IndexRecorder())
    trace = open_trace(path, validate=False)
    scanned = index_capture.scan(trace)
    assert split and scanned is not None
    _same(TraceIndex.build(trace, saved=scanned), TraceIndex.build(open_trace(path)))


def test_a_negative_duration_in_the_second_half_still_leaves_the_trace_to_the_build(tmp_path, monkeypatch):
    monkeypatch.setattr(index_capture, "SPLIT_MIN_ROWS", 0)
    t = _overlapping_tables()
    t["instructions"]["dur_ns"][1000] = -5
    path = tmp_path / "t.trnx"
    _write(path, t, {"instructions": [300, 700]}, IndexRecorder())
    assert index_capture.scan(open_trace(path, validate=False)) is None


def test_the_scan_fills_the_prefix_sums_reserved_while_numba_loaded(tmp_path, monkeypatch):
    """`scan_ahead.reserve` reads the scan's tables and hands it its arrays with their pages given
    (Linux 5.14+); the scan fills them, and the index is the one building finds; a meta.json row
    count that does not match the table gets a fresh array instead."""
    from explorer.model.timeline import scan_ahead, trace_index

    monkeypatch.setattr(trace_index, "SAVE_MIN_EVENTS", 0)
    monkeypatch.setattr(scan_ahead, "MIN_BYTES", 0)
    path = tmp_path / "t.trnx"
    _write(path, _overlapping_tables(), {"instructions": [37, 650]}, IndexRecorder())
    trace = open_trace(path, validate=False)
    reserved = scan_ahead.reserve(trace)
    assert reserved is not None
    given = reserved.arrays["instructions"]
    scanned = index_capture.scan(trace, reserved)
    assert scanned["instructions.cum"] is given
    _same(TraceIndex.build(trace, saved=scanned), TraceIndex.build(open_trace(path)))
    assert scan_ahead.Reserved(trace, {"dma": 5}).take("dma", 11).shape == (11,)
    big = np.empty(1 << 20, np.int64)
    assert scan_ahead.populate(big) == (scan_ahead._madvise is not None and _linux_at_least(5, 14))


def _linux_at_least(major: int, minor: int) -> bool:
    import platform

    if platform.system() != "Linux":
        return False
    parts = platform.release().split(".")
    return (int(parts[0]), int(parts[1].split("-")[0])) >= (major, minor)


def _write_attached(path, order: list[tuple[str, int, int]], tables: dict) -> IndexRecorder:
    """Write `tables` as a capture does, the recorder given the writer (its prefix sums go into the
    trace's file as they are computed), batches in `order`: (table, first row, end row)."""
    rec = IndexRecorder()
    w = TraceWriter(path, {"hardware": HARDWARE, "workload": {"name": "tiny-llm", "kind": "model"}})
    w.observer = rec
    rec.writing_to(w)
    with w:
        for name, data in tables.items():
            if not any(name == o[0] for o in order):
                w.write(name, data)
        for name, lo, hi in order:
            w.write(name, _rows(tables[name], lo, hi))
    return rec


@pytest.mark.parametrize("order", [
    [("instructions", 0, 37), ("instructions", 37, 1000), ("dma", 0, 6), ("dma", 6, 10)],
    # rows of a table after another's: its sums written so far are read back and go on in memory
    [("instructions", 0, 500), ("dma", 0, 6), ("instructions", 500, 1000), ("dma", 6, 10)],
])
def test_an_index_written_into_the_trace_as_it_is_written_is_the_built_one(tmp_path, order):
    path = tmp_path / "t.trnx"
    n = len(timeline_tables()["instructions"]["dur_ns"])
    order = [(t, lo, min(hi, n)) for t, lo, hi in order]
    rec = _write_attached(path, order, _overlapping_tables())
    assert rec.saved is True and rec.save(path)  # saved by the writer's close, before the trace appeared
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trnx"]
    trace = open_trace(path)
    opened = TraceIndex.open(trace)
    assert opened.saved is not None and opened.validated
    _same(opened, TraceIndex.build(trace))


def test_an_index_header_too_big_for_its_room_is_written_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(index_cache, "HEADER_ROOM", 64)
    path = tmp_path / "t.trnx"
    rec = _write_attached(path, [("instructions", 0, 500), ("instructions", 500, 1000)], _overlapping_tables())
    assert rec.saved is True
    assert sorted(p.name for p in path.iterdir() if p.name.startswith(".")) == []
    _same(TraceIndex.open(open_trace(path)), TraceIndex.build(open_trace(path)))


def test_the_trace_appears_with_its_index(tmp_path, monkeypatch):
    """A capture's index is complete inside the trace's temporary directory before the trace is moved
    into place: no moment where the trace is there and its index is not (or half-written)."""
    from simcore.trace import writer

    seen = []
    real = writer.TraceWriter._move_into_place

    def move(self):
        seen.append(index_cache.load(open_trace(self._tmp, validate=False)))
        real(self)
    monkeypatch.setattr(writer.TraceWriter, "_move_into_place", move)
    out = tmp_path / "cap.trnx"
    res = CliRunner().invoke(cli, ["capture", "-w", "llama3.1-8b", "--phase", "prefill", "--seq", "512", "--layers", "1",
                                   "--cores", "0,3", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert len(seen) == 1 and seen[0] is not None and seen[0].info["validated"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.trnx"]
    _same(TraceIndex.open(open_trace(out)), TraceIndex.build(open_trace(out)))


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach only the main thread")
def test_sigterm_while_the_index_is_finished_leaves_nothing(tmp_path, monkeypatch):
    """The index's last bytes are written as the trace is closed: a SIGTERM then removes the trace,
    index and all (exit 143, one sentence), as at any other moment of the capture."""
    real = index_capture._index_small_tables

    def small(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*args)
    monkeypatch.setattr(index_capture, "_index_small_tables", small)
    code, _, err = clirun.trnx("capture", "-w", "llama3.1-8b", "--phase", "prefill", "--seq", "512", "--layers", "1",
                               "--cores", "0,3", "-q", "-o", tmp_path / "cap.trnx")
    assert code == 143, err
    assert err.strip() == "trnx: terminated (SIGTERM); nothing half-written was left behind."
    assert list(tmp_path.iterdir()) == []
