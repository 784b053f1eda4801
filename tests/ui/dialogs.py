"""Answering the modal dialogs an action opens, as a user would (typing, clicking their buttons)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QInputDialog, QLineEdit, QMessageBox, QWidget


def type_name(text: str) -> tuple[type, Callable[[QWidget], None]]:
    """An input dialog: type `text` over what it offers and press Enter."""
    def answer(d: QWidget) -> None:
        edit = d.findChild(QLineEdit)
        edit.selectAll()
        QTest.keyClicks(edit, text)
        QTest.keyClick(edit, Qt.Key_Return)
    return QInputDialog, answer


def click(button: QMessageBox.StandardButton, said: list[str] | None = None) -> tuple[type, Callable[[QWidget], None]]:
    """A message box: note its text in `said`, click `button`."""
    def answer(d: QWidget) -> None:
        if said is not None:
            said.append(d.text())
        QTest.mouseClick(d.button(button), Qt.LeftButton)
    return QMessageBox, answer


def answering(action: Callable[[], object], *answers: tuple[type, Callable[[QWidget], None]]) -> list:
    """Run `action`, answering the modal dialogs it opens in turn; returns the answers not used
    (a dialog that never came)."""
    pending = list(answers)
    polls = [500]  # 10 s at most: a dialog that never comes stops the polling

    def poll() -> None:
        w = QApplication.activeModalWidget()
        if pending and w is not None and w.isVisible() and isinstance(w, pending[0][0]):
            pending.pop(0)[1](w)
        polls[0] -= 1
        if pending and polls[0] > 0:
            QTimer.singleShot(20, poll)

    QTimer.singleShot(20, poll)
    action()
    return pending
