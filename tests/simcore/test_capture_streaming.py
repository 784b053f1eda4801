"""Captures stream their rows: flows go to the writer in full batches as kernels run, a detailed
core's instruction and DMA rows are built one track at a time from the timed programs, and the
writes run on a thread. What is written is the same, row for row and batch for batch, as the
per-kernel rows the simulator gives (`program_rows.rows_by_track`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import simcore
from simcore.capture import core_rows
from simcore.capture.config import resolve
from simcore.capture.core_rows import track_rows
from simcore.capture.engine import simulate
from simcore.capture.options import CaptureConfig
from simcore.capture.program_rows import cross_engine_flows, rows_by_track
from simcore.trace import TraceWriter, open_trace
from simcore.trace.background import BackgroundWriter

OPTIONS = dict(workload="llama3.1-8b", phase="prefill", seq=512, layers=1, cores="all")


def _batches(path) -> list[int]:
    with pa.memory_map(str(path)) as f:
        r = ipc.open_file(f)
        return [r.get_batch(i).num_rows for i in range(r.num_record_batches)]


def test_flows_are_written_in_full_batches_as_kernels_run(tmp_path, monkeypatch):
    whole = tmp_path / "whole.trnx"
    simcore.capture(out_path=whole, **OPTIONS)
    monkeypatch.setattr(core_rows, "FLOW_BATCH", 1000)
    small = tmp_path / "small.trnx"
    simcore.capture(out_path=small, **OPTIONS)
    a, b = open_trace(whole).table("flows"), open_trace(small).table("flows")
    assert a.num_rows > 5000 and a.equals(b)
    sizes = _batches(small / "flows.arrow")
    assert sizes[:-1] == [1000] * (len(sizes) - 1) and 0 < sizes[-1] <= 1000
    assert _batches(whole / "flows.arrow") == [a.num_rows]


def test_track_rows_are_the_per_kernel_rows_concatenated():
    res = resolve(CaptureConfig.from_kwargs(None, **OPTIONS))
    tables = simulate(res)
    d = tables.detail_rows
    for dma in (False, True):
        tracks = d.tracks(tables.engine_base, dma=dma)
        assert tracks
        for track, chunks in tracks.items():
            base = tables.engine_base[tables.tracks[track][1]]  # the track's core's first engine track
            want: dict[str, list[np.ndarray]] = {}
            for run, kid, first, _, _ in chunks:
                p, o = run.rows.program, run.rows.order
                start, end = np.empty(len(p), np.int64), np.empty(len(p), np.int64)
                start[o], end[o] = run.start, run.start + run.dur
                ids = first + np.arange(len(p), dtype=np.int64)
                for t, is_dma, rows in rows_by_track(p, ids, start, end, kid, base):
                    if t == track:
                        assert is_dma == dma
                        for k, v in rows.items():
                            want.setdefault(k, []).append(v)
            got = track_rows(chunks, dma)
            assert set(got) == set(want)
            for k in got:
                np.testing.assert_array_equal(got[k], np.concatenate(want[k]), err_msg=f"track {track} {k}")


def test_flows_are_the_per_kernel_flows_in_kernel_order():
    res = resolve(CaptureConfig.from_kwargs(None, **OPTIONS))
    tables = simulate(res)
    want = []
    runs = [(run, first) for core, lst in tables.detail_rows.per_core.items() for run, _, first in lst]
    runs.sort(key=lambda rf: rf[1])  # ids are handed out in the order kernels ran
    for run, first in runs:
        f = cross_engine_flows(run.rows.program, first + np.arange(len(run.rows.program), dtype=np.int64))
        if f is not None:
            want.append(f)
    fs = tables.detail_rows.flows
    got_src = np.concatenate([s for s, _ in fs.full] + [fs.src[:fs.pos]])
    got_dst = np.concatenate([d for _, d in fs.full] + [fs.dst[:fs.pos]])
    np.testing.assert_array_equal(got_src, np.concatenate([w[0] for w in want]))
    np.testing.assert_array_equal(got_dst, np.concatenate([w[1] for w in want]))


def _instructions(n: int, track: int = 0) -> dict:
    return {"track_id": np.full(n, track, np.int32), "id": np.arange(n), "start_ns": np.arange(n) * 10,
            "dur_ns": np.full(n, 5), "opcode": "Add", "kernel_id": np.zeros(n, np.int64),
            "flops": np.zeros(n, np.int64), "bytes": np.zeros(n, np.int64), "dtype": "bf16"}


def _write_some(w) -> None:
    rng = np.random.default_rng(0)
    for track in range(3):
        n = 1000 + 37 * track
        w.write("instructions", {
            "track_id": np.full(n, track, np.int32), "id": np.arange(n) + 10_000 * track,
            "start_ns": np.arange(n) * 10, "dur_ns": np.full(n, 5), "opcode": ["Add", "Mul"][track % 2],
            "kernel_id": np.zeros(n, np.int64), "flops": rng.integers(0, 100, n), "bytes": np.zeros(n, np.int64),
            "dtype": "bf16"})
    w.write("flows", {"src_id": np.arange(10), "dst_id": np.arange(10) + 1, "kind": "semaphore"})


def test_background_writer_writes_the_same_bytes(tmp_path):
    direct, queued = tmp_path / "direct.trnx", tmp_path / "queued.trnx"
    with TraceWriter(direct, {"x": 1}) as w:
        _write_some(w)
    with BackgroundWriter(TraceWriter(queued, {"x": 1}), max_bytes=1) as w:
        _write_some(w)
    for f in sorted(p.name for p in direct.iterdir()):
        assert (direct / f).read_bytes() == (queued / f).read_bytes(), f


def _full_disk(monkeypatch):
    """Writing a flows batch fails on the writer thread, as on a full disk (Arrow's error names no file)."""
    from simcore.trace import writer as trace_writer

    real = trace_writer._TableFile.write

    def write(self, batch):
        if "src_id" in batch.schema.names:
            raise OSError(28, "Error writing bytes to file. Detail: [errno 28] No space left on device")
        real(self, batch)

    monkeypatch.setattr(trace_writer._TableFile, "write", write)


def test_background_writer_raises_the_threads_error_and_leaves_nothing(tmp_path, monkeypatch):
    _full_disk(monkeypatch)
    out = tmp_path / "bad.trnx"
    bg = BackgroundWriter(TraceWriter(out, {}))
    bg.write("flows", {"src_id": np.arange(3), "dst_id": np.arange(3), "kind": "semaphore"})  # fails on the thread
    with pytest.raises(OSError, match="No space"):
        bg.drain()
    with pytest.raises(OSError):
        bg.write("flows", {"src_id": np.arange(3), "dst_id": np.arange(3), "kind": "semaphore"})
    bg.abort()
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_rows_that_do_not_fit_the_schema_raise_by_the_next_call_and_leave_nothing(tmp_path):
    """Rows are checked on the prepare thread; the error reaches the caller at its next call (here the
    `with` block's commit), and nothing is left."""
    out = tmp_path / "bad.trnx"
    with pytest.raises(TypeError, match="missing columns"):
        with BackgroundWriter(TraceWriter(out, {})) as bg:
            _write_some(bg)
            bg.write("flows", {"src_id": np.arange(3), "dst_id": np.arange(3)})  # no kind column
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_an_observer_failing_on_the_prepare_thread_stops_the_writes_and_leaves_nothing(tmp_path):
    """The observer runs on the prepare thread: its error is raised by the caller's next call, no later
    batch is written, and the aborted trace leaves nothing behind."""
    out = tmp_path / "bad.trnx"
    w = TraceWriter(out, {})
    seen: list[str] = []

    def observer(table, chip, batch):
        seen.append(table)
        if table == "instructions":
            raise ValueError("the recorder broke")

    w.observer = observer
    bg = BackgroundWriter(w, max_bytes=1)
    bg.write("tracks", {"track_id": np.arange(2, dtype=np.int32), "chip": np.zeros(2, np.int32),
                        "core": np.zeros(2, np.int32), "kind": ["pe", "act"], "name": ["PE", "ACT"],
                        "unit": ["", ""]})
    bg.write("instructions", _instructions(5))
    with pytest.raises(ValueError, match="the recorder broke"):
        bg.drain()
    with pytest.raises(ValueError, match="the recorder broke"):
        bg.write("instructions", _instructions(5))
    bg.abort()
    assert seen == ["tracks", "instructions"]
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_write_failing_on_a_thread_makes_trnx_capture_say_one_sentence_and_leave_nothing(tmp_path, monkeypatch, trnx):
    """A full disk on the writer thread in the middle of a capture: `trnx capture` exits 2 with one
    sentence naming the trace and the disk's error, and neither the trace nor its temporary is left."""
    from clirun import one_sentence_error

    _full_disk(monkeypatch)
    out = tmp_path / "full.trnx"
    sentence = one_sentence_error(trnx("capture", "-q", "-w", "llama3.1-8b", "--phase", "prefill", "--seq", "512",
                                       "--layers", "1", "--detail", "instruction", "-o", out))
    assert "No space left on device" in sentence and "full.trnx" in sentence, sentence
    assert list(tmp_path.iterdir()) == []


def test_a_with_block_whose_commit_fails_leaves_nothing(tmp_path, monkeypatch):
    """The thread's error surfaces only when the block ends (the commit): `with` still aborts, so no
    temporary and no trace are left, as when the block itself raises."""
    _full_disk(monkeypatch)
    out = tmp_path / "bad.trnx"
    with pytest.raises(OSError, match="No space"):
        with BackgroundWriter(TraceWriter(out, {})) as bg:
            _write_some(bg)  # (its flows batch fails on the thread)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_the_observer_sees_every_batch_in_the_order_written(tmp_path):
    """BackgroundWriter shows each batch to the writer's observer (on its prepare thread) in the order written."""
    seen: dict[str, list] = {"direct": [], "queued": []}
    for how in seen:
        w = TraceWriter(tmp_path / f"{how}.trnx", {"x": 1})
        w.observer = lambda table, chip, batch, how=how: seen[how].append((table, chip, batch.to_pydict()))
        with (w if how == "direct" else BackgroundWriter(w, max_bytes=1)) as bg:
            _write_some(bg)
    assert seen["direct"] and seen["direct"] == seen["queued"]


def test_columns_reuse_the_memory_of_rows_already_written_and_write_the_same_bytes(tmp_path, monkeypatch):
    """The track columns and flow batches come from memory the writer has finished with (no fresh,
    kernel-zeroed pages for each); what is written is byte for byte what fresh memory gives, even
    when the writer thread lags (small flow batches, a queue of one batch)."""
    from simcore.capture import column_pool, engine

    monkeypatch.setattr(core_rows, "FLOW_BATCH", 1000)
    made: list[column_pool.ColumnPool] = []
    real_init = column_pool.ColumnPool.__init__

    def init(self):
        real_init(self)
        made.append(self)

    real_bg = engine.BackgroundWriter
    monkeypatch.setattr(engine, "BackgroundWriter", lambda w: real_bg(w, max_bytes=1))
    monkeypatch.setattr(column_pool.ColumnPool, "__init__", init)
    pooled = simcore.capture(out_path=tmp_path / "pooled.trnx", **OPTIONS)
    assert sum(p.reused for p in made) > sum(p.allocated for p in made) > 0
    monkeypatch.setattr(column_pool, "_FREE_REFS", 0)  # never free: every block fresh memory
    fresh = simcore.capture(out_path=tmp_path / "fresh.trnx", **OPTIONS)
    names = sorted(p.name for p in pooled.iterdir())
    assert "flows.arrow" in names and names == sorted(p.name for p in fresh.iterdir())
    for f in names:
        assert (pooled / f).read_bytes() == (fresh / f).read_bytes(), f


def test_a_block_is_lent_again_only_once_nothing_refers_to_it():
    """A column still held (a batch queued for the writer keeps the arrays it wraps) keeps its block
    lent: the next columns get other memory, and filling them leaves the held rows alone; once the
    holder lets go, the block is lent again."""
    import gc

    from simcore.capture import column_pool

    pool = column_pool.ColumnPool()
    first = pool.columns(1000, {"t": np.int64, "d": np.int32})
    first["t"][:] = np.arange(1000)
    held = pa.array(first["t"][:10])  # zero-copy, as a queued batch wraps a track's column
    del first
    gc.collect()
    second = pool.columns(1000, {"t": np.int64, "d": np.int32})
    second["t"][:] = 7
    assert pool.allocated == 2 and pool.reused == 0
    assert held.to_pylist() == list(range(10))
    del held, second
    gc.collect()
    pool.columns(1000, {"t": np.int64, "d": np.int32})
    assert pool.reused == 1 and pool.allocated == 2


def test_tracks_of_a_groups_cores_share_their_common_columns_and_write_the_same_bytes(tmp_path, monkeypatch):
    """The cores of a group run one schedule: their tracks take the start, duration, opcode, ... columns
    the group's first core built, and only their ids are their own. The trace is byte for byte the one
    every track building all of its columns writes."""
    made: list[core_rows.SharedColumns] = []
    real_init = core_rows.SharedColumns.__init__

    def init(self, tracks):
        real_init(self, tracks)
        made.append(self)

    monkeypatch.setattr(core_rows.SharedColumns, "__init__", init)
    shared = simcore.capture(out_path=tmp_path / "shared.trnx", detail="instruction", **OPTIONS)
    assert len(made) == 2 and all(s.reused > 0 for s in made)  # instructions and DMA
    monkeypatch.setattr(core_rows.SharedColumns, "take", lambda self, chunks: (None, None))
    alone = simcore.capture(out_path=tmp_path / "alone.trnx", detail="instruction", **OPTIONS)
    names = sorted(p.name for p in shared.iterdir())
    assert "instructions.arrow" in names and names == sorted(p.name for p in alone.iterdir())
    for f in names:
        assert (shared / f).read_bytes() == (alone / f).read_bytes(), f
