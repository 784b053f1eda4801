"""The analysis panels (summary, operator tree, details) on a 10-million-instruction trace.

    python bench/analysis_panels.py [--instructions 10000000] [--trace PATH] [--repeat 3]

The real `MainWindow`, offscreen at 1920x1080, on the synthetic trace of
bench/synth_trace.py (cached like bench/frame_time.py's). Per run, in a fresh window:
- analysis ready: from `trace_loaded` to the summary and operator tree filled (the
  summary, per-chip summaries, `Hierarchy` and recommendations run on the analysis
  worker), and the longest the GUI thread went without processing events meanwhile
  (a 5 ms timer's largest gap: what a user would feel as a stall);
- filling the panels on the GUI thread once the analyses are there;
- operator tree: select the largest kernel's row (as a click on the timeline does),
  expand it (the view fetches its first chunks of instructions), select an
  instruction in its middle (timeline -> tree), sort by time, filter by "matmul";
- summary of the selection: a zoom of the timeline to the visible range's numbers
  on screen (includes the 300 ms debounce that waits for the user to stop zooming).
Baseline, same run, same process: the model calls `trnx summary --json` makes
(`summarize`, `summarize_per_chip`, `recommend`) with nothing else; the ratio is how
much the GUI adds to the numbers themselves. Median over --repeat runs (best in brackets).
Also the process's peak RSS (the memory-mapped trace's pages it touched included) once the
first window shows its analyses, and after that window's whole run, each beside the Qt
baseline (RSS with an empty main window) and against twice the trace's size on disk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from process_memory import peak_mib, rss_mib  # noqa: E402
from synth_trace import cached_synthetic_trace  # noqa: E402

WIDTH, HEIGHT = 1920, 1080


def isolate_settings() -> None:
    """Windows read and write their layout in a scratch settings file, not the user's."""
    from PySide6.QtCore import QSettings

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(Path(os.environ.get("TMPDIR", "/tmp")) / "trnx-bench-settings"))


def qt_baseline_mib() -> float:
    """RSS with Qt up and an empty main window shown (what frame_time.py calls the Qt baseline)."""
    from explorer.ui import ensure_app
    from explorer.ui.main_window import MainWindow

    isolate_settings()
    app = ensure_app()
    w = MainWindow()
    w.resize(WIDTH, HEIGHT)
    w.show()
    for _ in range(5):
        app.processEvents()
    rss = rss_mib()
    w.close()
    w.deleteLater()
    app.processEvents()
    return rss


def baseline(path: Path) -> float:
    from explorer.model.analysis.recommendations import recommend
    from explorer.model.analysis.summary import summarize, summarize_per_chip
    from simcore.trace import open_trace

    trace = open_trace(path)
    t = time.perf_counter()
    s = summarize(trace)
    summarize_per_chip(trace)
    recommend(trace, summary=s)
    return time.perf_counter() - t


