"""Light and dark themes: the Qt palette, the timeline's colours and the pyqtgraph plots.

The timeline paints with the colours of `explorer.ui.palette` (looked up as
`palette.BACKGROUND` etc. at paint time), so a theme swaps those module colours,
sets the application palette and restyles every pyqtgraph plot, then repaints.
Category colours (opcodes, kernels, ...) stay the same in both themes so a user who
learnt "orange is DMA" keeps that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

from explorer.ui import palette as P

DEFAULT_THEME = "dark"


@dataclass(frozen=True)
class Theme:
    name: str
    window: str
    base: str
    alternate: str
    button: str
    text: str
    text_dim: str
    accent: str
    highlighted_text: str
    tooltip: str
    # the timeline's own colours (explorer.ui.palette)
    timeline: dict[str, QColor] = field(default_factory=dict)
    plot_background: str = "#1b1d23"
    plot_foreground: str = "#d8dbe2"
    coverage_gamma: float = 1.0  # part-busy pixels: colour x coverage**gamma over the background


THEMES: dict[str, Theme] = {
    "dark": Theme(
        "dark", window="#23262e", base="#1b1d23", alternate="#262a32", button="#2d313b", text="#d8dbe2",
        text_dim="#8a909c", accent="#4fa3ff", highlighted_text="#0b0d10", tooltip="#2d313b",
        timeline={"BACKGROUND": QColor("#1b1d23"), "ROW_ALT": QColor("#20232a"), "GROUP_BG": QColor("#2a2e37"),
                  "GUTTER_BG": QColor("#23262e"), "GRID": QColor("#2f333d"), "TEXT": QColor("#d8dbe2"),
                  "TEXT_DIM": QColor("#8a909c"), "ACCENT": QColor("#4fa3ff"), "SELECTED": QColor("#ffffff"),
                  "AREA": QColor(79, 163, 255, 48), "WAIT": QColor("#e06c75")},
        plot_background="#1b1d23", plot_foreground="#d8dbe2"),
    "light": Theme(
        "light", window="#eef0f3", base="#ffffff", alternate="#f5f6f8", button="#e4e7ec", text="#1f2328",
        text_dim="#5f6673", accent="#1f6feb", highlighted_text="#ffffff", tooltip="#ffffff",
        timeline={"BACKGROUND": QColor("#ffffff"), "ROW_ALT": QColor("#f6f7f9"), "GROUP_BG": QColor("#e6e9ee"),
                  "GUTTER_BG": QColor("#f0f2f5"), "GRID": QColor("#d6dae1"), "TEXT": QColor("#1f2328"),
                  "TEXT_DIM": QColor("#5f6673"), "ACCENT": QColor("#1f6feb"), "SELECTED": QColor("#000000"),
                  "AREA": QColor(31, 111, 235, 40), "WAIT": QColor("#d1242f")},
        plot_background="#ffffff", plot_foreground="#1f2328", coverage_gamma=0.45),
}

_current = DEFAULT_THEME


def theme_names() -> list[str]:
    return list(THEMES)


def current_theme() -> str:
    return _current


def qpalette(theme: Theme) -> QPalette:
    p = QPalette()
    text = QColor(theme.text)
    p.setColor(QPalette.Window, QColor(theme.window))
    p.setColor(QPalette.WindowText, text)
    p.setColor(QPalette.Base, QColor(theme.base))
    p.setColor(QPalette.AlternateBase, QColor(theme.alternate))
    p.setColor(QPalette.ToolTipBase, QColor(theme.tooltip))
    p.setColor(QPalette.ToolTipText, text)
    p.setColor(QPalette.Text, text)
    p.setColor(QPalette.Button, QColor(theme.button))
    p.setColor(QPalette.ButtonText, text)
    p.setColor(QPalette.Highlight, QColor(theme.accent))
    p.setColor(QPalette.HighlightedText, QColor(theme.highlighted_text))
    p.setColor(QPalette.PlaceholderText, QColor(theme.text_dim))
    p.setColor(QPalette.Link, QColor(theme.accent))
    for role in (QPalette.WindowText, QPalette.Text, QPalette.ButtonText):
        p.setColor(QPalette.Disabled, role, QColor(theme.text_dim))
    return p


def style_plot(plot: pg.PlotWidget, theme: Theme) -> None:
    plot.setBackground(theme.plot_background)
    fg = pg.mkPen(theme.plot_foreground)
    for name in ("left", "bottom", "right", "top"):
        axis = plot.getPlotItem().getAxis(name)
        axis.setPen(fg)
        axis.setTextPen(fg)


def apply_theme(name: str, app: QApplication | None = None) -> Theme:
    """Switch the whole application to theme `name` ('dark' or 'light') and repaint."""
    global _current
    theme = THEMES.get(name)
    if theme is None:
        raise ValueError(f"unknown theme '{name}'; choose one of {', '.join(THEMES)}.")
    app = app or QApplication.instance()
    _current = name
    for key, colour in theme.timeline.items():
        setattr(P, key, QColor(colour))
    P.COVERAGE_GAMMA = theme.coverage_gamma
    pg.setConfigOptions(background=theme.plot_background, foreground=theme.plot_foreground)
    if app is not None:
        app.setStyle("Fusion")
        app.setPalette(qpalette(theme))
        from explorer.ui.track_canvas import TrackCanvas

        for widget in app.allWidgets():
            if isinstance(widget, pg.PlotWidget):
                style_plot(widget, theme)
            elif isinstance(widget, TrackCanvas):
                widget.relayout()  # drops the cached row-label pixmap painted in the old colours
        for top in app.topLevelWidgets():
            top.update()
            for child in top.findChildren(QWidget):
                child.update()
    return theme
