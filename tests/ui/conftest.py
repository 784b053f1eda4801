"""GUI test fixtures: isolated settings, a hand-built trace, a loaded main window."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from model.timeline_traces import write_timeline_trace


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path_factory):
    """Recent files and other settings go to a temporary directory, never the user's."""
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path_factory.mktemp("settings")))


@pytest.fixture
def trace_path(tmp_path) -> Path:
    return write_timeline_trace(tmp_path / "tiny-llm.trnx")


@pytest.fixture
def window(qtbot, trace_path):
    from explorer.ui import open_window

    w = open_window(trace_path)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.activateWindow()  # as a user's window is: shortcuts only fire in the active window (on X11 too)
    qtbot.waitActive(w)
    qtbot.waitUntil(lambda: w.loaded is not None, timeout=20_000)
    qtbot.wait(20)
    return w