def one_run(path: Path) -> dict[str, float]:
    from PySide6.QtCore import QModelIndex, QTimer

    from explorer.ui import ensure_app, open_window

    isolate_settings()
    app = ensure_app()
    w = open_window(path)
    w.resize(WIDTH, HEIGHT)
    w.show_error_dialogs = False
    panels = w.analysis
    out: dict[str, float] = {}
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    def spin(cond, limit: float = 600.0) -> None:
        t_end = time.perf_counter() + limit
        while not cond():
            if time.perf_counter() > t_end:
                raise TimeoutError("the window did not get there in time")
            app.processEvents()
            time.sleep(0.001)

    timer = QTimer()
    timer.timeout.connect(tick)
    loaded_at = []
    w.trace_loaded.connect(lambda _r: loaded_at.append(time.perf_counter()))
    spin(lambda: bool(loaded_at))
    gaps.clear()
    last[0] = time.perf_counter()
    timer.start(5)
    filled = []
    orig_ready = panels._ready

    def timed_ready(analysis) -> None:
        t = time.perf_counter()
        orig_ready(analysis)
        filled.append((t, time.perf_counter()))

    panels.session.ready.disconnect()
    panels.session.ready.connect(timed_ready)
    spin(lambda: bool(filled))
    out["peak_at_ready_mib"] = peak_mib()
    out["analysis_ready_s"] = filled[0][1] - loaded_at[0]
    out["max_gui_gap_ms"] = max(gaps) * 1e3 if gaps else 0.0
    out["fill_panels_ms"] = (filled[0][1] - filled[0][0]) * 1e3
    timer.stop()

    ops = panels.operators
    h = panels.session.analysis.hierarchy
    k = h.kernels.sort_values("instruction_count").iloc[-1]
    t = time.perf_counter()
    ops.select_node(f"kernel:{int(k.kernel_id)}")
    app.processEvents()
    out["select_kernel_ms"] = (time.perf_counter() - t) * 1e3
    idx = ops.view.currentIndex()
    t = time.perf_counter()
    ops.expand(idx)
    app.processEvents()
    out["expand_kernel_ms"] = (time.perf_counter() - t) * 1e3
    out["kernel_events"] = float(int(k.instruction_count))
    events = h.children(f"kernel:{int(k.kernel_id)}")
    node = events["node"].iloc[len(events) // 2]
    t = time.perf_counter()
    panels.session.select_node(node)  # what a click on that instruction in the timeline leads to
    app.processEvents()
    out["timeline_to_tree_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    ops.model.sort(2, 1)
    app.processEvents()
    out["sort_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    ops.filter.setText("matmul")
    ops._apply_filter()
    app.processEvents()
    out["filter_ms"] = (time.perf_counter() - t) * 1e3
    lo, hi = w.loaded.index.span
    t0, t1 = lo + (hi - lo) // 3, lo + (hi - lo) // 3 + (hi - lo) // 10
    summary = panels.summary
    t = time.perf_counter()
    w.timeline.zoom_to(t0, t1)
    spin(lambda: summary.summaries["selection"] is not None
         and summary.summaries["selection"].scope["t0_ns"] == max(int(w.timeline.viewport.t0), lo))
    out["selection_summary_s"] = time.perf_counter() - t
    w.close()
    w.deleteLater()
    app.processEvents()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instructions", type=int, default=10_000_000)
    ap.add_argument("--trace", type=Path, default=None, help="use this trace (default: a cached synthetic one)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    trace = a.trace if a.trace is not None else cached_synthetic_trace(a.instructions)
    runs, bases = [], []
    peak = 0.0
    qt = qt_baseline_mib()
    for i in range(a.repeat):
        runs.append(one_run(trace))
        if i == 0:  # the whole process so far: one window, its index, its analyses and the steps above
            peak = peak_mib()
        print(f"run {i + 1}: " + ", ".join(f"{k} {v:.3g}" for k, v in runs[-1].items()), flush=True)
    for i in range(a.repeat):  # after the windows, so the baseline's memory does not count in the peak above
        bases.append(baseline(trace))
        print(f"baseline {i + 1}: {bases[-1]:.2f} s", flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    best = {k: min(r[k] for r in runs) for k in runs[0]}
    b = statistics.median(bases)
    print(f"\ntrace {trace} ({a.instructions:,} instructions requested), median of {a.repeat} (best)")
    print(f"baseline: summarize + summarize_per_chip + recommend in process: {b:.2f} s (best {min(bases):.2f})")
    print(f"analysis ready after the trace is shown: {med['analysis_ready_s']:.2f} s ({best['analysis_ready_s']:.2f}) "
          f"= {med['analysis_ready_s'] / b:.2f}x the baseline; longest GUI stall meanwhile "
          f"{med['max_gui_gap_ms']:.0f} ms ({best['max_gui_gap_ms']:.0f})")
    print(f"filling the panels on the GUI thread: {med['fill_panels_ms']:.0f} ms ({best['fill_panels_ms']:.0f})")
    print(f"operator tree, largest kernel ({med['kernel_events']:,.0f} instructions): select its row "
          f"{med['select_kernel_ms']:.0f} ms, expand {med['expand_kernel_ms']:.0f} ms, timeline -> tree on an "
          f"instruction in its middle {med['timeline_to_tree_ms']:.0f} ms, sort by time {med['sort_ms']:.0f} ms, "
          f"filter {med['filter_ms']:.0f} ms")
    print(f"selection column after a zoom (incl. 300 ms debounce): {med['selection_summary_s']:.2f} s "
          f"({best['selection_summary_s']:.2f})")
    size = sum(f.stat().st_size for f in trace.rglob("*") if f.is_file()) / 2**20
    ready = runs[0]["peak_at_ready_mib"]
    print(f"peak RSS (memory-mapped trace pages included), Qt baseline (empty window) {qt:.0f} MiB, trace "
          f"{size:.0f} MiB on disk, goal above the baseline < 2x = {2 * size:.0f} MiB:")
    for label, value in (("open + first frame + analyses on screen", ready),
                         ("after the first window's whole run (tree, selection summary)", peak)):
        print(f"  {label}: {value:.0f} MiB, {value - qt:.0f} MiB above the baseline = {(value - qt) / size:.2f}x "
              f"the trace ({'OK' if value - qt < 2 * size else 'MISSED'})")


if __name__ == "__main__":
    main()
