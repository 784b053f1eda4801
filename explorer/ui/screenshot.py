"""The window as a picture: `trnx view --screenshot PNG` (and docs/images' scripts).

The window is sized to `SCREENSHOT_SIZE` (1920x1080) and saved once the analysis panels
show their numbers, so docs, bug reports and reviews of both themes come from one command.
No import of the `explorer.ui` package itself: `explorer.ui.run` uses it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from simcore.errors import UserError

SCREENSHOT_SIZE = (1920, 1080)


def check_screenshot_path(path: str | Path, overwrite: bool = False) -> Path:
    """The PNG path `--screenshot` writes, or UserError before any window opens: what is there
    already (the user's file) is replaced only with `overwrite`, and then only a plain file; never
    a path inside a trace directory (simcore.atomic.check_output)."""
    from simcore.atomic import check_output

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise UserError(f"--screenshot writes a PNG: give a path ending in .png (got {path.name}).")
    if path.is_dir():
        raise UserError(f"--screenshot {path} is a directory; give the PNG file to write.")
    if not path.resolve().parent.is_dir():
        raise UserError(f"cannot write {path}: the directory {path.resolve().parent} does not exist.")
    check_output(path, overwrite)
    return path


def wait_for_analyses(window, timeout_s: float = 600.0) -> None:
    """Process events until the analysis panels are filled, and the Statistics panel's query and the
    Summary's selection column that wait for them (UserError when the analyses fail)."""
    from PySide6.QtWidgets import QApplication

    session = window.analysis.session
    failed: list[str] = []
    session.failed.connect(failed.append)
    deadline = time.perf_counter() + timeout_s
    while session.analysis is None and (session.computing or window.loader is not None):
        if failed:
            raise UserError(f"the analyses failed: {failed[0]}")
        if time.perf_counter() > deadline:
            raise UserError(f"the analyses did not finish in {timeout_s:.0f} s.")
        QApplication.processEvents()
        time.sleep(0.005)
    if failed:
        raise UserError(f"the analyses failed: {failed[0]}")
    stats = getattr(getattr(window, "tools", None), "statistics", None)
    while stats is not None and stats.busy and time.perf_counter() < deadline:  # it starts once the analyses are shown
        QApplication.processEvents()
        time.sleep(0.005)
    summary = getattr(getattr(window, "analysis", None), "summary", None)
    while summary is not None and summary.selection_busy and time.perf_counter() < deadline:
        QApplication.processEvents()  # the Summary's selection column, scheduled when the panels were filled
        time.sleep(0.005)
    for _ in range(5):  # let the panels lay out and paint what they were just given
        QApplication.processEvents()


def save_screenshot(window, path: str | Path, overwrite: bool = True) -> Path:
    """The whole window (panels included) as a PNG, written atomically, once the layout requests
    that the panels' last texts posted have run (a label given two lines just before the grab was
    drawn in the one line it had: the README picture's Dependencies headline)."""
    from PySide6.QtWidgets import QApplication

    from explorer.ui.analysis_export import save_png

    for _ in range(3):
        QApplication.sendPostedEvents()
        QApplication.processEvents()
    window.timeline.render_frame()
    return save_png(window, path, overwrite=overwrite)


def save_sweep_screenshot(sweep_window, path: str | Path, overwrite: bool = True) -> Path:
    """A sweep window at 1920x1080 as a PNG, once it has laid out and drawn its plot."""
    from PySide6.QtWidgets import QApplication

    from explorer.ui.analysis_export import save_png

    sweep_window.resize(*SCREENSHOT_SIZE)
    for _ in range(10):
        QApplication.processEvents()
    return save_png(sweep_window, path, overwrite=overwrite)


def screenshot_when_ready(window, path: str | Path, overwrite: bool = True) -> None:
    """Resize `window` to 1920x1080 and save it to `path` once its analysis panels are filled
    (the interactive `trnx view --screenshot`); a failure is one line on stderr and in the
    status bar, the window stays up."""
    window.resize(*SCREENSHOT_SIZE)

    def shoot(analysis) -> None:
        if analysis is None:
            return
        window.analysis.session.ready.disconnect(shoot)
        try:
            save_screenshot(window, path, overwrite)
        except UserError as exc:
            print(f"trnx view: error: {exc}", file=sys.stderr)
            window.statusBar().showMessage(str(exc), 10000)
        else:
            window.statusBar().showMessage(f"saved the window to {path}", 5000)

    window.analysis.session.ready.connect(shoot)
