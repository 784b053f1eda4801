"""A long lane's sample of its starts (taken apart the first time it is drawn) changes no pixel.

At the widest zooms the compiled loops search every 64th start first (lod.Coverage.sample),
which a frame asks for on a thread of its own; the timeline painted before the samples exist
and after must be the same picture, at the full span and zoomed in.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from simcore.trace import write_trace
from tracegen import HARDWARE, tiny_tables


def test_frames_after_the_lanes_are_sampled_are_the_same_pictures(qtbot, tmp_path, monkeypatch):
    from explorer.model.timeline import lod
    from explorer.ui import open_window

    monkeypatch.setattr(lod, "SAMPLE_MIN", 1 << 62)  # no lane is sampled at first
    path = write_trace(tmp_path / "long-lanes.trnx", tiny_tables(200_000),
                       meta={"hardware": HARDWARE, "workload": {"name": "long lanes"}})
    w = open_window(path)
    qtbot.addWidget(w)
    w.resize(1400, 700)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=30_000)
    lod.wait_for_compiled_loops()
    canvas = w.timeline.canvas
    lanes = [lane for lane in w.loaded.index.lanes.values() if lane.count >= 100_000]
    before = []
    for _ in range(3):  # the full span, then zoomed in twice around the middle
        canvas.relayout()
        before.append(canvas.grab().toImage())
        QTest.keyClick(canvas, Qt.Key_W)
    assert len(lanes) == 2 and all(lane.coverage.sample is None for lane in lanes)
    monkeypatch.undo()  # long lanes are sampled from the next frame on
    for _ in range(3):
        QTest.keyClick(canvas, Qt.Key_S)
    canvas.relayout()
    canvas.grab()
    lod.wait_for_samples()
    assert all(lane.coverage.sample is not None for lane in lanes)
    assert np.array_equal(lanes[0].coverage.sample, lanes[0].start[::64])
    for shot in before:
        canvas.relayout()
        assert canvas.grab().toImage() == shot
        QTest.keyClick(canvas, Qt.Key_W)
