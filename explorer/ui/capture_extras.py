"""Generic editors for the capture options the dialog has no hand-made field for.

Whatever `CaptureConfig` gains (the multi-chip options: chips, tp, ep, dp, pp, jitter,
straggler, expert skew, ...) gets an editor from its declaration (simcore/capture/options.py):
its kind picks the widget, its choices fill a drop-down, its help is the tooltip and its
default the placeholder. An editor left at its default contributes nothing, so the
simulator's own default applies (the same as leaving the flag off on the command line).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QWidget

from explorer.ui.capture_options import format_value, parse_value, tooltip
from simcore.capture.options import Option

TRISTATE = ("default", "on", "off")


class OptionEditor:
    """One capture option: `widget`, `value()` (None = unset), `set_value(v)`, `on_change(cb)`."""

    def __init__(self, opt: Option) -> None:
        self.name = opt.name
        self.kind = opt.kind
        self.default = opt.default
        self.choices = list(opt.choices) if opt.choices else None
        if self.choices:
            w: QWidget = QComboBox()
            w.addItems(([""] if self.default is None else []) + self.choices)  # "": not given
            if self.default is not None:
                w.setCurrentText(str(self.default))
        elif self.kind == "flag":
            w = QCheckBox()
        elif self.kind == "switch":
            w = QComboBox()
            w.addItems(TRISTATE)
        else:
            w = QLineEdit(placeholderText=opt.shown_default or "")
        w.setObjectName(opt.name)
        w.setToolTip(tooltip(opt))
        self.widget = w

    def value(self) -> Any:
        w = self.widget
        if self.choices:
            text = w.currentText()
            return None if text in ("", str(self.default)) else text
        if self.kind == "flag":
            return True if w.isChecked() else None
        if self.kind == "switch":
            return {"default": None, "on": True, "off": False}[w.currentText()]
        return parse_value(w.text(), self.kind)

    def set_value(self, value: Any) -> None:
        w = self.widget
        if self.choices:
            w.setCurrentText("" if value is None else str(value))
        elif self.kind == "flag":
            w.setChecked(bool(value))
        elif self.kind == "switch":
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
