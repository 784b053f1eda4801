"""Kernel details (engine time, instruction mix, roofline) and dependencies (flows, wait chain,
critical path on the timeline), driven by clicks on the timeline and the panels' tables.

The tiny-llm trace: kernel 0 (matmul_qkv, [0, 50 us), bf16) runs 50 MultiplyMoving of 800 ns on
TensorMatrix (one a Transpose), 500 TensorTensor of 20 ns on Vector and 5 DMA transfers; each DMA
unblocks the first MultiplyMoving that starts after it ends (DMA 10000 -> instruction 1).
"""

from __future__ import annotations


import numpy as np
import pyarrow.feather as feather
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest

from ui.analysis_helpers import ready
from model.timeline_traces import DMA_ID0, HARDWARE

from explorer.model.timeline.trace_index import EventRef


def click_event(window, ref) -> None:
    tl, canvas = window.timeline, window.timeline.canvas
    s, e = window.loaded.index.interval(ref)
    tl.zoom_to(s - 3 * (e - s), e + 3 * (e - s))
    QTest.mouseClick(canvas, Qt.LeftButton, Qt.NoModifier, canvas.point_for(ref))
    assert tl.selected == ref


def table_click(view, row: int, col: int = 0, *, double: bool = False) -> None:
    idx = view.model().index(row, col)
    view.scrollTo(idx)
    pos = view.visualRect(idx).center()
    QTest.mouseClick(view.viewport(), Qt.LeftButton, Qt.NoModifier, pos)
    if double:
        QTest.mouseDClick(view.viewport(), Qt.LeftButton, Qt.NoModifier, pos)


def test_kernel_details_show_engine_time_mix_and_roofline(window, qtbot, trace_path):
    p = ready(window, qtbot)
    click_event(window, EventRef("kernels", 0))
    kd = p.kernel_details
    assert kd.kernel_id == 0 and window.panels["Kernel details"].isVisible()
    assert "computing" in kd.header.text()  # on the selection's worker, off the GUI thread
    qtbot.waitUntil(lambda: kd.details is not None and kd.roofline.roofline is not None, timeout=30_000)
    # independent answers from the Arrow tables
    ins = feather.read_table(trace_path / "instructions.arrow").to_pandas()
    ins = ins[ins["kernel_id"] == 0]
    kinds = {0: "tensor", 1: "vector"}  # tracks 0 (TensorMatrix) and 1 (Vector)
    want_counts = ins.groupby(ins["track_id"].map(kinds)).size().to_dict()
    got = {r["engine"]: r["instruction_count"] for r in kd.engines.records if r["instruction_count"]}
    assert got == {**want_counts, "dma": 5}
    tensor = kd.engines.find("engine", "tensor")
    busy = int(ins.loc[ins["track_id"] == 0, "dur_ns"].sum())  # in-order row: busy = sum of durations
    assert kd.engines.record(tensor)["busy_ns"] == busy == 40_000
    assert kd.engines.cell_text(tensor, "busy_percent") == "80 %"
    mix = {(r["opcode"], r["count"]) for r in kd.mix.records}
    assert mix == set(ins.groupby("opcode", observed=True).size().items()) == {("MultiplyMoving", 50), ("TensorTensor", 500)}
    # the roofline: the kernel at flops / hbm bytes, achieved TFLOPS, under the bf16 roofs
    k = feather.read_table(trace_path / "kernels.arrow").to_pandas().iloc[0]
    ai = k["flops"] / (k["hbm_read_bytes"] + k["hbm_write_bytes"])
    tflops = k["flops"] / k["dur_ns"] / 1e3
    roof = kd.roofline.roofline
    assert roof.point_intensity == pytest.approx(ai) and roof.point_tflops == pytest.approx(tflops)
    assert roof.peak_tflops == HARDWARE["tensor"]["peak_tflops"]["bf16"]
    assert roof.bandwidth_gbps == HARDWARE["hbm"]["bandwidth_gbps"]
    assert kd.roofline.point() == pytest.approx((ai, tflops))
    assert kd.roofline.plot.getPlotItem().ctrl.logXCheck.isChecked()  # log-log
    xs, ys = kd.roofline.items["roof"].getOriginalDataset()
    assert ys.max() == pytest.approx(79.0) and ys[0] == pytest.approx(xs[0] * 4900 / 1e3)
    assert "compute</b></span> bound" in kd.header.text() and "2,560" not in kd.header.text()


