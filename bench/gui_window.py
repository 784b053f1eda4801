"""The real window on a trace for the GUI benches, opened the same way by each of them."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable


def open_analysed(trace: Path, root: Path, settle: float, show: bool = False) -> tuple[Any, Any, Callable[[float], None]]:
    """(app, window, spin): `root`'s explorer (another checkout for a baseline) in a 1920x1080 window
    on `trace` with private settings, returned once the analysis panels are filled and `settle`
    seconds of the event loop have run (`show`: shown from the start); `spin(s)` runs the event loop
    for s seconds."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from private_settings import use_private_settings

    use_private_settings()
    from explorer.ui import ensure_app, open_window

    app = ensure_app()
    w = open_window(None)
    w.resize(1920, 1080)
    w.show_error_dialogs = False
    w.open_path(trace.resolve())
    if show:
        w.show()

    def spin(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.001)

    while w.loaded is None or w.analysis.session.analysis is None:
        spin(0.05)
    spin(settle)
    return app, w, spin
