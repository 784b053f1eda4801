"""All Qt code lives here: thin, passive views over `explorer.model` objects.

`open_window(path)` is the entry point for embedding and tests: it returns the
`MainWindow` (shown), loading `path` in a worker thread when given.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["ensure_app", "open_window", "run"]


def ensure_app():
    """The QApplication (created, with the dark theme, if there is none)."""
    from PySide6.QtWidgets import QApplication

    from explorer.ui.palette import apply_dark_theme

    app = QApplication.instance()
    if app is None:
        _quiet_platform_noise()
        app = QApplication(sys.argv[:1])
        app.setApplicationName("Trn3 Explorer")
        app.setOrganizationName("trn3-explorer")
        apply_dark_theme(app)
    return app


def _quiet_platform_noise() -> None:
    """Drop the offscreen platform's harmless 'propagateSizeHints' warning; keep the rest."""
    from PySide6.QtCore import qInstallMessageHandler

    def handler(mode, context, message: str) -> None:
        if "propagateSizeHints" not in message:
            sys.stderr.write(message + "\n")

    qInstallMessageHandler(handler)


def open_window(path: str | os.PathLike[str] | None = None, *, show: bool = True):
    """A new main window, loading `path` (a .trnx directory) off the GUI thread."""
    ensure_app()
    from explorer.ui.main_window import MainWindow

    window = MainWindow()
    if show:
        window.show()
    if path is not None:
        window.open_path(Path(path))
    return window


def run(path: str | os.PathLike[str] | None = None, goto: str | None = None, *, theme: str | None = None,
        screenshot: str | os.PathLike[str] | None = None, overwrite: bool = False) -> int:
    """Open a window and run the event loop until it closes; `goto`: a deep link to show once loaded,
    `theme` for this run only, `screenshot` saved (at 1920x1080) once the analysis panels are filled.
    A sweep directory opens the sweep window (the screenshot is of it, once shown); `overwrite`
    lets the screenshot replace a plain file at its path."""
    app = ensure_app()
    window = open_window(None)
    if goto is not None:
        window.tools.go_when_loaded(goto)
    if theme is not None:
        window.extras.set_theme(theme, save=False)
    if path is not None and _is_sweep(path):   # the sweep window, in front of the main one
        sweep_window = window.sweeps.open(path)
        if sweep_window is not None and screenshot is not None:
            from PySide6.QtCore import QTimer

            from explorer.ui.screenshot import save_sweep_screenshot

            QTimer.singleShot(0, lambda: save_sweep_screenshot(sweep_window, screenshot, overwrite))
        return app.exec()
    if screenshot is not None:
        from explorer.ui.screenshot import screenshot_when_ready

        screenshot_when_ready(window, screenshot, overwrite)
    if path is not None:
        window.open_path(Path(path))
    window.raise_()
    return app.exec()


def _is_sweep(path: str | os.PathLike[str]) -> bool:
    from explorer.sweep.store import is_sweep_path

    return is_sweep_path(path)
