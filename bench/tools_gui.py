"""The power tools (issue 18) on a big trace: time to answer, and how long they block the GUI thread.

    QT_QPA_PLATFORM=offscreen python bench/tools_gui.py TRACE [--kernel-id ID]

Opens TRACE in the real window, waits for the analysis panels, then runs each tool the
way a user triggers it -- a query in the console, a field search, the statistics table
and one histogram, a deep link, the memory view's first draw and its following a zoom and a
pan, the delta between two annotations -- and reports for each:
`answer_s` (from the trigger until the result is shown) and `max_stall_ms`, the longest
gap between ticks of a 5 ms QTimer on the GUI thread meanwhile (what a user feels as a
frozen window), with `gui_cpu_ms`, the GUI thread's own CPU time during that gap (near the gap:
the GUI thread was working; near zero: it waited for the GIL or for a core), and how much of
the rest it waited for a core (`gui_core_wait_ms`) or slept (`gui_asleep_ms`: the GIL, the disk). `--profile`
also prints, per tool, where the GUI thread was while the heartbeat was late
(`bench/gui_stall.py`); `--profile-qt`, which Qt event deliveries took longest. The idle noise floor is measured once every thread is idle. The baseline, measured in the same run, is the same work done inline on
the GUI thread (`inline_s`): the stall there would have been. Annotations are written
to a temporary copy's file, never to TRACE (its tables are hard-linked, not copied).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from private_settings import use_private_settings  # noqa: E402  (bench/ is on sys.path)

from gui_stall import Stall  # noqa: E402


def linked_copy(src: Path, dst: Path) -> Path:
    """A trace directory whose files are hard links (or copies across devices) of `src`'s."""
    for p in src.rglob("*"):
        q = dst / p.relative_to(src)
        if p.is_dir():
            q.mkdir(parents=True, exist_ok=True)
        elif p.name != "annotations.json":
            q.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(p, q)
            except OSError:
                shutil.copy2(p, q)
    return dst


def wait(app, done, timeout: float = 600.0) -> None:
    t = time.perf_counter()
    while not done():
        app.processEvents()
        time.sleep(0.001)
        if time.perf_counter() - t > timeout:
            raise TimeoutError("no answer")


def several_runs(runs: int) -> None:
    """Run this bench `runs` times in fresh processes; per tool, the median and worst of each figure."""
    import statistics
    import subprocess

    argv, skip = [], False
    for a in sys.argv[1:]:  # the same arguments but --runs N / --runs=N
        if skip or a.startswith("--runs="):
            skip = False
        elif a == "--runs":
            skip = True
        else:
            argv.append(a)
    results = []
    for r in range(runs):
        t = time.strftime("%H:%M:%S")
        out = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, check=True).stdout
        final = json.loads(out.strip().splitlines()[-1])
        load = os.getloadavg()[0]
        print(json.dumps({"run": r + 1, "started": t, "load_1min_after": round(load, 1)}), flush=True)
        results.append(final)
    names = [row["tool"] for row in results[0]["tools"]]
    summary = []
    for name in names:
        rows = [row for res in results for row in res["tools"] if row["tool"] == name]
        agg = {"tool": name}
        for key in ("answer_s", "max_stall_ms", "gui_cpu_ms", "gui_core_wait_ms", "gui_asleep_ms", "inline_s"):
            vals = [row[key] for row in rows if row.get(key) is not None]
            if vals:
                agg[key] = {"median": round(statistics.median(vals), 3), "worst": max(vals)}
        summary.append(agg)
        print(json.dumps(agg), flush=True)
    print(json.dumps({"trace": results[0]["trace"], "runs": runs, "tools": summary}))


