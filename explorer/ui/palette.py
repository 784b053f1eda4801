"""Colours: a dark theme and stable, distinguishable colours for categories."""

from __future__ import annotations

import zlib

import numpy as np
from PySide6.QtCore import QObject
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from explorer.ui.state_links import connect_while_alive

BACKGROUND = QColor("#1b1d23")
ROW_ALT = QColor("#20232a")
GROUP_BG = QColor("#2a2e37")
GUTTER_BG = QColor("#23262e")
GRID = QColor("#2f333d")
TEXT = QColor("#d8dbe2")
TEXT_DIM = QColor("#8a909c")
ACCENT = QColor("#4fa3ff")
SELECTED = QColor("#ffffff")
AREA = QColor(79, 163, 255, 48)
WAIT = QColor("#e06c75")
COVERAGE_GAMMA = 1.0  # lanes draw colour x coverage**gamma: the light theme lifts part-busy pixels off white

# Tableau-like colours tuned for a dark background: categories get them in order of
# first appearance; beyond the list a stable hash of the name picks the hue.
BASE = [
    "#4e9be6", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948",
    "#ff9da7", "#9c755f", "#8cd17d", "#86bcb6", "#f1ce63", "#a0cbe8", "#ffbe7d",
    "#d37295", "#b6992d", "#499894", "#fabfd2", "#d4a6c8", "#79706e",
]
NONE_COLOUR = "#555a66"


def category_colours(names: list[str]) -> list[QColor]:
    out = []
    for i, name in enumerate(names):
        if name == "(none)":
            out.append(QColor(NONE_COLOUR))
        elif i < len(BASE):
            out.append(QColor(BASE[i]))
        else:
            h = zlib.crc32(name.encode()) & 0xFFFFFFFF
            out.append(QColor.fromHsv(h % 360, 120 + (h >> 9) % 80, 200 + (h >> 17) % 50))
    return out


def rgb_array(colours: list[QColor]) -> np.ndarray:
    """(n, 3) float32 RGB for numpy blending."""
    if not colours:
        return np.zeros((1, 3), dtype=np.float32)
    return np.array([[c.red(), c.green(), c.blue()] for c in colours], dtype=np.float32)


def pack_rgb32(rgb: np.ndarray) -> np.ndarray:
    """(..., 3) floats 0..255 -> uint32 0xffRRGGBB (QImage.Format_RGB32)."""
    r = np.clip(rgb, 0, 255).astype(np.uint32)
    return (0xFF000000 | (r[..., 0] << 16) | (r[..., 1] << 8) | r[..., 2]).astype(np.uint32)


def apply_dark_theme(app: QApplication) -> None:
    app.setStyle("Fusion")
    p = QPalette()
    p.setColor(QPalette.Window, QColor("#23262e"))
    p.setColor(QPalette.WindowText, TEXT)
    p.setColor(QPalette.Base, QColor("#1b1d23"))
    p.setColor(QPalette.AlternateBase, QColor("#262a32"))
    p.setColor(QPalette.ToolTipBase, QColor("#2d313b"))
    p.setColor(QPalette.ToolTipText, TEXT)
    p.setColor(QPalette.Text, TEXT)
    p.setColor(QPalette.Button, QColor("#2d313b"))
    p.setColor(QPalette.ButtonText, TEXT)
    p.setColor(QPalette.Highlight, ACCENT)
    p.setColor(QPalette.HighlightedText, QColor("#0b0d10"))
    p.setColor(QPalette.PlaceholderText, TEXT_DIM)
    p.setColor(QPalette.Link, ACCENT)
    app.setPalette(p)


class CategoryColours:
    """The QColors of the view's colour categories (and their RGB array for numpy blending),
    kept in step with the view state's colour mode and trace."""

    def __init__(self, state, owner: QObject) -> None:  # state: explorer.model.timeline.view_state.ViewState
        """`owner`: the widget whose lifetime these colours follow (connected until it is destroyed)."""
        self.state = state
        self.colours: list[QColor] = []
        self.rgb = rgb_array([])
        connect_while_alive(state.index_changed, self.refresh, owner)
        connect_while_alive(state.colour_mode_changed, self.refresh, owner)
        self.refresh()

    def refresh(self) -> None:
        codes = self.state.colour_codes
        self.colours = category_colours(codes.names) if codes is not None else []
        self.rgb = rgb_array(self.colours)
