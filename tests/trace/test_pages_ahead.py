"""The writer's page-cache readahead past the written end of each big file (simcore/trace/pages_ahead.py):
the files hold exactly the bytes written, as without it, and a write that fails leaves nothing."""

from __future__ import annotations

import filecmp
import os

import numpy as np
import pytest

from simcore.trace import TraceWriter, open_trace
from simcore.trace import pages_ahead


def _write(path, batches: int = 6, rows: int = 40_000) -> None:
    with TraceWriter(path) as w:
        w.write("tracks", {"track_id": np.arange(1, dtype=np.int32), "chip": np.zeros(1, np.int32),
                           "core": np.zeros(1, np.int32), "kind": ["engine"], "name": ["PE"], "unit": [""]})
        for b in range(batches):
            start = np.arange(b * rows, (b + 1) * rows, dtype=np.int64) * 10
            w.write("instructions", {"id": start // 10, "track_id": np.zeros(rows, np.int32), "start_ns": start,
                                     "dur_ns": np.full(rows, 5, np.int64), "opcode": (np.arange(rows) % 3, ["A", "B", "C"]),
                                     "kernel_id": np.full(rows, -1, np.int64), "flops": np.zeros(rows, np.int64),
                                     "bytes": np.zeros(rows, np.int64), "dtype": "bf16"})


def test_files_read_ahead_hold_exactly_the_bytes_written(tmp_path, monkeypatch):
    monkeypatch.setattr(pages_ahead, "STEP", 1 << 20)  # a file past 1 MB is extended and read ahead
    extended = []
    real = pages_ahead.AheadFile.wrote

    def wrote(self, end):
        real(self, end)
        extended.append(self.extended)
    monkeypatch.setattr(pages_ahead.AheadFile, "wrote", wrote)
    _write(tmp_path / "ahead.trnx")
    assert max(extended) > 2 << 20  # (the file did get pages ahead of its end)
    monkeypatch.setattr(pages_ahead, "STEP", 1 << 62)
    _write(tmp_path / "plain.trnx")
    a, b = tmp_path / "ahead.trnx", tmp_path / "plain.trnx"
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    assert all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)
    assert open_trace(a).row_count("instructions") == 6 * 40_000  # (checksums verified, sizes as written)


def test_a_write_failing_past_the_readahead_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(pages_ahead, "STEP", 1 << 20)
    calls = []
    real = pages_ahead.AheadFile.wrote

    def wrote(self, end):
        real(self, end)
        calls.append(end)
        if len(calls) == 3:
            raise OSError(28, os.strerror(28))  # a full disk as the third batch is written
    monkeypatch.setattr(pages_ahead.AheadFile, "wrote", wrote)
    with pytest.raises(OSError):
        _write(tmp_path / "t.trnx")
    assert list(tmp_path.iterdir()) == []
