"""Regenerate docs/images/tools-*.png: the power tools (docs/tools.md) on the 8B decode sample, both themes.

    .venv/bin/python docs/images/tools_screenshots.py [TRACE] [--output-dir DIR]

Offscreen at 1920x1080, on a hard-linked copy of the trace (the annotations are written
there, never into the sample): a query pinned as a track above the rows with a field
search's hits outlined (`tools-query-THEME.png`), and the statistics panel with a
duration histogram, two annotations and the delta between them (`tools-stats-THEME.png`), and
the icicle (`tools-icicle-THEME.png`) and the collective duration chart on the straggler sample (`tools-collectives-THEME.png`).
Rerun it when the tools' looks change, and look at the pictures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))


def settle(app, seconds: float = 0.3, until=None, timeout: float = 60.0) -> None:
    end = time.perf_counter() + (timeout if until else seconds)
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)
        if until is not None and until():
            break


def save(app, w, path: Path) -> None:
    """Save the window's picture once it is quiet: nothing left in the GUI thread's queue of worker
    results and deferred steps (explorer.ui.worker: panels filled in parts, table columns fitted one
    per pass) for 0.5 s. A fixed pause caught the dependencies' tables unfitted on a loaded machine."""
    from explorer.ui import worker

    end = time.perf_counter() + 30.0
    calm = time.perf_counter()
    while time.perf_counter() < end and time.perf_counter() - calm < 0.5:
        app.processEvents()
        time.sleep(0.01)
        if worker._deliveries and worker._deliveries[0].queue:
            calm = time.perf_counter()
    w.grab().save(str(path))


def themed_window(app, trace: Path, theme: str):
    """A 1920x1080 window on `trace` in `theme`, loaded, its analyses in (which raise the default panels).

    Each window starts from settings no run has written, so every picture shows the default dock
    layout: with one settings directory for the whole run, the first (dark) window saved its layout
    when it closed and the light one restored it (onto the offscreen platform's ~800 px screen, then
    stretched to 1920 px), so the light pictures split the bottom docks differently."""
    from PySide6.QtCore import QSettings

    from explorer.ui import open_window

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, tempfile.mkdtemp(prefix="trnx-shot-"))
    w = open_window(trace)
    w.resize(1920, 1080)
    w.show()
    w.extras.set_theme(theme, save=False)  # the window applies the saved theme when shown: set it after
    w.wait_loaded()
    settle(app, until=lambda: w.analysis.session.analysis is not None)
    return w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", nargs="?", type=Path, default=ROOT / "sample_traces" / "llama3.1-8b-decode.trnx")
    ap.add_argument("--output-dir", type=Path, default=ROOT / "docs" / "images")
    a = ap.parse_args()
    from explorer.ui import ensure_app
    from tools_gui import linked_copy

    tmp = Path(tempfile.mkdtemp(prefix="tools-shot-"))
    trace = linked_copy(a.trace, tmp / a.trace.name)
    app = ensure_app()
    for theme in ("dark", "light"):
        w = themed_window(app, trace, theme)
        lo, hi = w.loaded.index.span
        t = w.tools
        # 1: a query pinned as a track, and a field search's hits outlined
        w.panels["Query"].raise_()
        t.console.run("SELECT name, start_ns, dur_ns, core FROM kernels WHERE name LIKE 'matmul%' AND dur_ns > 10000")
        settle(app, until=lambda: t.console.result is not None and t.console.run_button.isEnabled())
        t.console.pin()
        w.search.run("opcode:MultiplyMoving dur>280ns")
        settle(app, until=lambda: w.search.hits is not None and w.search.searching is None)
        mid = lo + (hi - lo) * 0.42
        w.zoom_to(mid, mid + 60_000)
        w.view.select(None)
        save(app, w, a.output_dir / f"tools-query-{theme}.png")
        # 2: statistics with a histogram, annotations and their delta
        w.search.edit.clear()
        w.panels["Statistics"].raise_()
        w.panels["Annotations"].raise_()
        st = t.statistics
        settle(app, until=lambda: not st.busy and st.model.rowCount() > 0)
        row = st.model.find("name", "MultiplyMoving")
        st.table.selectRow(row)
        settle(app, until=lambda: st.histogram is not None and st.histogram.name == "MultiplyMoving")
        w.zoom_to(mid, mid + 200_000)
        p = t.annotations
        p.add_marker(int(mid + 40_000), note="layer 14 starts")
        p.add_range(int(mid + 90_000), int(mid + 130_000), note="HBM-bound MLP")
        p.add_marker(int(mid + 160_000), note="layer 15 starts")
        p.table.selectRow(0)
        p.table.selectionModel().select(p.table.model().index(2, 0),
                                        p.table.selectionModel().SelectionFlag.Select | p.table.selectionModel().SelectionFlag.Rows)
        settle(app, until=lambda: "instructions" in p.delta_label.text())
        save(app, w, a.output_dir / f"tools-stats-{theme}.png")
        # 3: the icicle, by kernel time
        w.panels["Icicle"].raise_()
        settle(app, until=lambda: len(t.icicle.boxes) > 0)
        save(app, w, a.output_dir / f"tools-icicle-{theme}.png")
        w.close()
        (trace / "annotations.json").unlink(missing_ok=True)
    tp16 = linked_copy(ROOT / "sample_traces" / "llama3.1-70b-tp16-straggler.trnx", tmp / "tp16.trnx")
    for theme in ("dark", "light"):  # 3: the icicle (`tools-icicle-THEME.png`) and the collective duration chart on the straggler sample
        w = themed_window(app, tp16, theme)
        w.panels["Collective durations"].raise_()
        chart = w.tools.collective_chart
        settle(app, until=lambda: len(chart.frame) > 0)
        w.tools.go_to_link("collective:7")
        save(app, w, a.output_dir / f"tools-collectives-{theme}.png")
        w.close()
    shutil.rmtree(tmp, ignore_errors=True)
    print("wrote", ", ".join(f"tools-{k}-{t}.png" for k in ("query", "stats", "icicle", "collectives") for t in ("dark", "light")))


if __name__ == "__main__":
    main()