def main() -> None:
    use_private_settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--kernel-id", type=int, default=None, help="the kernel a deep link goes to (default: the longest)")
    ap.add_argument("--profile", action="store_true", help="print where the GUI thread was during each tool's stalls")
    ap.add_argument("--profile-qt", action="store_true",
                    help="also time Qt's event deliveries and print, per tool, the receivers whose events took "
                         "longest (a Python QApplication.notify: slows every event; for finding C++ work only)")
    ap.add_argument("--switch-interval", type=float, default=None,
                    help="override sys.setswitchinterval (s) after the window is made, to compare")
    ap.add_argument("--no-pandas", action="store_true", help="skip the pandas baseline of the query (~3 GB at 28M events)")
    ap.add_argument("--runs", type=int, default=1,
                    help="run the whole sequence this many times, each in a fresh process, and print per tool the "
                         "median and worst of each figure (one run on a shared machine is mostly its load)")
    ap.add_argument("--root", type=Path, default=None,
                    help="the checkout whose explorer package runs (default: this one): the code before a change")
    ap.add_argument("--worker-nice", type=int, default=None, metavar="N",
                    help="run the window's workers N nicer than the GUI thread (explorer.ui.worker.WORKER_NICENESS; "
                         "a tree without it runs as it is)")
    args = ap.parse_args()
    if args.runs > 1:
        return several_runs(args.runs)
    if args.root is not None:
        sys.path.insert(0, str(args.root.resolve()))
    if args.worker_nice is not None:
        import explorer.ui.worker as worker

        if hasattr(worker, "WORKER_NICENESS"):
            worker.WORKER_NICENESS = args.worker_nice
    from explorer.model import annotations as A
    from explorer.model import deep_link
    from explorer.model.query import TraceQuery
    from explorer.model.stats import duration_histogram, duration_stats
    from explorer.model.timeline.field_search import field_search
    from explorer.ui import ensure_app, open_window

    if args.profile_qt:
        from gui_stall import timed_app

        timed_app()
    app = ensure_app()
    tmp = Path(tempfile.mkdtemp(prefix="tools-bench-"))
    path = linked_copy(args.trace, tmp / args.trace.name)
    w = open_window(None)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    print(json.dumps({"switch_interval_s": sys.getswitchinterval()}), flush=True)
    w.resize(1920, 1080)
    w.show_error_dialogs = False
    t = time.perf_counter()
    w.open_path(path)
    wait(app, lambda: w.loaded is not None)
    open_s = time.perf_counter() - t
    wait(app, lambda: w.analysis.session.analysis is not None)
    index = w.view.index
    tools = w.tools
    rows: list[dict] = []

    def settle() -> None:
        """Let the previous tool's trailing work (debounced panels, the workers' queues) finish."""
        t = time.perf_counter()
        while time.perf_counter() - t < 1.5:
            app.processEvents()
            time.sleep(0.002)
        for worker in workers:
            worker.submit(lambda: None, lambda ok, v: None).result()
        app.processEvents()

    def report(name: str, s: Stall, answer: float, inline: float) -> None:
        rows.append({"tool": name, "answer_s": round(answer, 3), "max_stall_ms": round(s.worst * 1e3, 1),
                     "gui_cpu_ms": round(s.worst_cpu * 1e3, 1),
                     # the rest of that gap: waiting for a core, and asleep (the GIL a worker held, the disk)
                     "gui_core_wait_ms": round(s.worst_wait * 1e3, 1),
                     "gui_asleep_ms": round(max(s.worst - s.worst_cpu - s.worst_wait, 0.0) * 1e3, 1),
                     "inline_s": round(inline, 3)})
        print(json.dumps(rows[-1]), flush=True)
        if args.profile:
            for n, where in s.top():
                print(f"    {2 * n:5d} ms  {where}", flush=True)
            print("    inclusive: " + ", ".join(f"{where} {2 * n}" for n, where in s.top_inclusive()), flush=True)
            for n, where in s.top_others():
                print(f"    {2 * n:5d} ms  (meanwhile) {where}", flush=True)
        if args.profile_qt:  # (on its own too: it names the C++ work the stack sampler cannot see)
            for who, ms in app.slow.most_common(5):
                print(f"    {ms:5.0f} ms  (Qt event, exclusive) {who}", flush=True)

    def measure(name: str, start, done, inline) -> None:
        settle()
        if args.profile_qt:
            app.slow.clear()
            app.recording = True
        with Stall(sample=args.profile, workers=args.profile) as s:
            t = time.perf_counter()
            start()
            wait(app, done)
            t1 = time.perf_counter()
            while time.perf_counter() - t1 < 1.0:  # what the window does after the answer (debounced panels)
                app.processEvents()
                time.sleep(0.001)
        answer = t1 - t
        if args.profile_qt:
            app.recording = False
        t = time.perf_counter()
        inline()
        report(name, s, answer, time.perf_counter() - t)

    from explorer.ui.analysis_session import _worker as analysis_worker
    from explorer.ui.selection_worker import _worker as selection_worker
    from explorer.ui.tools.background import _worker as tools_worker
    from explorer.ui.utilisation_view import _worker as view_worker
    workers = (analysis_worker, tools_worker, selection_worker, view_worker)
    settle()
    with Stall(sample=args.profile) as s:  # the noise floor: the machine's own scheduling gaps, nothing running
        for _ in range(800):
            app.processEvents()
            time.sleep(0.001)
    report("idle (noise floor)", s, 0.0, 0.0)
    first = index.find_id(int(index.tables["instructions"].value("id", 0)))
    measure("first selection of an instruction (dependencies)", lambda: w.view.select(first), lambda: True, lambda: w.view.select(first))

    sql = "SELECT opcode, count(*) n, sum(dur_ns) total, quantile_cont(dur_ns, 0.95) p95 FROM instructions GROUP BY 1"
    c = tools.console
    c.editor.setPlainText(sql)
    measure("query console (group by opcode)", c.run, lambda: c.run_button.isEnabled() and c.result is not None,
            lambda: TraceQuery(index.trace).run(sql))

    if not args.no_pandas:
        t = time.perf_counter()  # baseline for the query itself: pandas on the same columns
        df = index.trace.table("instructions").select(["opcode", "dur_ns"]).to_pandas()
        df.groupby("opcode", observed=True)["dur_ns"].agg(["count", "sum", lambda d: d.quantile(0.95)])
        rows.append({"tool": "baseline: pandas read + group by opcode (same query)", "answer_s": round(time.perf_counter() - t, 3),
                     "max_stall_ms": None, "inline_s": round(time.perf_counter() - t, 3)})
        print(json.dumps(rows[-1]), flush=True)
        del df

    q = "opcode:MultiplyMoving dur>300ns"
    bar = w.search
    measure(f"field search '{q}'", lambda: bar.run(q), lambda: bar.hits is not None and bar.searching is None,
            lambda: field_search(index, q))

    st = tools.statistics
    w.panels["Statistics"].raise_()
    measure("statistics per opcode", st.refresh, lambda: not st.busy and st.model.rowCount() > 0,
            lambda: duration_stats(TraceQuery(index.trace), "opcode"))
    name = st.model.record(0)["name"]
    st.histogram = None
    measure(f"histogram of {name}", lambda: st._row_chosen(0), lambda: st.histogram is not None,
            lambda: duration_histogram(TraceQuery(index.trace), "opcode", name))

    kid = args.kernel_id
    if kid is None:
        k = index.tables["kernels"]
        kid = int(k.column("kernel_id")[int(k.column("dur_ns").argmax())])
    link = f"kernel:{kid}"
    measure(f"deep link {link}", lambda: tools.go_to_link(link), lambda: True, lambda: deep_link.resolve(index, link))
    iid = int(index.tables["instructions"].value("id", index.tables["instructions"].n // 2))
    measure(f"deep link instruction:{iid}", lambda: tools.go_to_link(f"instruction:{iid}"), lambda: True,
            lambda: deep_link.resolve(index, f"instruction:{iid}"))

    ice = tools.icicle
    w.panels["Icicle"].raise_()
    ice.boxes = []
    from explorer.model.icicle import icicle
    from explorer.model.regions import compare, regions
    measure("icicle by kernel time", ice.refresh, lambda: len(ice.boxes) > 0, lambda: icicle(index.trace))
    reg = tools.regions
    layers = [r for r in reg.table_frame.itertuples() if r.level == "layer"][:2]
    reg.compared = None
    names = [r.name for r in layers]
    measure("two layers side by side (regions)", lambda: reg.choose(names),
            lambda: reg.compared is not None and getattr(reg.compared, "shape", (0, 0))[1] == len(names),
            lambda: compare(index, reg.table_frame, [r.region for r in layers]))

    from explorer.model import memory as MM
    mem = tools.memory
    has_memory = index.trace.has_table("sbuf_allocations")
    w.panels["Memory"].raise_()
    vp = w.view.viewport
    vp.fit()

    def drawn() -> bool:
        return mem.drawn is not None and mem.drawn[:2] == (vp.t0, vp.t1)

    def draw_inline(data) -> None:
        for lane in data.lanes_of(mem.memory):
            MM.raster(data, lane, vp.t0, vp.t1, mem.mode, mem.canvas.plot_width(), 96)

    if not has_memory:
        print(json.dumps({"tool": "memory view", "skipped": "the trace has no sbuf_allocations table"}), flush=True)
    else:
        measure("memory view: read the allocations, draw the whole step", lambda: mem.set_trace(index.trace, float(index.span[0])),
                drawn, lambda: draw_inline(MM.load_memory(index.trace)))
        lo, hi = index.span
        measure("memory view follows a zoom to 1 ms", lambda: w.zoom_to(lo + (hi - lo) / 2, lo + (hi - lo) / 2 + 1e6), drawn,
                lambda: draw_inline(mem.data))
        mem.axis.setCurrentText("Address")
        measure("memory view follows a pan, addresses down", lambda: vp.pan(0.5e6), drawn, lambda: draw_inline(mem.data))

    panel = tools.annotations
    lo, hi = index.span
    a = panel.add_marker(lo + (hi - lo) // 4)
    b = panel.add_marker(lo + 3 * (hi - lo) // 4)
    panel.table.selectAll()  # (computes the delta once already: the measured run starts from none)

    def delta_again() -> None:
        panel.delta = None
        panel._selection_changed()

    measure("delta between two markers (half the trace)", delta_again, lambda: panel.delta is not None,
            lambda: A.between(index, a, b))
    w.close()
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"trace": str(args.trace), "events": index.event_count, "open_s": round(open_s, 2), "tools": rows}))


if __name__ == "__main__":
    main()
