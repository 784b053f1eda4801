"""Helpers for the analysis-panel GUI tests: wait for the analyses, find and click tree rows."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtTest import QTest

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def ready(window, qtbot, timeout: int = 60_000):
    """The window's AnalysisPanels once the trace's analyses are computed and shown."""
    panels = window.analysis
    qtbot.waitUntil(lambda: window.loaded is not None and panels.session.analysis is not None
                    and panels.operators.model.h is not None, timeout=timeout)
    return panels


def open_ready(qtbot, path, size=(1500, 950)):
    from explorer.ui import open_window

    w = open_window(path)
    qtbot.addWidget(w)
    w.resize(*size)
    w.show_error_dialogs = False
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=60_000)
    return w, ready(w, qtbot)


def row_of(model, key: str) -> QModelIndex:
    """The (already fetched) index of a tree node by key, searching loaded rows only."""
    stack = [QModelIndex()]
    while stack:
        parent = stack.pop()
        for r in range(model.rowCount(parent)):
            idx = model.index(r, 0, parent)
            if model.data(idx, Qt.UserRole) == key:
                return idx
            stack.append(idx)
    return QModelIndex()


def click_row(view, idx: QModelIndex, *, double: bool = False) -> None:
    """A real mouse click (or double-click) on a tree/table row's first cell."""
    view.scrollTo(idx)
    rect = view.visualRect(idx)
    assert rect.isValid() and not rect.isEmpty(), "row is not on screen"
    pos = rect.center()
    if double:
        QTest.mouseClick(view.viewport(), Qt.LeftButton, Qt.NoModifier, pos)
        QTest.mouseDClick(view.viewport(), Qt.LeftButton, Qt.NoModifier, pos)
    else:
        QTest.mouseClick(view.viewport(), Qt.LeftButton, Qt.NoModifier, pos)
