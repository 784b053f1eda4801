"""Asking before a save replaces something of the user's (a named layout, a saved query)."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget


def replace_ok(parent: QWidget, what: str, name: str) -> bool:
    """Ask whether to replace the saved `what` called `name`; No, the default, keeps it."""
    answer = QMessageBox.question(parent, f"Replace {what}", f"There is already a {what} named '{name}'. Replace it?",
                                  QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
    return answer == QMessageBox.Yes