def test_dependencies_of_an_instruction_jump_and_follow(window, qtbot):
    p = ready(window, qtbot)
    mm1 = window.loaded.index.find_id(1)  # MultiplyMoving [1000, 1800), waits for DMA 10000 [0, 1000)
    deps = p.dependencies
    with qtbot.waitSignal(deps.shown, timeout=20_000):  # flows and the chain come from the analysis worker
        click_event(window, mm1)
    assert deps.node == "instruction:1"
    assert [r["node"] for r in deps.preds.records] == [f"dma:{DMA_ID0}"]
    assert deps.preds.record(0)["kind"] == "semaphore" and deps.preds.record(0)["slack_ns"] == 0
    assert deps.succs.records == []
    # the wait chain, newest first: the instruction, then the DMA it waited on (it ended after the previous
    # MultiplyMoving, so it binds)
    assert [r["node"] for r in deps.steps.records] == ["instruction:1", f"dma:{DMA_ID0}"]
    assert deps.steps.record(0)["edge"] == "semaphore" and not deps.more_button.isEnabled()
    assert p.overlay.isVisible() and p.overlay.steps == 2
    # a click jumps the timeline to the predecessor and keeps this panel on instruction 1
    table_click(deps.pred_view, 0)
    assert window.timeline.selected == EventRef("dma", 0)
    assert window.timeline.viewport.t0 <= 0 and window.timeline.viewport.t1 >= 1000
    assert deps.node == "instruction:1"
    qtbot.waitUntil(lambda: p.operators.current_node() == f"dma:{DMA_ID0}", timeout=30_000)  # after its kernel's rows
    # a double-click follows it: the DMA becomes the subject, it unblocks instruction 1
    with qtbot.waitSignal(deps.shown, timeout=20_000):
        table_click(deps.pred_view, 0, double=True)
    assert deps.node == f"dma:{DMA_ID0}"
    assert [r["node"] for r in deps.succs.records] == ["instruction:1"]


def test_a_kernels_critical_path_is_outlined_on_the_timeline(window, qtbot):
    p = ready(window, qtbot)
    click_event(window, window.loaded.index.find_id(1))
    deps = p.dependencies
    window.panels["Dependencies"].raise_()
    deps.tabs.setCurrentIndex(1)
    qtbot.waitUntil(lambda: deps.cp_button.isVisible() and deps.cp_button.isEnabled())
    with qtbot.waitSignal(deps.critical_path_ready, timeout=20_000):
        QTest.mouseClick(deps.cp_button, Qt.LeftButton)
    cp = deps.critical
    assert cp is not None and cp.kernel_id == 0 and len(cp.steps) > 2
    want = p.session.analysis.dependencies.critical_path(0)
    assert cp.steps["node"].tolist() == want.steps["node"].tolist()
    assert deps.cp_steps.rowCount() == len(cp.steps)
    assert p.overlay.steps == len(cp.steps) and p.overlay.isVisible()
    # the outline is on screen: the overlay's colour where the path's last step is drawn
    tl, canvas = window.timeline, window.timeline.canvas
    last = cp.steps.iloc[-1]
    tl.zoom_to(last["start_ns"] - 2000, last["end_ns"] + 2000, int(last["track_id"]))
    canvas.repaint()
    image = canvas.grab().toImage()
    g = canvas.geom_for_track(int(last["track_id"]))
    x0, x1 = int(canvas.x_of(last["start_ns"])), int(canvas.x_of(last["end_ns"]))
    colours = {image.pixelColor(x, g.y + 1).name() for x in range(max(x0, 0), min(x1, image.width()))}
    assert p.overlay.colour.name() in colours
    # clicking a step jumps there
    table_click(deps.cp_view, 0)
    first = cp.steps.iloc[0]
    assert tl.viewport.t0 <= first["start_ns"] and tl.viewport.t1 >= first["end_ns"]
    assert np.isclose(QColor(p.overlay.colour).alpha(), 255)


