"""`trnx view --smoke-test [--timings] [--theme T] [--screenshot PNG]`: build the window, load a trace,
render one frame (packaging check), and optionally save the window as a picture.

With timings it also waits for the analysis panels (summary, operator tree,
recommendations) to be filled and reports, in seconds from the moment the window starts
opening the trace (Python, Qt and the empty window are ready by then): `open_s` when the
trace is shown, `first_frame_s` when the timeline's first frame is painted, `analyses_s`
when the panels show their numbers; and `peak_rss_mb`, the process's peak resident memory
(the memory-mapped trace's pages it touched count), taken once the Statistics panel's
whole-trace query (which waits for the analyses) has finished too.

A screenshot (explorer.ui.screenshot) is taken once the analysis panels show their numbers.

Without timings it then waits for the checks the window runs once a trace is shown (its checksums;
validation when it had no saved index): a trace the window would close is the window's sentence
(the CLI's exit 2), not a passed smoke test. With timings it does not (the figures are taken by
then, and a benchmark's open need not hash the whole trace).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from explorer.ui.screenshot import SCREENSHOT_SIZE, save_screenshot, wait_for_analyses
from simcore.errors import UserError


def smoke_test(path: str | None, timings: bool = False, goto: str | None = None, theme: str | None = None,
               screenshot: str | Path | None = None, overwrite: bool = False) -> dict[str, float]:
    """The window's figures: `frame_ms` (the first frame's paint), and with `timings` the
    seconds above; raises UserError when the trace cannot be opened (no dialog is shown: the
    error becomes the CLI's one-line message instead). `theme` is applied for this run only
    (not saved); `screenshot` saves the window at 1920x1080 once the analyses are shown.
    The window is deleted on the way out, passed or refused (`dispose`)."""
    from explorer.ui import open_window

    window = open_window(None, show=True)
    try:
        return _smoke(window, path, timings, goto, theme, screenshot, overwrite)
    finally:
        dispose(window)


def _smoke(window, path: str | None, timings: bool, goto: str | None, theme: str | None,
           screenshot: str | Path | None, overwrite: bool) -> dict[str, float]:
    from PySide6.QtWidgets import QApplication

    window.show_error_dialogs = False
    if theme is not None:
        window.extras.set_theme(theme, save=False)
    if screenshot is not None:
        window.resize(*SCREENSHOT_SIZE)
    errors: list[str] = []
    window.load_failed.connect(errors.append)
    filled: list[float] = []
    # connected after the panels' own slot, so it runs once they show the analysis
    window.analysis.session.ready.connect(lambda a: filled.append(time.perf_counter()) if a is not None else None)
    failed: list[str] = []
    window.analysis.session.failed.connect(failed.append)
    t0 = time.perf_counter()
    out: dict[str, float] = {}
    if path is not None:
        window.open_path(path)
        while window.loaded is None and not errors:
            if window.loader is None and not errors:
                break
            QApplication.processEvents()
            time.sleep(0.001)
        if errors:
            raise UserError(errors[0])
        if window.loaded is None:
            raise UserError(f"{path} did not finish loading.")
        out["open_s"] = time.perf_counter() - t0
        if goto is not None:  # a link the trace does not have is the CLI's one sentence, exit 2
            window.tools.go_to_link(goto)
            out["view_t0_ns"], out["view_t1_ns"] = window.view.viewport.t0, window.view.viewport.t1
    out["frame_ms"] = window.timeline.render_frame()
    out["first_frame_s"] = time.perf_counter() - t0
    if timings and path is not None:
        while not filled and not failed:
            QApplication.processEvents()
            time.sleep(0.002)
        if failed:
            raise UserError(f"the analyses failed: {failed[0]}")
        out["analyses_s"] = filled[0] - t0
        stats = window.tools.statistics  # started when the analyses were shown: its memory counts too
        while stats.busy:
            QApplication.processEvents()
            time.sleep(0.002)
    if screenshot is not None:
        if path is not None:
            wait_for_analyses(window)
        save_screenshot(window, screenshot, overwrite)
    out["peak_rss_mb"] = peak_rss_mb()
    if path is not None and not timings:
        wait_for_checks(window)
        if errors:  # the window closed the trace: damaged, or it failed the validation it was shown before
            raise UserError(errors[0])
    if window.grab().isNull():
        raise RuntimeError("the window rendered an empty frame")
    return out


def dispose(window) -> None:
    """Close `window` and delete it now, on the GUI thread: a closed window otherwise stayed alive
    with its panels' results still queued (a dozen for a small trace), handed to it during whatever
    ran next in the process (the next smoke test's load), and was collected whenever the collector
    got to it. Results still computing for it are dropped when they arrive (explorer.ui.worker).
    A window whose loader is still running (it did not stop within closeEvent's wait) is left."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    from explorer.ui import worker
    from explorer.ui.loader import TraceLoader

    window.close()  # (closeEvent stops and waits for its loaders)
    if any(loader.isRunning() for loader in window.findChildren(TraceLoader)):
        return  # deleting a running QThread would abort the process
    window.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    for _ in range(len(worker.pending())):  # its queued results: dropped now (one per pass of the loop)
        QApplication.processEvents()


def wait_for_checks(window) -> None:
    """Process events until the trace's loader is done with what it runs after the trace is shown
    (checksums; validation for a trace with no saved index), and its verdict has been delivered."""
    from PySide6.QtWidgets import QApplication

    from explorer.ui.loader import TraceLoader

    while any(loader.isRunning() for loader in window.findChildren(TraceLoader)):
        QApplication.processEvents()
        time.sleep(0.002)
    QApplication.sendPostedEvents()  # `damaged` / `refused`, queued before the thread finished
    QApplication.processEvents()


def smoke_test_sweep(path: str | Path, theme: str | None = None, screenshot: str | Path | None = None,
                     overwrite: bool = False) -> dict[str, int]:
    """`trnx view SWEEP --smoke-test`: the main window and the sweep window on `path`, drawn
    once (and saved as `screenshot`), then closed. Returns how many configurations the table
    holds (`rows`), the sweep has (`configurations`) and the plot shows (`plotted`)."""
    from PySide6.QtWidgets import QApplication

    from explorer.sweep.opened import open_sweep
    from explorer.ui import open_window
    from explorer.ui.screenshot import save_sweep_screenshot

    window = open_window(None, show=True)
    window.show_error_dialogs = False
    if theme is not None:
        window.extras.set_theme(theme, save=False)
    try:
        w = window.sweeps.show(open_sweep(path))
        for _ in range(5):
            QApplication.processEvents()
        if screenshot is not None:
            save_sweep_screenshot(w, screenshot, overwrite)
        if w.grab().isNull():
            raise RuntimeError("the sweep window rendered an empty frame")
        return {"rows": w.model.rowCount(), "configurations": w.sweep.configurations,
                "plotted": len(w.scatter.data)}
    finally:
        for sw in window.sweeps.windows:
            sw.close()
        dispose(window)


def peak_rss_mb() -> float:
    """The process's peak resident set size in MiB (0 where the platform does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux
