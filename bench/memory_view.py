"""The Memory view's parts on a big trace: what runs on the tools' worker and what on the GUI thread.

    QT_QPA_PLATFORM=offscreen python bench/memory_view.py TRACE [--width 1800]

Times `load_memory` (reading `sbuf_allocations`), `raster` for every SBUF lane over the whole
step and over 1 ms, in both y modes, and the lanes' images (the worker's part); then, in a real
QtMemoryView, storing those images and painting them, the legend and status after a load, and a
hover (the GUI thread's part, which must stay well under 50 ms). Best of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from private_settings import use_private_settings  # noqa: E402  (bench/ is on sys.path)


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main() -> None:
    use_private_settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--width", type=int, default=1800)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from explorer.model import memory as M
    from explorer.ui import ensure_app
    from explorer.ui import palette as P
    from explorer.ui.tools.memory_view import LANE_H, QtMemoryView, kind_colour, shades, to_image
    from simcore.trace import open_trace

    app = ensure_app()
    trace = open_trace(a.trace, validate=False)
    rows: dict[str, float] = {}
    rows["load_memory_s"] = best(lambda: M.load_memory(trace), a.repeat)
    data = M.load_memory(trace)
    lanes = data.lanes_of("sbuf")
    lo, hi = trace.span_ns
    mid = lo + (hi - lo) / 2
    for mode in M.MODES:
        for name, (t0, t1) in (("step", (lo, hi)), ("1ms", (mid, mid + 1e6))):
            rows[f"raster_{mode}_{name}_s"] = best(
                lambda: [M.raster(data, lane, t0, t1, mode, a.width, LANE_H) for lane in lanes], a.repeat)
    view = QtMemoryView()
    view.resize(a.width + 40, 1000)
    view.show()
    app.processEvents()
    view.trace, view.t0, view.t1 = trace, lo, hi
    rows["gui_loaded_ms"] = 1e3 * best(lambda: view._loaded(trace, True, data), a.repeat)
    app.processEvents()
    w, h = view.canvas.plot_width(), view.canvas.lane_height()  # the lanes' own size: painted unscaled
    lut = shades(P.rgb_array([P.ROW_ALT] + [kind_colour(k) for k in M.ALLOCATION_KINDS]))
    rasters = [M.raster(data, lane, lo, hi, "partitions", w, h) for lane in lanes]
    rows["images_s"] = best(lambda: [to_image(r, lut) for r in rasters], a.repeat)
    images = [to_image(r, lut) for r in rasters]

    def store_and_paint() -> None:
        view._generation += 1
        view._drawn(view._generation, (lo, hi, "partitions", "sbuf", w, h), True, images)
        view.canvas.repaint()

    rows["gui_store_and_paint_ms"] = 1e3 * best(store_and_paint, a.repeat)
    lane = lanes[0]
    rows["gui_hover_ms"] = 1e3 * best(lambda: [view.hover_text(lane, M.at(data, lane, lo + (hi - lo) * i / 100, 60,
                                                                               "partitions")) for i in range(100)],
                                      a.repeat) / 100
    print(json.dumps({"trace": str(a.trace), "allocations": int(sum(len(x.rows) for x in data.lanes)),
                      "sbuf_lanes": len(lanes), **{k: round(v, 4) for k, v in rows.items()}}))


if __name__ == "__main__":
    main()
