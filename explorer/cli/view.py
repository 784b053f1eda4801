"""`trnx view [TRACE] [--smoke-test]`: open the desktop explorer."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from simcore.errors import UserError


def run_smoke_test(path: str | None) -> float:
    """Build the window, load the trace, render one frame; returns the frame time in ms.

    Raises UserError when the trace cannot be opened (so `trnx` exits 2).
    """
    from explorer.ui import open_window

    window = open_window(path, show=True)
    errors: list[str] = []
    window.load_failed.connect(errors.append)
    from PySide6.QtWidgets import QMessageBox

    QMessageBox.critical = staticmethod(lambda *a, **k: QMessageBox.Ok)  # no modal dialog in a smoke test
    window.wait_loaded(600_000)
    if errors:
        raise UserError(errors[0])
    if path is not None and window.loaded is None:
        raise UserError(f"{path} did not finish loading.")
    ms = window.timeline.render_frame()
    image = window.grab()
    if image.isNull():
        raise RuntimeError("the window rendered an empty frame")
    window.close()
    return ms


@click.command(help="Open the Trn3 Explorer window, loading TRACE (a .trnx directory) if given.")
@click.argument("trace", required=False, type=click.Path())
@click.option("--smoke-test", is_flag=True, help="Build the window, render one frame and exit (packaging check).")
def view(trace: str | None, smoke_test: bool) -> None:
    if trace is not None and not Path(trace).exists():
        raise UserError(f"{trace} does not exist.")
    if smoke_test:
        ms = run_smoke_test(trace)
        click.echo(f"trnx view: window built, first frame rendered in {ms:.1f} ms")
        return
    from explorer.ui import run

    sys.exit(run(trace))
