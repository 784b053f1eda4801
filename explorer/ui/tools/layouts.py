"""Named dock layouts: View > Layouts saves the window's docks (which are open, where, their
sizes and tabs) under a name in the user's settings and restores them by name.

The same `QMainWindow.saveState` the window keeps between runs (`explorer.ui.settings`), one
entry per name under `layouts/`; a layout saved before the docks changed (another
`STATE_VERSION`) is refused with one sentence rather than applied to the wrong docks.
Saving under a name already taken asks before replacing that layout.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QInputDialog, QMainWindow, QMenu

from explorer.ui.settings import STATE_VERSION
from explorer.ui.tools.confirm import replace_ok
from simcore.errors import UserError

PREFIX = "layouts/"


class Layouts:
    """The window's named layouts and the View > Layouts menu."""

    def __init__(self, window: QMainWindow, store: QSettings) -> None:
        self.window = window
        self.store = store
        self.menu = QMenu("&Layouts", window)
        self.menu.setObjectName("menu-layouts")
        self.menu.aboutToShow.connect(self._fill)
        self._fill()

    def names(self) -> list[str]:
        self.store.sync()
        keys = [k for k in self.store.allKeys() if k.startswith(PREFIX)]
        return sorted(k[len(PREFIX):] for k in keys)

    @staticmethod
    def clean(name: str) -> str:
        """The name as it is kept ("/" would nest settings groups)."""
        return name.strip().replace("/", "-")

    def save(self, name: str, overwrite: bool = False) -> None:
        """Keep the window's arrangement as `name`; one of that name is replaced only with `overwrite`."""
        name = self.clean(name)
        if not name:
            raise UserError("a layout needs a name.")
        if not overwrite and name in self.names():
            raise UserError(f"there is already a layout named '{name}'; choose another name or replace it.")
        self.store.setValue(PREFIX + name, self.window.saveState(STATE_VERSION))
        self.store.sync()

    def restore(self, name: str) -> None:
        state = self.store.value(PREFIX + name)
        if not isinstance(state, QByteArray) or state.isEmpty():
            raise UserError(f"there is no layout named '{name}'.")
        if not self.window.restoreState(state, STATE_VERSION):
            raise UserError(f"the layout '{name}' was saved for other panels; arrange the window and save it again.")

    def delete(self, name: str) -> None:
        self.store.remove(PREFIX + name)
        self.store.sync()

    def ask_save(self) -> None:
        """Ask for a name; a name already taken asks again before its layout is replaced."""
        name, ok = QInputDialog.getText(self.window, "Save layout", "Name of this arrangement of panels:")
        name = self.clean(name)
        if not ok or not name:
            return
        if name in self.names() and not replace_ok(self.window, "layout", name):
            return
        self._guarded(self.save, name, True)

    def _fill(self) -> None:
        m = self.menu
        m.clear()
        save = m.addAction("Save layout as\u2026")
        save.setObjectName("action-save-layout")
        save.triggered.connect(self.ask_save)
        names = self.names()
        if names:
            m.addSeparator()
        for name in names:
            act = QAction(name, m)
            act.setObjectName(f"action-layout-{name}")
            act.triggered.connect(lambda _=False, n=name: self._guarded(self.restore, n))
            m.addAction(act)
        if names:
            delete = m.addMenu("Delete layout")
            for name in names:
                delete.addAction(name).triggered.connect(lambda _=False, n=name: self.delete(n))

    def _guarded(self, fn, *args) -> None:
        try:
            fn(*args)
        except UserError as exc:
            tools = getattr(self.window, "tools", None)
            if tools is not None:
                tools._error("Layouts", str(exc))

