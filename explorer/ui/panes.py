"""Laying out a panel in one line each: widgets stacked without margins, two panes in a splitter,
a panel filled with its parts. The panels (kernel details, statistics, query console) built
these by hand, the same dozen lines each time.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QBoxLayout, QHBoxLayout, QLabel, QLayout, QSplitter, QVBoxLayout, QWidget

Part = QWidget | QLayout


def _add(layout: QBoxLayout, items: Sequence[Part], stretch_last: bool) -> None:
    for i, item in enumerate(items):
        s = 1 if stretch_last and i == len(items) - 1 else 0
        if isinstance(item, QLayout):
            layout.addLayout(item, s)
        else:
            layout.addWidget(item, s)


def stack(*items: Part, horizontal: bool = False, stretch_first: bool = False) -> QWidget:
    """A margin-less widget holding `items` in a column (a row with `horizontal`); the last item
    takes the spare room (the first, with `stretch_first`)."""
    w = QWidget()
    layout = QHBoxLayout(w) if horizontal else QVBoxLayout(w)
    layout.setContentsMargins(0, 0, 0, 0)
    if stretch_first:
        _add(layout, items[:1], True)
        _add(layout, items[1:], False)
    else:
        _add(layout, items, True)
    return w


def split(orientation: Qt.Orientation, *panes: QWidget, stretch: Sequence[int] = ()) -> QSplitter:
    """`panes` in a splitter the user can drag; `stretch[i]`: how pane i shares the spare room."""
    s = QSplitter(orientation)
    for pane in panes:
        s.addWidget(pane)
    for i, factor in enumerate(stretch):
        s.setStretchFactor(i, factor)
    return s


def fill(owner: QWidget, *items: Part, margin: int = 4) -> QVBoxLayout:
    """`owner`'s layout: `items` in a column with `margin` around, the last taking the spare room."""
    layout = QVBoxLayout(owner)
    layout.setContentsMargins(margin, margin, margin, margin)
    _add(layout, items, True)
    return layout


def keep_tallest(label: QLabel) -> None:
    """Hold a word-wrapped label at the tallest it has been (`setMinimumHeight(0)` starts over): a
    shorter text then changes no geometry, and Qt does not move and resize what is around it (the
    Kernel details panel's tables and plot: a 40-90 ms pass at 28M events)."""
    width = label.width() if label.isVisible() else 0
    if width > 0:
        label.setMinimumHeight(max(label.minimumHeight(), label.heightForWidth(width)))
