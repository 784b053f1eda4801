"""Help > Keyboard shortcuts: every shortcut the window really has, read from its QActions.

The table is built each time the window opens by walking the menu bar and the
window's actions, so a shortcut added (or changed) anywhere shows up here without
editing a list. The timeline's own keys and mouse gestures (handled in its event
handlers, not QActions) follow from `timeline.TIMELINE_KEYS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView, QDialog, QHeaderView, QLabel, QMainWindow, QMenu, QTableWidget, QTableWidgetItem, QVBoxLayout,
    QWidget,
)

from explorer.ui.timeline import TIMELINE_KEYS


@dataclass(frozen=True)
class ShortcutRow:
    keys: str      # as the platform writes them, e.g. "Ctrl+O"
    action: str    # the action's text without '&' and '...'
    where: str     # the menu path ("File", "View > Theme") or "window"


def _clean(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").replace("\u2026", "").rstrip(". ").strip()


def _keys(action: QAction) -> str:
    return ", ".join(s.toString(QKeySequence.NativeText) for s in action.shortcuts() if not s.isEmpty())


def list_shortcuts(window: QMainWindow) -> list[ShortcutRow]:
    """Every QAction (in menus or on the window) and QShortcut that has a key sequence."""
    rows: list[ShortcutRow] = []
    seen: set[int] = set()

    def add(action: QAction, where: str) -> None:
        keys = _keys(action)
        if id(action) in seen or not keys:
            return
        seen.add(id(action))
        rows.append(ShortcutRow(keys, _clean(action.text()), where))

    def walk(menu: QMenu, path: list[str]) -> None:
        for action in menu.actions():
            sub = action.menu()
            if sub is not None:
                walk(sub, [*path, _clean(action.text())])
            elif not action.isSeparator():
                add(action, " \u203a ".join(path))

    for top in window.menuBar().actions():
        if top.menu() is not None:
            walk(top.menu(), [_clean(top.text())])
    for action in window.findChildren(QAction):
        if action.menu() is None:
            add(action, "window")
    for sc in window.findChildren(QShortcut):
        if not sc.key().isEmpty() and id(sc) not in seen:
            seen.add(id(sc))
            rows.append(ShortcutRow(sc.key().toString(QKeySequence.NativeText), sc.whatsThis() or sc.objectName(), "window"))
    return rows


class ShortcutsWindow(QDialog):
    """A table of the window's shortcuts, plus the timeline's keys and mouse gestures."""

    def __init__(self, window: QMainWindow, parent: QWidget | None = None) -> None:
        super().__init__(parent or window)
        self.setObjectName("shortcuts-window")
        self.setWindowTitle("Keyboard shortcuts")
        self.main_window = window
        self.table = QTableWidget(0, 3, objectName="shortcuts-table")
        self.table.setHorizontalHeaderLabels(["Keys", "Action", "Where"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)

        self.timeline_keys = QLabel(TIMELINE_KEYS, objectName="timeline-keys", wordWrap=True)
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel("<h3>Menus and window</h3>"))
        lay.addWidget(self.table, 1)
        lay.addWidget(self.timeline_keys)
        self.resize(620, 720)
        self.refresh()

    def refresh(self) -> None:
        rows = list_shortcuts(self.main_window)
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            for j, text in enumerate((r.keys, r.action, r.where)):
                self.table.setItem(i, j, QTableWidgetItem(text))

    def rows(self) -> list[tuple[str, str, str]]:
        """What the table shows, row by row (keys, action, where)."""
        return [tuple(self.table.item(i, j).text() for j in range(3)) for i in range(self.table.rowCount())]

    def showEvent(self, event) -> None:  # noqa: N802
        self.refresh()
        super().showEvent(event)
