"""The Memory view through the real window: lanes that follow the timeline, the owner on hover, a click
that selects the kernel; and what it says for traces without allocation data."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

import simcore
from explorer.model import memory as M
from explorer.ui import palette as P
from simcore.trace import open_trace
from ui import pointer


@pytest.fixture(scope="module")
def decode(tmp_path_factory):
    out = tmp_path_factory.mktemp("mem") / "decode.trnx"
    return simcore.capture(workload="llama3.1-8b", phase="decode", batch=8, context=4096, layers=1, cores="0",
                           out_path=out)


def open_memory(qtbot, path):
    from explorer.ui import open_window

    w = open_window(path)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.activateWindow()  # as a user's window is (pointer moves reach the active window)
    qtbot.waitActive(w)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=30_000)
    qtbot.waitUntil(lambda: w.analysis.session.analysis is not None, timeout=30_000)  # (it raises its own panels)
    w.panels["Memory"].raise_()
    mem = w.findChild(QWidget, "memory-view")
    qtbot.waitUntil(lambda: mem.data is not None, timeout=20_000)
    return w, mem


def hover_until(qtbot, mem, row: int, wanted: str) -> str:
    """Point at an allocation as a user does (tests/ui/pointer.py) until its tooltip says `wanted`."""
    text = pointer.hover_until(qtbot, mem.canvas, lambda: mem.point_of(row), wanted)
    assert wanted in mem.canvas.tip  # what the canvas answers for that point is what the tooltip shows
    return text


def test_model_raster_is_the_bytes_each_partition_holds(decode):
    """One pixel per partition over 1 ns: the fill is exactly the bytes held there over the partition's size."""
    t = open_trace(decode)
    data = M.load_memory(t)
    a = t.to_pandas("sbuf_allocations")
    a = a[(a.memory == "sbuf") & (a.core == 0)]
    lane = next(lane for lane in data.lanes if lane.memory == "sbuf" and lane.core == 0)
    when = int(a[a.kind == "kv_cache"].start_ns.iloc[0]) + 1
    r = M.raster(data, lane, when, when + 1, "partitions", 1, 128)
    live = a[(a.start_ns <= when) & (a.end_ns > when + 1)]
    per_partition = np.zeros(128)
    for row in live.itertuples():
        per_partition[row.partition_start:row.partition_start + row.partitions] += -(-row.bytes // row.partitions)
    capacity = t.hardware["sbuf"]["bytes_per_core"] / 128
    assert np.allclose(r.fill[:, 0], per_partition / capacity)
    top = live.groupby("kind", observed=True).bytes.sum().idxmax()  # full-width buffers: the most bytes wins
    assert M.ALLOCATION_KINDS[int(r.kind[0, 0]) - 1] == top
    assert M.held_at(data, lane, when)[0] == live.bytes.sum()


def test_the_status_line_numbers_come_from_the_model_and_equal_pandas(decode):
    """The count, the busiest core and its share of SBUF the view states are `memory.overview`'s, and
    equal a sweep over the table's rows (most bytes live at once, ends before starts at one instant)."""
    t = open_trace(decode)
    a = t.to_pandas("sbuf_allocations")
    a = a[a.memory == "sbuf"]
    o = M.overview(M.load_memory(t), "sbuf")
    assert (o.allocations, o.cores) == (len(a), a.groupby(["chip", "core"]).ngroups)
    ev = pd.concat([pd.DataFrame({"t": a.end_ns, "d": -a.bytes}), pd.DataFrame({"t": a.start_ns, "d": a.bytes})])
    held = ev.sort_values(["t", "d"], kind="stable").d.cumsum().max()
    capacity = t.hardware["sbuf"]["bytes_per_core"]
    assert o.busiest.peak_bytes == held and o.capacity_bytes == capacity
    assert o.peak_percent == pytest.approx(100 * held / capacity)


def test_lanes_follow_the_timeline_hover_names_the_owner_click_selects_the_kernel(qtbot, decode):
    w, mem = open_memory(qtbot, decode)
    assert mem.data.reason is None and [lane.label for lane in mem.lanes()] == ["chip 0 core 0 SBUF"]
    assert "SBUF allocations on 1 core" in mem.status.text()
    t = w.view.index.trace
    a = t.to_pandas("sbuf_allocations")
    k = t.to_pandas("kernels").set_index("kernel_id")
    row = int(np.flatnonzero((a.kind == "kv_cache").to_numpy() & a.tensor.str.startswith("V").to_numpy())[0])
    kid = int(a.kernel_id.iloc[row])
    s, e = int(k.loc[kid, "start_ns"]), int(k.loc[kid, "start_ns"] + k.loc[kid, "dur_ns"])
    w.zoom_to(s - (e - s) * 0.1, e + (e - s) * 0.1)
    vp = w.view.viewport
    qtbot.waitUntil(lambda: mem.drawn is not None and mem.drawn[:2] == (vp.t0, vp.t1), timeout=20_000)
    pos = mem.point_of(row)
    image = mem.canvas.grab().toImage()
    assert QColor(image.pixel(pos)) != P.ROW_ALT  # drawn: the lane's empty colour blended towards the kind's
    tip = hover_until(qtbot, mem, row, "kv cache")
    assert a.tensor.iloc[row] in tip and f"flash_decode (kernel {kid})" in tip and "of SBUF: partitions 0-127" in tip
    w.view.select(None)
    QTest.mouseClick(mem.canvas, Qt.LeftButton, pos=pos)
    ref = w.view.selected
    assert ref is not None and ref.table == "kernels"
    assert int(w.view.index.tables["kernels"].value("kernel_id", ref.row)) == kid
    # the address view and PSUM: the same buffer at its address; PSUM lanes of the same core
    mem.axis.setCurrentText("Address")
    qtbot.waitUntil(lambda: mem.drawn is not None and mem.drawn[2] == "address", timeout=20_000)
    hover_until(qtbot, mem, row, f"at byte {int(a.address.iloc[row]):,}")
    # a theme switch redraws the lanes in the new theme's colours (their empty pixels are its row colour)
    w.extras.set_theme("light", save=False)

    def corner() -> QColor:  # the window's end at the top address: never allocated in this decode step
        img = mem.canvas.images[0]
        return QColor(img.pixel(img.width() - 1, img.height() - 1))

    qtbot.waitUntil(lambda: corner() == P.ROW_ALT, timeout=20_000)
    w.extras.set_theme("dark", save=False)
    mem.memories.setCurrentText("PSUM")
    qtbot.waitUntil(lambda: mem.drawn is not None and mem.drawn[3] == "psum", timeout=20_000)
    assert [lane.label for lane in mem.lanes()] == ["chip 0 core 0 PSUM"] and "PSUM allocations" in mem.status.text()


def test_a_trace_before_1_4_says_why_there_is_nothing(qtbot, decode, tmp_path):
    old = tmp_path / "old.trnx"
    shutil.copytree(decode, old)
    meta = json.loads((old / "meta.json").read_text())
    del meta["tables"]["sbuf_allocations"]
    meta["version"] = "1.2"
    for v in meta["tables"].values():
        v.pop("checksum", None)
    (old / "sbuf_allocations.arrow").unlink()
    (old / "meta.json").write_text(json.dumps(meta))
    w, mem = open_memory(qtbot, old)
    assert "written in trace format 1.2, before 1.4 added the sbuf_allocations table" in mem.status.text()
    assert mem.lanes() == []


def test_kernel_detail_trace_has_no_instruction_detail_cores(qtbot, tmp_path):
    path = simcore.capture(workload="llama3.1-8b", phase="decode", batch=8, layers=1, detail="kernel",
                           out_path=tmp_path / "k.trnx")
    w, mem = open_memory(qtbot, path)
    assert "no instruction-detail cores" in mem.status.text()


def lowest_drawn_row(mem) -> int:
    """The lowest pixel row of the canvas's visible part that is not the panel's background (a lane's
    frame, its empty colour or its allocations), looked for down the middle of the plot."""
    img = mem.canvas.grab().toImage()
    x = img.width() // 2
    for y in range(min(img.height(), mem.scroll.viewport().height()) - 1, -1, -1):
        if QColor(img.pixel(x, y)) != P.BACKGROUND:
            return y
    return -1


def test_the_lanes_fill_the_panel_height_and_follow_its_resizing(qtbot, decode):
    """The drawing uses the Memory panel's whole height, not a fixed-height strip with empty space under
    it, and after the user drags the panel taller or shorter the lane is redrawn to the new height."""
    w, mem = open_memory(qtbot, decode)
    dock = w.panels["Memory"]
    heights = []
    for height in (560, 280):
        before = mem.scroll.viewport().height()
        w.resizeDocks([dock], [height], Qt.Vertical)
        qtbot.waitUntil(lambda: mem.scroll.viewport().height() != before, timeout=5_000)
        qtbot.waitUntil(lambda: mem.drawn is not None and mem.drawn[5] == mem.canvas.lane_height()
                        and mem.canvas.images and mem.canvas.images[0].height() == mem.drawn[5], timeout=20_000)
        vh = mem.scroll.viewport().height()
        assert mem.canvas.lane_rect(0).height() > 0.8 * vh  # one lane: most of the panel is the plot
        assert lowest_drawn_row(mem) >= vh - 4  # drawn down to the panel's bottom edge
        assert mem.scroll.verticalScrollBar().maximum() == 0  # and nothing hidden below it
        heights.append(mem.drawn[5])
    assert heights[0] > heights[1] + 150  # the shorter panel got a shorter lane: it follows both ways
