"""Regenerate docs/images/explorer-timeline.png: the window on the README's sample trace.

    .venv/bin/python docs/images/screenshot.py [TRACE] [-o PNG]

Opens the explorer offscreen at 1920x1080, waits for the trace and its analyses, finds the
first MultiplyMoving instruction after mid-trace with the search bar, shows the 300 us around
it with its details and dependencies, and saves the window. Rerun it whenever the window or
the simulator changes what the picture shows.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", nargs="?", type=Path, default=ROOT / "sample_traces" / "llama3.1-8b-decode.trnx")
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "images" / "explorer-timeline.png")
    ap.add_argument("--query", default="MultiplyMoving", help="search text whose first hit is selected")
    ap.add_argument("--at", type=float, default=0.5, help="take the first hit after this fraction of the span")
    ap.add_argument("--width-us", type=float, default=300.0, help="visible time around the hit")
    a = ap.parse_args()

    from PySide6.QtCore import QSettings

    from explorer.ui import ensure_app, open_window

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(Path(os.environ.get("TMPDIR", "/tmp")) / "trnx-shot"))
    app = ensure_app()
    w = open_window(a.trace)
    w.resize(1920, 1080)
    w.show()
    w.wait_loaded()
    if w.loaded is None:
        sys.exit(f"could not open {a.trace}")
    analysed = time.perf_counter() + 30
    while w.analysis.session.analysis is None and time.perf_counter() < analysed:
        app.processEvents()
        time.sleep(0.01)
    w.search.run(a.query)
    lo, hi = w.loaded.index.span
    w.search.current = (int(lo + (hi - lo) * a.at), -1)  # step on from this point of the trace
    w.search.step(1)
    ref = w.timeline.selected
    if ref is None:
        sys.exit(f"no event matches {a.query!r} in {a.trace}")
    s, e = w.loaded.index.interval(ref)
    half = a.width_us * 1e3 / 2
    w.zoom_to((s + e) / 2 - half, (s + e) / 2 + half, w.loaded.index.locate(ref)[0].track.track_id)
    for _ in range(30):
        app.processEvents()
        time.sleep(0.01)
    a.output.parent.mkdir(parents=True, exist_ok=True)
    if not w.grab().save(str(a.output)):
        sys.exit(f"could not write {a.output}")
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
