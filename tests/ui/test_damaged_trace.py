"""The window verifies a trace's checksums off the GUI thread, after the trace is on screen (a
big trace opens as fast as before); a damaged table file closes it with one sentence in an
error dialog, as `trnx` refuses it (issue 12, item 9)."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from model.timeline_traces import write_timeline_trace


def flip_a_value(file):
    """Change the first counter value's lowest mantissa bit: the file still parses, only its
    checksum can tell."""
    import struct

    import pyarrow.feather as feather

    value = feather.read_table(file, memory_map=False).column("value")[0].as_py()
    data = bytearray(file.read_bytes())
    at = data.find(struct.pack("<d", value))
    assert at > 0
    data[at] ^= 1
    file.write_bytes(bytes(data))


def test_a_damaged_table_closes_the_trace_with_one_sentence(qtbot, tmp_path, monkeypatch):
    from explorer.ui import open_window

    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda parent, title, text, *a: shown.append((title, text)))
    path = write_timeline_trace(tmp_path / "t.trnx")
    flip_a_value(path / "counters.arrow")
    w = open_window(path)
    qtbot.addWidget(w)
    opened = []
    w.trace_loaded.connect(opened.append)   # (queued from the loader: nothing is delivered before the wait)
    qtbot.waitUntil(lambda: bool(shown), timeout=30_000)
    assert len(opened) == 1, shown  # it was on screen first: the checksums do not delay the window
    assert shown == [("Damaged trace", f"{path / 'counters.arrow'} is damaged: its bytes do not match the "
                                       "checksum meta.json recorded when it was written (restore it from a copy, or "
                                       "capture again).")]
    assert w.loaded is None and w.windowTitle() == "Trn3 Explorer"


def test_an_intact_trace_stays_open_after_its_checksums_are_verified(qtbot, window, monkeypatch):
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda parent, title, text, *a: shown.append(text))
    from explorer.ui.loader import TraceLoader

    for loader in window.findChildren(TraceLoader):
        loader.wait(30_000)
    qtbot.wait(50)
    assert shown == [] and window.loaded is not None
    assert window.loaded.index.trace.verify_checksums() == 0  # every file was already hashed, off the GUI thread


def test_damage_that_breaks_the_file_says_damaged_when_opening(qtbot, tmp_path, monkeypatch):
    from explorer.ui import open_window

    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda parent, title, text, *a: shown.append((title, text)))
    path = write_timeline_trace(tmp_path / "t.trnx")
    f = path / "counters.arrow"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x10   # an array's length or offset: reading the file fails
    f.write_bytes(bytes(data))
    w = open_window(path)
    qtbot.addWidget(w)
    qtbot.waitUntil(lambda: bool(shown), timeout=30_000)
    assert shown == [("Cannot open trace", f"{f} is damaged: its bytes do not match the checksum meta.json "
                                           "recorded when it was written (restore it from a copy, or capture again).")]


def test_a_smoke_test_of_a_damaged_trace_exits_2_with_the_windows_sentence(qapp, tmp_path):
    """`trnx view --smoke-test` waits for the checks the window runs once the trace is shown (its
    checksums; validation for a trace with no saved index): a trace the window would close is exit 2
    and the window's one sentence, not 'first frame rendered' and exit 0."""
    from clirun import one_sentence, trnx

    path = write_timeline_trace(tmp_path / "t.trnx")
    flip_a_value(path / "counters.arrow")
    code, out, err = trnx("view", path, "--smoke-test")
    assert code == 2 and out == "", out
    assert one_sentence(err) == (f"trnx: error: {path / 'counters.arrow'} is damaged: its bytes do not match the "
                                 "checksum meta.json recorded when it was written (restore it from a copy, or "
                                 "capture again).")
    ok = write_timeline_trace(tmp_path / "ok.trnx")
    code, out, err = trnx("view", ok, "--smoke-test")
    assert code == 0 and "first frame rendered" in out, err


def test_the_checksums_are_verified_on_threads_that_yield_the_disk_and_the_cores(qtbot, tmp_path, monkeypatch):
    """The verification reads the whole trace while the first frames and the analyses read what
    they show: its hashing threads ask for the idle I/O class and niceness 19 (Linux), the GUI
    thread keeps its own."""
    import sys
    import threading

    import pytest

    if sys.platform != "linux":
        pytest.skip("per-thread I/O class and niceness are Linux's")
    from explorer.ui import open_window, thread_priority
    from simcore.trace import reader

    seen = []
    real = reader.file_checksum

    def hashing(*args, **kwargs):
        seen.append((threading.get_native_id(), thread_priority.io_class(), thread_priority.niceness()))
        return real(*args, **kwargs)

    monkeypatch.setattr(reader, "file_checksum", hashing)
    gui = (thread_priority.io_class(), thread_priority.niceness())
    w = open_window(write_timeline_trace(tmp_path / "t.trnx"))
    qtbot.addWidget(w)
    from explorer.ui.loader import TraceLoader

    qtbot.waitUntil(lambda: w.loaded is not None, timeout=30_000)
    for loader in w.findChildren(TraceLoader):
        loader.wait(30_000)
    assert seen and all(io == thread_priority.IOPRIO_CLASS_IDLE and nice == 19 for _, io, nice in seen), seen
    assert threading.get_native_id() not in {tid for tid, _, _ in seen}
    assert (thread_priority.io_class(), thread_priority.niceness()) == gui