def test_the_wait_chain_lists_newest_first_to_the_first_cross_engine_wait_and_shows_more(window, qtbot):
    p = ready(window, qtbot)
    deps = p.dependencies
    window.panels["Dependencies"].raise_()
    # MultiplyMoving 15 waited on 14, 13, 12 in engine order; 11 waited on DMA 10001 (semaphore)
    with qtbot.waitSignal(deps.shown, timeout=20_000):
        click_event(window, window.loaded.index.find_id(15))
    nodes = [r["node"] for r in deps.steps.records]
    assert nodes == ["instruction:15", "instruction:14", "instruction:13", "instruction:12", "instruction:11",
                     f"dma:{DMA_ID0 + 1}"]
    assert [r["edge"] for r in deps.steps.records] == ["engine_order"] * 4 + ["semaphore", ""]
    assert "newest first: 6 steps back to the first wait on another engine" in deps.chain_label.text()
    qtbot.waitUntil(deps.more_button.isVisible)
    assert deps.more_button.isEnabled()  # DMA 10001 waited on DMA 10000 before it on its queue
    with qtbot.waitSignal(deps.shown, timeout=20_000):
        QTest.mouseClick(deps.more_button, Qt.LeftButton)
    assert [r["node"] for r in deps.steps.records] == nodes + [f"dma:{DMA_ID0}"]
    assert not deps.more_button.isEnabled() and "back to its start" in deps.chain_label.text()


def test_kernel_details_computed_behind_another_tab_fill_when_it_is_shown(window, qtbot):
    """Selecting an instruction raises Dependencies over Kernel details: its kernel's tables and
    roofline are computed but drawn only when the user brings the panel forward."""
    p = ready(window, qtbot)
    kd = p.kernel_details
    click_event(window, window.loaded.index.find_id(1))  # MultiplyMoving of kernel 0
    qtbot.waitUntil(lambda: kd.details is not None, timeout=30_000)
    assert kd.visibleRegion().isEmpty() and not window.panels["Dependencies"].visibleRegion().isEmpty()
    assert "matmul_qkv" in kd.header.text() and kd.engines.rowCount() == 0  # not drawn yet
    window.panels["Kernel details"].raise_()
    qtbot.waitUntil(lambda: kd.engines.rowCount() > 0)
    assert {r["engine"] for r in kd.engines.records if r["instruction_count"]} == {"tensor", "vector", "dma"}
    qtbot.waitUntil(lambda: kd.roofline.point() is not None)  # the plot follows in the next pass


def test_the_roofline_follows_the_kernel_shown_with_no_leftovers(window, qtbot, trace_path):
    """Clicking one kernel, then another, then the first again: the plot shows each kernel's own
    point and roofs, and nothing drawn for the previous one stays visible (its items are reused)."""
    p = ready(window, qtbot)
    kd = p.kernel_details
    kernels = feather.read_table(trace_path / "kernels.arrow").to_pandas()

    def shown_for(kernel_id: int) -> None:
        click_event(window, EventRef("kernels", kernel_id))
        qtbot.waitUntil(lambda: kd.details is not None and int(kd.details.kernel["kernel_id"]) == kernel_id
                        and kd.roofline.roofline is kd.details.roofline, timeout=30_000)
        k = kernels[kernels["kernel_id"] == kernel_id].iloc[0]
        ai = k["flops"] / (k["hbm_read_bytes"] + k["hbm_write_bytes"])
        assert kd.roofline.point() == pytest.approx((ai, k["flops"] / k["dur_ns"] / 1e3))
        visible = [i for i in kd.roofline.plot.getPlotItem().items if i.isVisible()]
        assert set(map(id, visible)) == set(map(id, kd.roofline.items.values()))

    for kernel_id in (0, 1, 0):
        shown_for(kernel_id)
