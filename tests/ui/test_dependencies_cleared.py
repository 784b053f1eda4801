"""The Dependencies panel describes the selected instruction or DMA transfer: when the user clears the
selection (Escape on the timeline) or picks a kernel, no earlier event's waits stay listed or outlined.

The tiny-llm trace (tests/model/timeline_traces.py): MultiplyMoving 15 waited on 14, 13, 12 in engine
order and 11 on DMA 10001."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from ui.analysis_helpers import ready
from ui.test_analysis_details import click_event

from explorer.model.timeline.trace_index import EventRef
from explorer.ui.dependencies_view import PROMPT


def waits_listed(deps) -> int:
    return deps.preds.rowCount() + deps.succs.rowCount() + deps.steps.rowCount()


def instruction_15_shown(window, qtbot):
    """The analysis panels once a click on MultiplyMoving 15 has its waits in the Dependencies panel."""
    p = ready(window, qtbot)
    window.panels["Dependencies"].raise_()
    with qtbot.waitSignal(p.dependencies.shown, timeout=20_000):
        click_event(window, window.loaded.index.find_id(15))
    return p


def test_clearing_the_selection_clears_the_waits_and_their_outline(window, qtbot):
    p = instruction_15_shown(window, qtbot)
    deps, overlay = p.dependencies, p.overlay
    assert deps.steps.rowCount() == 6 and overlay.steps == 6 and overlay.isVisible()
    assert "instruction:15" in deps.title.text()

    QTest.keyClick(window.timeline, Qt.Key_Escape)  # the user clears the selection
    assert window.timeline.selected is None
    assert waits_listed(deps) == 0 and deps.title.text() == PROMPT
    assert "wait chain" in deps.chain_label.text() and "6 steps" not in deps.chain_label.text()
    assert not deps.more_button.isEnabled()
    assert overlay.steps == 0 and not overlay.isVisible()  # nor outlined on the timeline

    # selecting the same instruction again lists its chain again
    with qtbot.waitSignal(deps.shown, timeout=20_000):
        click_event(window, window.loaded.index.find_id(15))
    assert deps.steps.rowCount() == 6 and overlay.steps == 6

    # a kernel has no waits of its own: the instruction's are not left under its name
    click_event(window, EventRef("kernels", 0))
    qtbot.waitUntil(lambda: deps.kernel_id == 0 and deps.node == "kernel:0", timeout=20_000)
    assert waits_listed(deps) == 0 and "kernel:0: select one of its instructions" in deps.title.text()
    assert overlay.steps == 0


def test_a_critical_path_asked_for_stays_with_its_kernel_when_the_selection_clears(window, qtbot):
    p = instruction_15_shown(window, qtbot)
    deps = p.dependencies
    deps.tabs.setCurrentIndex(1)
    qtbot.waitUntil(lambda: deps.cp_button.isVisible() and deps.cp_button.isEnabled())
    with qtbot.waitSignal(deps.critical_path_ready, timeout=20_000):
        QTest.mouseClick(deps.cp_button, Qt.LeftButton)
    n = len(deps.critical.steps)
    QTest.keyClick(window.timeline, Qt.Key_Escape)
    assert waits_listed(deps) == 0  # the event's waits go ...
    assert deps.cp_steps.rowCount() == n and p.overlay.steps == n  # ... the kernel's critical path stays
    assert "Critical path of kernel" in deps.cp_title.text()
