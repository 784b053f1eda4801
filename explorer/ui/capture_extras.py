"""Generic editors for the capture options the dialog has no hand-made field for.

Whatever `CaptureConfig` gains (the multi-chip options: chips, tp, ep, dp, pp, jitter,
straggler, expert skew, ...) gets an editor picked from its type annotation and from
`simcore.capture.choices()`: a list `choices()[name + "s"]` becomes a drop-down,
`choices()["options"][name]` the tooltip, `choices()["defaults"][name]` the
placeholder. An editor left at its default contributes nothing, so the simulator's
own default applies (the same as leaving the flag off on the command line).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QWidget

from explorer.ui.capture_options import field_kind, flag, format_value, parse_value

TRISTATE = ("default", "on", "off")


class OptionEditor:
    """One CaptureConfig field: `widget`, `value()` (None = unset), `set_value(v)`, `on_change(cb)`."""

    def __init__(self, fld: dataclasses.Field, facts: dict[str, Any]) -> None:
        self.name = fld.name
        self.kind = field_kind(fld)
        default = None if fld.default is dataclasses.MISSING else fld.default
        self.default = default if default is not None else (facts.get("defaults") or {}).get(fld.name)
        listed = facts.get(f"{fld.name}s")
        self.choices = [str(c) for c in listed] if isinstance(listed, list) and all(
            isinstance(c, (str, int)) for c in listed) else None
        if self.choices:
            w: QWidget = QComboBox()
            w.addItems(self.choices)
            if self.default is not None and str(self.default) in self.choices:
                w.setCurrentText(str(self.default))
        elif self.kind == "bool":
            w = QCheckBox()
        elif self.kind == "tristate":
            w = QComboBox()
            w.addItems(TRISTATE)
        else:
            w = QLineEdit(placeholderText=format_value(self.default))
        w.setObjectName(fld.name)
        help_text = (facts.get("options") or {}).get(fld.name)
        w.setToolTip(flag(fld.name) + (f": {help_text}" if isinstance(help_text, str) else ""))
        self.widget = w

    def value(self) -> Any:
        w = self.widget
        if self.choices:
            text = w.currentText()
            return None if self.default is not None and text == str(self.default) else text
        if self.kind == "bool":
            return True if w.isChecked() else None
        if self.kind == "tristate":
            return {"default": None, "on": True, "off": False}[w.currentText()]
        return parse_value(w.text(), self.kind)

    def set_value(self, value: Any) -> None:
        w = self.widget
        if self.choices:
            w.setCurrentText(str(value))
        elif self.kind == "bool":
            w.setChecked(bool(value))
        elif self.kind == "tristate":
            w.setCurrentText("default" if value is None else "on" if value else "off")
        else:
            w.setText(format_value(value))

    def on_change(self, callback: Callable[..., Any]) -> None:
        w = self.widget
        if isinstance(w, QComboBox):
            w.currentIndexChanged.connect(callback)
        elif isinstance(w, QCheckBox):
            w.toggled.connect(callback)
        else:
            w.textChanged.connect(callback)
