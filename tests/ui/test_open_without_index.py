"""A trace with no saved index (from elsewhere, or its cache deleted) is on screen before it is
validated: its index comes from one compiled pass over its big tables, the window paints it, and
validation (which reads every column of every table: ~15 s at 100M events) runs after; only a
trace that passes is indexed on disk, and one that fails is closed with the reason."""

from __future__ import annotations

import threading

import numpy as np
from PySide6.QtWidgets import QApplication

from model.timeline_traces import HARDWARE, timeline_tables
from explorer.model.timeline import index_cache, trace_index
from explorer.model.timeline.trace_index import TraceIndex
from simcore.trace import Trace, open_trace, write_trace


def _window(qtbot, path, shown: list | None = None):
    """A window opening `path`; `shown` collects what it shows (a trace, then None when closed)."""
    from explorer.ui import open_window

    w = open_window(None)
    w.show_error_dialogs = False
    qtbot.addWidget(w)
    w.resize(1200, 700)
    if shown is not None:
        show = w.show_trace
        w.show_trace = lambda result: (shown.append(result), show(result))
    w.open_path(path)
    return w


def test_the_first_frame_comes_before_validation_and_the_index_after_it(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(trace_index, "SAVE_MIN_EVENTS", 0)  # (saved whatever its size)
    path = write_trace(tmp_path / "t.trnx", timeline_tables(), meta={"hardware": HARDWARE, "workload": {"name": "t"}})
    release, validating = threading.Event(), threading.Event()
    real = Trace.validate

    def held(self, **kwargs):  # validation waits until the test has seen the window
        validating.set()
        assert release.wait(30)
        return real(self, **kwargs)

    monkeypatch.setattr(Trace, "validate", held)
    w = _window(qtbot, path)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    shot = w.timeline.canvas.grab().toImage()  # the first frame
    assert not (path / index_cache.CACHE_FILE).exists() and not w.loaded.validated
    qtbot.waitUntil(validating.is_set, timeout=20_000)
    release.set()
    qtbot.waitUntil(lambda: (path / index_cache.CACHE_FILE).exists(), timeout=20_000)
    assert w.loaded is not None and w.loaded.validated and w.loaded.index.trace.codes_checked
    saved = index_cache.load(open_trace(path, validate=False))
    assert saved is not None and saved.info["validated"]
    built = TraceIndex.build(open_trace(path))  # what the window drew is the index building gives
    for name, events in built.tables.items():
        assert np.array_equal(w.loaded.index._cum[name], built._cum[name])
        assert np.array_equal(saved[f"{name}.cum"], built._cum[name])
    w.timeline.canvas.relayout()
    assert w.timeline.canvas.grab().toImage() == shot


def test_a_trace_that_fails_validation_once_shown_is_closed_with_the_reason(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(trace_index, "SAVE_MIN_EVENTS", 0)
    tables = timeline_tables()
    tables["instructions"]["flops"] = tables["instructions"]["flops"].copy()
    tables["instructions"]["flops"][3] = -5  # nothing the timeline reads, but no trace counts negative FLOPs
    path = write_trace(tmp_path / "t.trnx", tables, meta={"hardware": HARDWARE, "workload": {"name": "t"}})
    shown: list[object] = []
    w = _window(qtbot, path, shown)
    failures: list[str] = []
    w.load_failed.connect(failures.append)
    qtbot.waitUntil(lambda: bool(failures), timeout=20_000)
    QApplication.processEvents()
    assert "negative flops" in failures[0]
    assert shown[0] is not None and shown[1:] == [None] and w.loaded is None  # shown, then closed, as a
    # trace failing its checksums is
    assert not (path / index_cache.CACHE_FILE).exists()
