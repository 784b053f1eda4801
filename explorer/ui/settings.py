"""What the explorer remembers between runs (QSettings, ini format): window geometry,
toolbar and dock layout, the theme (recent files: `recent.py`, same file).

Tests point QSettings at a temporary directory (`QSettings.setPath`, see
tests/ui/conftest.py), so they never read or write a user's real settings.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings
from PySide6.QtWidgets import QMainWindow

from explorer.ui.recent import settings as app_settings

GEOMETRY = "window/geometry"
STATE = "window/state"
THEME = "appearance/theme"
# bump when the docks change so an old layout is not applied to new docks: 2 since the analysis
# docks (Summary, Recommendations, Operators, Kernel details, Dependencies); a version-1 layout
# would have put all of them in the bottom tab group
STATE_VERSION = 2

__all__ = ["GEOMETRY", "STATE", "THEME", "WindowPersistence", "app_settings"]


class WindowPersistence(QObject):
    """Restores a main window's geometry and dock layout when it is first shown (after
    every panel has been docked, wherever it was added) and saves them when it closes."""

    def __init__(self, window: QMainWindow, store: QSettings | None = None) -> None:
        super().__init__(window)
        self.window = window
        self.store = store or app_settings()
        self.restored = False
        window.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if obj is self.window:
            if event.type() == QEvent.Show and not self.restored:
                self.restore()
            elif event.type() == QEvent.Close:
                self.save()
        return False

    def restore(self) -> bool:
        """Apply the saved layout; False when there is none (first run) or it does not fit."""
        self.restored = True
        geometry = self.store.value(GEOMETRY)
        state = self.store.value(STATE)
        ok = False
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            ok = self.window.restoreGeometry(geometry)
        if isinstance(state, QByteArray) and not state.isEmpty():
            ok = self.window.restoreState(state, STATE_VERSION) and ok
        return ok

    def save(self) -> None:
        self.store.setValue(GEOMETRY, self.window.saveGeometry())
        self.store.setValue(STATE, self.window.saveState(STATE_VERSION))
        self.store.sync()
