"""Regenerate the explorer's pictures in docs/images, in both themes, at 1920x1080.

    .venv/bin/python docs/images/screenshot.py [--theme dark|light|both] [-o DIR]

- explorer-timeline-{theme}.png (the README's picture): the Llama 3.1 8B decode sample, the
  first MultiplyMoving after mid-trace found with the search bar, the 300 us around it, its
  details and the wait chain that led to it, and the first recommendation's evidence bands.
- explorer-multichip-{theme}.png: `trnx view sample_traces/llama3.1-70b-tp16-straggler.trnx
  --theme THEME --screenshot PNG --smoke-test`, exactly (the first screen of a 16-chip trace).

Both start from settings no run has written (the default dock layout) and go through `explorer.ui.screenshot` (the window at 1920x1080 once the analysis panels
are filled), the code behind `trnx view --screenshot`. Rerun it whenever the window or the
samples change what the pictures show, and look at them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_traces"


def fresh_settings() -> str:
    """A settings directory no run has written: each picture shows the default dock layout, not
    the one the last window saved when it closed."""
    return tempfile.mkdtemp(prefix="trnx-shot-settings-")


def decode_picture(theme: str, out: Path, query: str = "MultiplyMoving", at: float = 0.5,
                   width_us: float = 300.0) -> None:
    """The decode sample with an instruction selected, its details and wait chain."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from explorer.ui import ensure_app, open_window
    from explorer.ui.screenshot import SCREENSHOT_SIZE, save_screenshot, wait_for_analyses

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, fresh_settings())
    app = ensure_app()
    w = open_window(SAMPLES / "llama3.1-8b-decode.trnx")
    w.extras.set_theme(theme, save=False)
    w.resize(*SCREENSHOT_SIZE)
    w.show()
    w.wait_loaded()
    if w.loaded is None:
        sys.exit("could not open the decode sample")
    wait_for_analyses(w)
    recs = w.analysis.recommendations
    if recs.list.count():
        recs.list.setCurrentRow(0)
        recs._emit_evidence()  # as a click on it does: its evidence bands on the timeline
    w.search.run(query)
    lo, hi = w.loaded.index.span
    w.search.current = (int(lo + (hi - lo) * at), -1)  # step on from this point of the trace
    w.search.step(1)
    ref = w.timeline.selected
    if ref is None:
        sys.exit(f"no event matches {query!r}")
    s, e = w.loaded.index.interval(ref)
    half = width_us * 1e3 / 2
    w.zoom_to((s + e) / 2 - half, (s + e) / 2 + half, w.loaded.index.locate(ref)[0].track.track_id)
    w.panels["Dependencies"].raise_()
    for _ in range(200):  # the wait chain comes from the analysis worker; the flow arrows, the tree's
        app.processEvents()  # rows and the kernel's details from the selection worker
        if (w.analysis.dependencies.chain is not None and w.details.details is not None
                and w.details.details.dependencies == w.view.selected_dependencies != []
                and w.analysis.operators.current_node() == w.view.node):
            break
        QApplication.instance().thread().msleep(10)
    save_screenshot(w, out)
    w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--theme", choices=["dark", "light", "both"], default="both")
    ap.add_argument("-o", "--output-dir", type=Path, default=ROOT / "docs" / "images")
    a = ap.parse_args()
    themes = ["dark", "light"] if a.theme == "both" else [a.theme]
    for theme in themes:
        out = a.output_dir / f"explorer-timeline-{theme}.png"
        decode_picture(theme, out)
        print(f"wrote {out}")
    for theme in themes:  # the CLI itself, one process per picture
        out = a.output_dir / f"explorer-multichip-{theme}.png"
        subprocess.run([sys.executable, "-m", "explorer.cli.main", "view",
                        str(SAMPLES / "llama3.1-70b-tp16-straggler.trnx"), "--theme", theme, "--screenshot", str(out),
                        "--smoke-test", "--overwrite"], check=True, env={**os.environ, "XDG_CONFIG_HOME": fresh_settings()})


if __name__ == "__main__":
    main()
