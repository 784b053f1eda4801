"""Frame times of the timeline on a 10-million-instruction trace, against a naive baseline.

    python bench/frame_time.py [--instructions 10000000] [--trace PATH] [--baseline-events 1000000]

Offscreen at 1920x1080 (QT_QPA_PLATFORM=offscreen). Prints, for our timeline:
- time to open the trace and paint the first frame (from `open_path` to the first
  painted frame: validation, index and colours built off the GUI thread);
- frame times while zooming from the full span down to single instructions (each
  zoom level: one zoom frame plus two small pans), per decade of visible width and
  overall (median and 95th percentile; the walk is repeated --repeat times and the
  median over walks reported, so one burst of load from other work on a shared
  machine does not decide the figure; the max over all frames is shown too);
- frame times while panning (A/D steps) at a coarse, a medium and a deep zoom;
- the CPU time of the same frames (process time: what a frame costs whatever else
  a shared machine runs; wall time is what the goals are about);
- peak memory (ru_maxrss: the memory-mapped trace's pages the process touched count) above
  the Qt baseline (RSS with an empty window), against twice the trace's size on disk,
  read once the analysis panels (summary, operator tree, recommendations: computed on
  their worker from the moment the trace is shown, while the walks run) are done;
and the same zoom/pan scenario drawn by naive pyqtgraph BarGraphItems holding the
first `--baseline-events` instructions, measured in the same run, with the ratios:
A, one item with a brush per bar coloured by opcode (the same picture as ours);
B, one single-brush item per opcode (the best case of the naive approach). A frame is a synchronous repaint of
the whole timeline after a viewport change, exactly what the event loop paints.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1]))  # last: a PYTHONPATH tree (a baseline) comes first
from private_settings import use_private_settings  # noqa: E402  (bench/ is on sys.path)

import numpy as np  # noqa: E402

from process_memory import peak_mib, rss_mib  # noqa: E402
from synth_trace import cached_synthetic_trace, disk_size  # noqa: E402

WIDTH, HEIGHT = 1920, 1080
ZOOM_STEP = 0.8
DEEPEST_NS = 200.0  # a few single instructions across the screen
GOAL_FIRST_FRAME_S = 2.0
GOAL_FRAME_MS = 16.0


def paint_frame(tl) -> float:
    """One frame of timeline `tl` as the event loop paints it after a view change, in ms: what
    `update_all` dirtied (the ruler and both canvases) through the window's update request. What
    `TimelineWidget.render_frame` does since issue 16; done here so a baseline tree whose
    `render_frame` repainted the whole widget (the scroll bars and splitter too) is timed the same."""
    from PySide6.QtCore import QCoreApplication, QEvent

    t = time.perf_counter()
    tl.update_all()
    QCoreApplication.sendPostedEvents(tl.window(), QEvent.UpdateRequest)
    return (time.perf_counter() - t) * 1e3


def stats(ms: list[float]) -> tuple[float, float, float]:
    a = np.asarray(ms)
    return float(np.median(a)), float(np.percentile(a, 95)), float(a.max())


def zoom_scenario(set_range, frame, lo: float, hi: float, deepest: float = DEEPEST_NS, *,
                  step: float = ZOOM_STEP, pans: bool = True) -> dict[int, list[float]]:
    """Zoom from [lo, hi] to `deepest` ns around the middle; frames keyed by decade of width."""
    mid = lo + (hi - lo) * 0.37  # not the exact middle: a busy region, not a kernel boundary
    width = hi - lo
    out: dict[int, list[float]] = {}
    while width >= deepest:
        t0 = mid - width / 2
        for dx in (0.0, 0.02, -0.02) if pans else (0.0,):  # the zoom frame and two small pans
            set_range(t0 + dx * width, t0 + dx * width + width)
            out.setdefault(int(np.floor(np.log10(width))), []).append(frame())
        width *= step
    return out


def pan_scenario(set_range, frame, lo: float, hi: float, width: float, steps: int = 40) -> list[float]:
    """A/D-style pans (15% of the width per step) across the trace at a fixed zoom."""
    t0 = lo + (hi - lo) * 0.3
    out = []
    for _ in range(steps):
        t0 += 0.15 * width
        set_range(t0, t0 + width)
        out.append(frame())
    return out


def run_ours(path: Path, repeat: int) -> dict:
    from PySide6.QtWidgets import QApplication

    from explorer.ui import ensure_app
    from explorer.ui.main_window import MainWindow

    app = ensure_app()
    window = MainWindow()
    window.resize(WIDTH, HEIGHT)
    window.show()
    for _ in range(5):
        app.processEvents()
    qt_baseline = rss_mib()
    ready_at: list[float] = []
    window.analysis.session.ready.connect(lambda a: ready_at.append(time.perf_counter()) if a is not None else None)
    t_open = time.perf_counter()
    window.open_path(path)
    while window.loaded is None:
        if window.loader is None and window.loaded is None:
            raise SystemExit("the trace failed to load")
        app.processEvents()
        time.sleep(0.002)
    tl = window.timeline
    first_frame_ms = paint_frame(tl)
    open_s = time.perf_counter() - t_open
    lo, hi = tl.viewport.lo, tl.viewport.hi

    cpu: list[float] = []

    def frame() -> float:
        c = time.process_time()
        wall = paint_frame(tl)
        cpu.append((time.process_time() - c) * 1e3)
        return wall

    runs = [zoom_scenario(tl.viewport.set_range, frame, lo, hi) for _ in range(repeat)]
    zoom = {d: [r[d] for r in runs] for d in runs[0]}  # decade -> one frame list per run
    # CPU time of the same frames (what the frame costs, whatever else the machine runs)
    zoom_cpu, i = {}, 0
    for r in runs:
        for d, frames in r.items():
            zoom_cpu.setdefault(d, []).extend(cpu[i:i + len(frames)])
            i += len(frames)
    pans = {w: pan_scenario(tl.viewport.set_range, frame, lo, hi, w) for w in ((hi - lo) / 2, 1e5, 2e3)}
    QApplication.processEvents()
    peak_timeline = peak_mib()
    # the analysis panels (summary, operator tree, recommendations) computed on their worker
    # since the trace was shown: wait for them, so the peak below includes them
    session = window.analysis.session
    while not ready_at:
        if not session.computing and session.analysis is None:
            raise SystemExit("the analyses failed")
        app.processEvents()
        time.sleep(0.002)
    analyses_s = ready_at[0] - t_open
    QApplication.processEvents()
    index = window.loaded.index
    result = {
        "events": index.event_count,
        "instructions": index.tables["instructions"].n,
        "rows": len(index.lanes),
        "open_s": open_s,
        "first_frame_ms": first_frame_ms,
        "zoom": zoom,
        "zoom_cpu": zoom_cpu,
        "pans": pans,
        "qt_baseline_mb": qt_baseline,
        "peak_mb": peak_mib(),
        "peak_timeline_mb": peak_timeline,
        "analyses_s": analyses_s,
        "visible_rows": len(tl.canvas.visible_geoms()[1]),
    }
    window.close()
    return result


def run_baseline(path: Path, n_events: int, *, per_bar_brushes: bool) -> dict:
    """The naive way: the first `n_events` instructions as bars of pyqtgraph BarGraphItems.

    per_bar_brushes=True: one BarGraphItem with a brush per bar, coloured by opcode
    like our timeline (the same picture; pyqtgraph records and replays a QPicture of
    one drawRect per bar). False: one single-brush BarGraphItem per opcode, the best
    case of the naive approach (pyqtgraph's drawRects fast path, no culling).
    """
    import pyqtgraph as pg

    from explorer.model.columns import codes as dictionary_codes, num as column_numpy
    from explorer.ui import ensure_app
    from explorer.ui.palette import category_colours
    from simcore.trace import open_trace

    app = ensure_app()
    tab = open_trace(path, validate=False).instructions.slice(0, n_events)
    start = column_numpy(tab, "start_ns").astype(np.float64)
    dur = column_numpy(tab, "dur_ns").astype(np.float64)
    track = column_numpy(tab, "track_id")
    codes, vocab = dictionary_codes(tab, "opcode")
    _, row = np.unique(track, return_inverse=True)
    origin = start.min()
    plot = pg.PlotWidget()
    plot.resize(WIDTH, HEIGHT)
    plot.show()
    t = time.perf_counter()
    brushes = [pg.mkBrush(c) for c in category_colours(vocab)]
    if per_bar_brushes:
        plot.addItem(pg.BarGraphItem(x0=start - origin, y0=row.astype(np.float64), width=dur, height=0.8,
                                     brushes=[brushes[c] for c in codes], pen=None))
    else:
        for c in np.unique(codes):
            m = codes == c
            plot.addItem(pg.BarGraphItem(x0=start[m] - origin, y0=row[m].astype(np.float64), width=dur[m],
                                         height=0.8, brush=brushes[c], pen=None))
    plot.setYRange(0, row.max() + 1, padding=0)
    lo, hi = 0.0, float((start + dur).max() - origin)
    plot.setXRange(lo, hi, padding=0)
    app.processEvents()
    viewport = plot.viewport()

    def frame() -> float:
        t0 = time.perf_counter()
        viewport.repaint()
        return (time.perf_counter() - t0) * 1e3

    first = frame()
    first_s = time.perf_counter() - t

    def set_range(a: float, b: float) -> None:
        plot.setXRange(a, b, padding=0)

    # the slow variant gets a sparser walk (it takes seconds per frame): zoom 0.5x per level
    step = 0.5 if per_bar_brushes else ZOOM_STEP
    zoom = zoom_scenario(set_range, frame, lo, hi, deepest=DEEPEST_NS, step=step, pans=not per_bar_brushes)
    steps = 3 if per_bar_brushes else 10
    pans = {w: pan_scenario(set_range, frame, lo, hi, w, steps=steps) for w in ((hi - lo) / 2, 1e5, 2e3)}
    plot.close()
    return {"events": len(start), "first_frame_ms": first, "first_s": first_s, "zoom": zoom, "pans": pans}


def report(ours: dict, naive: dict, best: dict, trace: Path) -> None:
    size_mb = disk_size(trace) / 2**20
    print(f"trace: {trace} ({size_mb:.0f} MiB on disk), {ours['instructions']:,} instructions, "
          f"{ours['events']:,} interval events, {ours['rows']} rows; window {WIDTH}x{HEIGHT} offscreen, "
          f"{ours['visible_rows']} rows on screen")
    print(f"\nopen + first frame: {ours['open_s']:.2f} s (first frame paint {ours['first_frame_ms']:.1f} ms)"
          f"   goal < {GOAL_FIRST_FRAME_S:.0f} s: {'OK' if ours['open_s'] < GOAL_FIRST_FRAME_S else 'MISSED'}")
    n_walks = len(next(iter(ours["zoom"].values())))
    print(f"\nzoom from the full span to single instructions, frame ms by visible width "
          f"({n_walks} walks: median over walks of each walk's median and p95; max over all)")
    print(f"(baselines at {naive['events']:,} instructions: A = BarGraphItem with a brush per bar, coloured by opcode"
          " like ours; B = one single-brush BarGraphItem per opcode)")
    print(f"  {'visible width':>14} {'frames':>6} {'median':>8} {'p95':>8} {'max':>8}  {'A median':>9} {'ratio':>7}  {'B median':>9} {'ratio':>6}  {'CPU med':>8} {'CPU p95':>8}")
    all_ours, all_a, all_b = [], [], []
    worst = 0.0
    for decade in sorted(ours["zoom"], reverse=True):
        walks = ours["zoom"][decade]
        o = [f for walk in walks for f in walk]
        a = naive["zoom"].get(decade, [])
        b = best["zoom"].get(decade, [])
        all_ours += o
        all_a += a
        all_b += b
        per_walk = np.array([stats(walk)[:2] for walk in walks])
        med, p95 = (float(x) for x in np.median(per_walk, axis=0))
        mx = max(o)
        worst = max(worst, med, p95)
        am = stats(a)[0] if a else float("nan")
        bm = stats(b)[0] if b else float("nan")
        cm, cp, _ = stats(ours["zoom_cpu"][decade])
        print(f"  {'1e%d ns' % decade:>14} {len(o):>6} {med:>8.2f} {p95:>8.2f} {mx:>8.2f}  {am:>9.1f} {am / med:>6.0f}x  {bm:>9.2f} {bm / med:>5.1f}x  {cm:>8.2f} {cp:>8.2f}")
    per_walk = np.array([stats([f for d in ours["zoom"].values() for f in d[i]])[:2] for i in range(len(next(iter(ours["zoom"].values()))))])
    med, p95 = (float(x) for x in np.median(per_walk, axis=0))
    mx = max(all_ours)
    am, bm = stats(all_a)[0], stats(all_b)[0]
    cm, cp, _ = stats([c for v in ours["zoom_cpu"].values() for c in v])
    print(f"  {'all levels':>14} {len(all_ours):>6} {med:>8.2f} {p95:>8.2f} {mx:>8.2f}  {am:>9.1f} {am / med:>6.0f}x  {bm:>9.2f} {bm / med:>5.1f}x  {cm:>8.2f} {cp:>8.2f}")
    print(f"  goal: median and p95 < {GOAL_FRAME_MS:.0f} ms at every zoom level: {'OK' if worst < GOAL_FRAME_MS else 'MISSED'}"
          f" (worst {worst:.2f} ms)")
    print("\npan (15% of the width per step):")
    for (w, o), a, b in zip(ours["pans"].items(), naive["pans"].values(), best["pans"].values()):
        m, p, _ = stats(o)
        print(f"  width {w:>12.0f} ns: median {m:6.2f} ms, p95 {p:6.2f} ms   A {stats(a)[0]:8.1f} ms ({stats(a)[0] / m:.0f}x)"
              f"   B {stats(b)[0]:7.2f} ms ({stats(b)[0] / m:.1f}x)")
    extra = ours["peak_mb"] - ours["qt_baseline_mb"]
    budget = 2 * size_mb
    print(f"\npeak memory (open, first frame, zoom and pan walks; the analyses were on screen {ours['analyses_s']:.1f} s "
          f"after open): {ours['peak_mb']:.0f} MiB; Qt baseline (empty window) {ours['qt_baseline_mb']:.0f} MiB; "
          f"above baseline {extra:.0f} MiB = {extra / size_mb:.2f}x the trace on disk "
          f"(goal < 2x = {budget:.0f} MiB: {'OK' if extra < budget else 'MISSED'}); "
          f"peak when the walks ended {ours['peak_timeline_mb']:.0f} MiB")
    print(f"\nbaseline A (same picture): build + first frame {naive['first_s']:.1f} s; per frame {am / med:.0f}x slower "
          f"than ours on {ours['events'] / naive['events']:.0f}x fewer events; goal >= 10x: {'OK' if am / med >= 10 else 'MISSED'}")
    print(f"baseline B (best case naive, one drawRects per opcode, no culling): build + first frame "
          f"{best['first_s']:.2f} s; per frame {bm / med:.1f}x slower than ours")


def main() -> None:
    use_private_settings()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instructions", type=int, default=10_000_000)
    ap.add_argument("--trace", type=Path, default=None, help="use this trace (default: a cached synthetic one)")
    ap.add_argument("--baseline-events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3,
                    help="zoom walks of ours; per zoom level the median over walks of each walk's median and p95")
    a = ap.parse_args()
    trace = a.trace if a.trace is not None else cached_synthetic_trace(a.instructions)
    ours = run_ours(trace, a.repeat)  # first: its peak memory is read before the baseline allocates
    best = run_baseline(trace, a.baseline_events, per_bar_brushes=False)
    naive = run_baseline(trace, a.baseline_events, per_bar_brushes=True)
    report(ours, naive, best, trace)


if __name__ == "__main__":
    main()
