"""The default layout at 1920x1080 shows every dock tab whole: no tab bar scrolls a panel out of view."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QTabBar, QToolButton

from ui.analysis_helpers import open_ready


def shown_dock_tab_bars(window) -> list[QTabBar]:
    """The window's dock tab bars a user sees (Qt keeps old ones, covered, behind the live ones)."""
    bars = []
    for bar in window.findChildren(QTabBar):
        if bar.parent() is not window or not bar.isVisible():
            continue
        top = window.childAt(bar.geometry().center())
        if top is bar or (top is not None and bar.isAncestorOf(top)):
            bars.append(bar)
    return bars


def test_every_dock_tab_is_in_view_at_1920x1080(qtbot, trace_path):
    w, _ = open_ready(qtbot, trace_path, size=(1920, 1080))
    qtbot.wait(50)
    bars = shown_dock_tab_bars(w)
    assert len(bars) >= 3  # right, under the timeline, and beside the operator tree
    seen = set()
    for bar in bars:
        scrolls = [b for b in bar.findChildren(QToolButton) if b.isVisible()]
        assert not scrolls, f"the tabs {[bar.tabText(i) for i in range(bar.count())]} scroll in {bar.width()} px"
        for i in range(bar.count()):
            assert bar.rect().contains(bar.tabRect(i)), (bar.tabText(i), bar.tabRect(i), bar.rect())
            seen.add(bar.tabText(i))
    tabbed = {title for title, dock in w.panels.items() if w.tabifiedDockWidgets(dock)}
    assert tabbed == seen  # every tabbed panel has its tab on screen, Annotations and Regions included
    right = next(b for b in bars if "Details" in {b.tabText(i) for i in range(b.count())})
    assert right.geometry().right() == w.width() - 1  # the right dock's tabs
    assert {right.tabText(i) for i in range(right.count())} >= {"Details", "Summary", "Recommendations"}
    # and a click on the last tab of each bar shows its panel
    for bar in bars:
        last = bar.count() - 1
        QTest.mouseClick(bar, Qt.LeftButton, Qt.NoModifier, bar.tabRect(last).center())
        assert w.panels[bar.tabText(last)].widget().isVisible()


def test_an_empty_window_opens_on_the_default_tabs(qtbot):
    """Before any trace: Summary, the operator tree and kernel details in front (as once a trace's
    analyses are in), not the tool panels that were tabbed in last."""
    from explorer.ui import open_window

    w = open_window()
    qtbot.addWidget(w)
    w.resize(1920, 1080)
    qtbot.waitExposed(w)
    shown = {bar.tabText(bar.currentIndex()) for bar in shown_dock_tab_bars(w)}
    assert shown == {"Summary", "Operators", "Kernel details"}
