"""GUI-thread CPU of painting a kernel's roofline, its grid drawn as strips (StripGridAxis) and by
pyqtgraph's own axes, and whether the two give the same pixels.

    QT_QPA_PLATFORM=offscreen python bench/roofline_paint.py [TRACE] [--kernels N] [--repeats R]

Opens TRACE (default: the Llama 3.1 8B decode sample) in the real window at 1920x1080 to learn the
roofline's size there, then makes two rooflines of that size, one with each kind of axis, and
shows N kernels spread over the trace in both, R times over. For each it times the first
`viewport().repaint()` after the kernel is shown (`time.thread_time`; what a kernel link paints:
a new range, so new axes) and a second one (the same range again: a hover, a raise), the two
plots alternated, and after the event loop has settled compares their pixels. Prints the least
and the median of each, and how many kernels' plots differed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path, nargs="?", default=ROOT / "sample_traces" / "llama3.1-8b-decode.trnx")
    ap.add_argument("--kernels", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from gui_window import open_analysed

    app, w, spin = open_analysed(args.trace, ROOT, settle=0.5)
    import pyqtgraph as pg
    from PySide6.QtGui import QImage

    from explorer.model.analysis.kernel_details import kernel_details
    from explorer.ui import roofline_plot

    size = w.analysis.kernel_details.roofline.size()
    a = w.analysis.session.analysis
    ids = sorted(a.hierarchy.kernels["kernel_id"].tolist())
    details = [kernel_details(a.trace, k, a.hierarchy) for k in ids[:: max(1, len(ids) // args.kernels)][: args.kernels]]
    strips = roofline_plot.QtRoofline()
    saved = roofline_plot.StripGridAxis
    roofline_plot.StripGridAxis = pg.AxisItem
    lines = roofline_plot.QtRoofline()
    roofline_plot.StripGridAxis = saved
    plots = {"strips": strips, "pyqtgraph": lines}
    for r in plots.values():
        r.resize(size)
        r.show()
    spin(0.3)

    def cpu_ms(f) -> float:
        c = time.thread_time()
        f()
        return (time.thread_time() - c) * 1e3

    def pixels(r) -> np.ndarray:
        img = r.plot.grab().toImage().convertToFormat(QImage.Format_ARGB32)
        return np.frombuffer(img.constBits(), np.uint32, img.width() * img.height()).copy()

    fresh: dict[str, list[float]] = {k: [] for k in plots}
    again: dict[str, list[float]] = {k: [] for k in plots}
    differ = 0
    for _ in range(args.repeats):
        for d in details:
            for name, r in plots.items():
                r.show_roofline(d.roofline, str(d.kernel["name"]))
                r.caption.setMinimumHeight(r.caption.height())  # (both plots keep one size)
                fresh[name].append(cpu_ms(r.plot.viewport().repaint))
                again[name].append(cpu_ms(r.plot.viewport().repaint))
            spin(0.15)
            a_px, b_px = pixels(strips), pixels(lines)
            differ += int(a_px.shape != b_px.shape or bool((a_px != b_px).any()))
    out = {"trace": str(args.trace), "plot": [size.width(), size.height()], "kernels": len(details) * args.repeats,
           "kernels_whose_pixels_differ": differ}
    for name in plots:
        out[name] = {"new_range_least_ms": round(min(fresh[name]), 2), "new_range_median_ms": round(statistics.median(fresh[name]), 2),
                     "same_range_least_ms": round(min(again[name]), 2), "same_range_median_ms": round(statistics.median(again[name]), 2)}
    w.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
