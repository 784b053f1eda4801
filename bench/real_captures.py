"""Issue 16's figures on this project's own captures, each beside a baseline measured in the same run.

    .venv/bin/python bench/real_captures.py [--figures summary,diff,window,frames,capture]
                                            [--captures 12M,28M,100M] [--repeat 3] [--recapture]
                                            [--baseline-tree DIR] [--anon-limit-gb 7]
                                            [--opens cold,after capture,no index,reopen]

The captures are made by the bench itself with `trnx capture` and kept under bench/out/
(gitignored) between runs; a capture is made again when its command changed or with
--recapture. They need ~13 GB of disk; the 100M one ~1 minute and several GB of memory,
so run one big bench at a time on a shared machine. Guard it with --anon-limit-gb (e.g. 7), not
`prlimit --as`: the window maps the whole trace (8.4 GB of address space at 100M, reclaimable page
cache), so an address-space cap makes the mapping fail; the limit counts anonymous memory
(RssAnon of the bench and its children, polled every 0.2 s: bench/anon_watchdog.py) and kills
them with one line when it is exceeded. With it, each command's sampled peak anonymous memory is
reported beside its VmHWM peak (which counts the mapped trace pages it touched).

  12M      llama3.1-70b prefill seq 4096, instruction detail on core 0: 12.6M events, 21.5M flows
  12M-mx   the same in MXFP8: the other side of `trnx diff`
  28M      llama3.1-8b prefill seq 8192, instruction detail on every core: 28M instructions
  100M     llama3.1-70b prefill seq 4096, instruction detail on every core: 101M events, 8.9 GB

Figures (each command in a fresh process; wall time, CPU time of the process, peak RSS):
  summary  `trnx summary T --json`; baseline: plain pandas reading T's instructions and flows
           and grouping them (busy time and count per chip, core and engine; flows per kind)
  diff     `trnx diff 12M 12M-mx --json`; baseline: that pandas read + groupby of both traces
  rules    each recommendation rule's CPU time in process (after the summary and operator tree
           it shares), beside the rows of the tables it reads: linear, none dominating
  window   `trnx view T --smoke-test --timings`: a cold open (the index the capture recorded, none of
           the trace's files in the page cache: bench/page_cache.py evicts this trace's pages only,
           never the machine's whole cache), the first open after the capture (that index, the
           files as cached), an open with no index (builds and saves it) and a reopen; beside
           `trnx summary T`'s time warm and cold (analyses on screen within 1.5x of it) and the
           trace's size on disk (peak RSS within 1.5x of it). With --baseline-tree DIR, that
           tree's window too, alternated with this tree's (baseline first); --opens picks some
  frames   frame times of a zoom walk over the 100M capture (bench/frame_time.py's walk): once while
           the analysis panels are being computed, then after (while the Statistics panel's
           whole-trace query, started once the analyses are shown, runs), then once that is done,
           step after step with no wait, and then at a user's pace (a step every 1/30 s, the window
           waiting in its event loop between steps: PACE_S).
           A frame is what the event loop paints after the view changes (frame_time.paint_frame).
           With --baseline-tree DIR, that tree's window too (its code imported through PYTHONPATH),
           alternated with this tree's --repeat times, baseline first
  capture  `trnx capture` of each capture: wall time, events/s, peak RSS against the trace's
           size; baseline: writing the same instructions, DMA and flows rows as raw Arrow IPC.
           With --baseline-tree DIR (another checkout, e.g. `git worktree add --detach DIR main`),
           the same capture by that tree's code too (run from DIR with this venv's Python, after
           a small warm-up capture in each tree for numba's caches), alternated with this tree's
           --repeat times (that tree, this tree, ...), each into an emptied path (the baseline's
           a scratch directory deleted after each run)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT / "bench"))
from anon_watchdog import AnonWatchdog  # noqa: E402
import page_cache  # noqa: E402
from private_settings import use_private_settings  # noqa: E402  (bench/ is on sys.path)
import trnx_peak  # noqa: E402  (runs `trnx ARGS`, printing its own peak RSS)

CAPTURES: dict[str, list[str]] = {
    "12M": ["-w", "llama3.1-70b", "--phase", "prefill", "--seq", "4096", "--detail", "instruction"],
    "12M-mx": ["-w", "llama3.1-70b", "--phase", "prefill", "--seq", "4096", "--detail", "instruction", "--dtype", "mxfp8"],
    "28M": ["-w", "llama3.1-8b", "--phase", "prefill", "--seq", "8192", "--detail", "instruction", "--cores", "all"],
    "100M": ["-w", "llama3.1-70b", "--phase", "prefill", "--seq", "4096", "--detail", "instruction", "--cores", "all"],
}
FIGURES = ("summary", "diff", "rules", "window", "frames", "capture")


def child_env() -> dict[str, str]:
    """The environment of the commands the bench runs: read when each starts, so they inherit
    `use_private_settings()`'s XDG_CONFIG_HOME (taken at import, before main() set it, the `trnx
    view` children read the user's settings file: whatever window size and docks were saved last)."""
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen"}

WATCHDOG: AnonWatchdog | None = None  # set by --anon-limit-gb

def trace_path(name: str) -> Path:
    return OUT / f"{name}.trnx"


def disk_gib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and f.name != "timeline-index.cache") / 2**30


def run(args: list[str], *, python: bool = False, tree: Path = ROOT) -> dict:
    """Run `trnx ARGS` (or `python ARGS`) in a fresh process: wall, CPU (user + system) and peak RSS.
    `tree`: the checkout whose code runs (bench/trnx_peak.py puts the working directory first on the path)."""
    cmd = [sys.executable, *args] if python else trnx_peak.command(args)
    # a script's own directory comes first on its path, not the working directory: name the tree
    env = child_env() if tree == ROOT or not python else {**child_env(), "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if WATCHDOG is not None:
        WATCHDOG.reset_peak()
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tree, env=env)
    wall = time.perf_counter() - t
    anon = WATCHDOG.reset_peak() / 1024 if WATCHDOG is not None else None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_mib": trnx_peak.peak_mib(proc.stderr), "peak_anon_mib": anon,
            "stdout": proc.stdout}


def best(runs: list[dict]) -> dict:
    """The best wall time of some runs, with its CPU and the largest peak (medians beside)."""
    b = min(runs, key=lambda r: r["wall_s"])
    return {**b, "median_wall_s": statistics.median(r["wall_s"] for r in runs),
            "peak_mib": max((r["peak_mib"] or 0) for r in runs) or b["peak_mib"]}


# -- the captures ------------------------------------------------------------------------------
def ensure_capture(name: str, recapture: bool) -> tuple[Path, dict | None]:
    """The capture's trace (made now when missing, stale or asked for) and, if made now, its figures."""
    path = trace_path(name)
    stamp = OUT / f"{name}.command.json"
    want = {"args": CAPTURES[name]}
    if path.exists() and stamp.exists() and json.loads(stamp.read_text()) == want and not recapture:
        return path, None
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"capturing {name}: trnx capture {' '.join(CAPTURES[name])}", flush=True)
    # --overwrite replaces the old capture (ours) only once the new one is complete, so whoever
    # reads it meanwhile (another bench, a window) never finds it missing or half written
    r = run(["capture", *CAPTURES[name], "-o", str(path), "--overwrite"])
    stamp.write_text(json.dumps(want))
    kept = recorded_index(name)
    kept.unlink(missing_ok=True)
    if (path / "timeline-index.cache").exists():  # the index the capture recorded, for the window figure
        shutil.copyfile(path / "timeline-index.cache", kept)
    return path, r


def events_of(path: Path) -> int:
    meta = json.loads((path / "meta.json").read_text())
    return sum(int(meta["tables"][t].get("rows", 0)) for t in ("instructions", "dma"))


# -- baselines (each in its own process, like the commands they stand beside) ----------------
def pandas_baseline(paths: list[Path]) -> None:
    """Plain pandas: read instructions and flows, group busy time and counts per (chip, core, engine)
    and flows per kind, for each trace."""
    import pandas as pd

    for p in paths:
        tracks = pd.read_feather(p / "tracks.arrow")
        ins = pd.read_feather(p / "instructions.arrow").merge(tracks[["track_id", "chip", "core", "kind"]], on="track_id")
        ins.groupby(["chip", "core", "kind"], observed=True)["dur_ns"].agg(["sum", "size"])
        del ins
        flows = pd.read_feather(p / "flows.arrow")
        flows.groupby("kind", observed=True).size()
        del flows


def raw_write_baseline(path: Path, where: Path) -> None:
    """Write the trace's instructions, DMA and flows rows as raw Arrow IPC (read back memory-mapped)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from simcore.trace import open_trace

    trace = open_trace(path, validate=False)
    tables = {n: trace.table(n) for n in ("instructions", "dma", "flows")}
    import numpy as np

    for t in tables.values():  # fault the pages in first (a byte per page): the write is what is timed
        for c in t.columns:
            for chunk in c.chunks:
                for b in chunk.buffers():
                    if b is not None and b.size:
                        int(np.frombuffer(b, dtype=np.uint8)[::4096].sum())
    spent = 0.0
    for name, table in tables.items():  # each file deleted once written (untimed): the disk holds one at a time
        t0 = time.perf_counter()
        with pa.OSFile(str(where / f"{name}.arrow"), "wb") as sink, ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
        spent += time.perf_counter() - t0
        (where / f"{name}.arrow").unlink()
    print(json.dumps({"write_s": spent, "rows": sum(t.num_rows for t in tables.values())}))


# -- figures ------------------------------------------------------------------------------------
def figure_summary(paths: dict[str, Path], repeat: int) -> list[dict]:
    rows = []
    for name, p in paths.items():
        if name == "12M-mx":
            continue
        ours = best([run(["summary", str(p), "--json"]) for _ in range(repeat)])
        base = best([run([__file__, "--pandas-baseline", str(p)], python=True) for _ in range(repeat)])
        rows.append({"figure": "summary", "trace": name, "ours": ours, "baseline": base})
        print(f"summary {name}: trnx {ours['wall_s']:.2f} s wall {ours['cpu_s']:.2f} s CPU {ours['peak_mib']:.0f} MiB; "
              f"pandas {base['wall_s']:.2f} s wall {base['cpu_s']:.2f} s CPU; ratio {ours['wall_s'] / base['wall_s']:.2f}x",
              flush=True)
    return rows


def figure_diff(paths: dict[str, Path], repeat: int) -> list[dict]:
    a, b = paths.get("12M"), paths.get("12M-mx")
    if a is None or b is None:
        return []
    ours = best([run(["diff", str(a), str(b), "--json"]) for _ in range(repeat)])
    base = best([run([__file__, "--pandas-baseline", str(a), str(b)], python=True) for _ in range(repeat)])
    print(f"diff 12M 12M-mx: trnx {ours['wall_s']:.2f} s wall {ours['cpu_s']:.2f} s CPU; pandas on both "
          f"{base['wall_s']:.2f} s wall {base['cpu_s']:.2f} s CPU; ratio {ours['wall_s'] / base['wall_s']:.2f}x", flush=True)
    return [{"figure": "diff", "trace": "12M vs 12M-mx", "ours": ours, "baseline": base}]


def figure_rules(paths: dict[str, Path], repeat: int) -> list[dict]:
    rows = []
    for name, p in paths.items():
        if name == "12M-mx":
            continue
        got = json.loads(run([__file__, "--rules", str(p)], python=True)["stdout"].strip().splitlines()[-1])
        rows.append({"figure": "rules", "trace": name, **got})
        slowest = max(got["rules"], key=got["rules"].get)
        print(f"rules {name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in got["rules"].items())
              + f"; slowest {slowest} reads {got['flows'] / 1e6:.1f}M flows "
              f"({got['rules'][slowest] / max(got['flows'], 1) * 1e9:.0f} ns per flow); summary {got['summary_s']:.2f} s",
              flush=True)
    return rows


def rules(path: Path) -> None:
    from explorer.model.analysis import recommendations as R
    from explorer.model.analysis.hierarchy import Hierarchy
    from explorer.model.analysis.summary import summarize
    from simcore.trace import open_trace

    trace = open_trace(path)
    c = time.process_time()
    summary = summarize(trace)
    summary_s = time.process_time() - c
    ctx = R._Context(trace, Hierarchy(trace), summary)
    _ = ctx.kernels, ctx.events
    out = {}
    for name, rule in R.RULES.items():
        c = time.process_time()
        rule(ctx)
        out[name] = time.process_time() - c
    print(json.dumps({"rules": out, "summary_s": summary_s, "flows": trace.flows.num_rows,
                      "instructions": trace.instructions.num_rows}))


def recorded_index(name: str) -> Path:
    """Where the bench keeps the timeline index `trnx capture` recorded for a capture (the copy in
    the trace is marked validated by the first open, so a later run restores it from here)."""
    return OUT / f"{name}.recorded-index.cache"


OPENS = ("cold", "after capture", "no index", "reopen")


def figure_window(paths: dict[str, Path], repeat: int, baseline_tree: Path | None = None,
                  opens: tuple[str, ...] = OPENS) -> list[dict]:
    """Opens of each capture: "cold", the index `trnx capture` recorded with none of the trace's
    files in the page cache (page_cache.evict: this trace's pages only); "after capture", that
    index with the files as the page cache holds them; "no index" (built, then saved); "reopen".
    With a baseline tree, its window too, alternated with this tree's (baseline first); cold
    and reopen `repeat` times each. Beside them `trnx summary` warm (best of `repeat`) and cold."""
    rows = []
    trees = [ROOT] if baseline_tree is None else [baseline_tree, ROOT]
    for name, p in paths.items():
        if name == "12M-mx":
            continue
        cache, kept = p / "timeline-index.cache", recorded_index(name)
        opened: dict[str, dict[str, dict]] = {str(t): {} for t in trees}
        for how in opens:
            if how in ("cold", "after capture") and not kept.exists():
                continue  # captured before captures recorded the index
            runs: dict[str, list[dict]] = {str(t): [] for t in trees}
            for _ in range(repeat if how in ("cold", "reopen") else 1):
                for tree in trees:
                    if how in ("cold", "after capture"):
                        shutil.copyfile(kept, cache)  # ours: the capture wrote it
                    if how == "cold":
                        page_cache.evict(p)
                    if how == "no index":
                        cache.unlink(missing_ok=True)  # ours: the first open writes it again
                    load = os.getloadavg()[0]
                    r = run(["view", str(p), "--smoke-test", "--timings"], tree=tree)
                    runs[str(tree)].append({**json.loads(r["stdout"].strip().splitlines()[-1]), "wall_s": r["wall_s"],
                                            "peak_anon_mib": r["peak_anon_mib"], "load": load})
            for t, got in runs.items():
                opened[t][how] = {**min(got, key=lambda o: o["first_frame_s"]), "runs": got}
        summary = best([run(["summary", str(p), "--json"]) for _ in range(repeat)])
        cold_summary = []
        for _ in range(repeat):
            page_cache.evict(p)
            cold_summary.append(run(["summary", str(p), "--json"]))
        cold = best(cold_summary)
        size = disk_gib(p)
        rows.append({"figure": "window", "trace": name, "opens": opened[str(ROOT)], "summary": summary,
                     "cold_summary": cold, "trace_gib": size,
                     **({"baseline_tree": {"tree": str(baseline_tree), "opens": opened[str(baseline_tree)]}}
                        if baseline_tree is not None else {})})
        print(f"window {name}: trnx summary {summary['wall_s']:.2f} s warm, {cold['wall_s']:.2f} s cold "
              f"(median {cold['median_wall_s']:.2f} s)", flush=True)
        for tree in trees:
            label = "this tree" if tree == ROOT else f"baseline {tree}"
            for how, o in opened[str(tree)].items():
                ref = cold if how == "cold" else summary
                print(f"window {name} ({size:.2f} GiB), {label}, {how}: first frame {o['first_frame_s']:.2f} s, "
                      f"analyses {o['analyses_s']:.2f} s ({o['analyses_s'] / ref['wall_s']:.2f}x trnx summary's "
                      f"{ref['wall_s']:.2f} s{' cold' if how == 'cold' else ''}), peak {o['peak_rss_mb'] / 1024:.2f} GiB = "
                      f"{o['peak_rss_mb'] / 1024 / size:.2f}x the trace"
                      + (f" (anonymous {o['peak_anon_mib'] / 1024:.2f} GiB, sampled)" if o.get("peak_anon_mib") else "")
                      + f"; load {o['load']:.1f}"
                      + (f"; every run's first frame / analyses: " + ", ".join(
                          f"{x['first_frame_s']:.2f}/{x['analyses_s']:.1f}" for x in o["runs"]) if len(o["runs"]) > 1 else ""),
                      flush=True)
    return rows


def figure_frames(paths: dict[str, Path], repeat: int, baseline_tree: Path | None = None) -> list[dict]:
    """The walks in a fresh window; with a baseline tree, its window and this tree's alternated
    (baseline first), `repeat` times each."""
    p = paths.get("100M")
    if p is None:
        return []
    trees = [ROOT] if baseline_tree is None else [baseline_tree, ROOT]
    rows = []
    for _ in range(1 if baseline_tree is None else repeat):
        for tree in trees:
            r = run([__file__, "--frames", str(p), "--repeat", str(repeat)], python=True, tree=tree)
            got = json.loads(r["stdout"].strip().splitlines()[-1])
            if Path(got["code"]).resolve() != tree.resolve():
                raise SystemExit(f"the frames of {tree} ran {got['code']}'s code")
            got["load"] = os.getloadavg()[0]
            label = "this tree" if tree == ROOT else f"baseline {tree}"
            for when, what in (("during", "during the analyses"),
                               ("after", "after the analyses (the Statistics query running)"),
                               ("idle", "after the Statistics query too"),
                               ("paced", f"the same, one step every {PACE_S * 1e3:.0f} ms")):
                g = got.get(when)
                if g is None:
                    continue
                print(f"frames 100M, {label}, {what}: zoom walk median {g['median_ms']:.1f} ms, p95 {g['p95_ms']:.1f} ms "
                      f"over {g['frames']} frames (GUI thread CPU median {g['cpu_median_ms']:.1f} ms, "
                      f"p95 {g['cpu_p95_ms']:.1f} ms)", flush=True)
            print(f"frames 100M, {label}: first frame {got['first_frame_s']:.2f} s, analyses done {got['analyses_s']:.1f} s, "
                  f"Statistics query done {got['statistics_s']:.1f} s"
                  + (f", peak anonymous {r['peak_anon_mib'] / 1024:.2f} GiB (sampled)" if r["peak_anon_mib"] else "")
                  + f"; load {got['load']:.1f}", flush=True)
            rows.append({"figure": "frames", "trace": "100M", "tree": str(tree), **got})
    return rows


PACE_S = 1 / 30
"""The paced walk's step: a held W key repeats 25-33 times a second (X11's and GNOME's defaults), and
a wheel's notches come no faster. Between steps the window waits in its event loop, as a user's does;
the walks above paint step after step with no wait, so on a shared machine the scheduler treats the
GUI thread as one more CPU-bound process and its frames queue for a core behind the others."""


def frames(path: Path, repeat: int) -> None:
    """A zoom walk over the whole span down to single instructions in a real window: once while
    the analysis panels are computed (the first seconds after opening), then `repeat` times
    once they are done, then `repeat` times at a user's pace (PACE_S)."""
    import numpy as np
    import explorer
    from frame_time import HEIGHT, WIDTH, paint_frame, zoom_scenario
    from PySide6.QtWidgets import QApplication

    from explorer.ui import ensure_app
    from explorer.ui.main_window import MainWindow

    app = ensure_app()
    w = MainWindow()
    w.resize(WIDTH, HEIGHT)
    w.show()
    done: list[float] = []
    w.analysis.session.ready.connect(lambda a: done.append(time.perf_counter()))
    w.analysis.session.failed.connect(lambda m: done.append(time.perf_counter()))
    t = time.perf_counter()
    w.open_path(path)
    while w.loaded is None:
        QApplication.processEvents()
        time.sleep(0.002)
    tl = w.timeline
    paint_frame(tl)
    first = time.perf_counter() - t
    lo, hi = tl.viewport.lo, tl.viewport.hi

    def walk(times: int, pace_s: float = 0.0) -> dict:
        walls, cpus = [], []
        due = [time.perf_counter()]

        def set_range(a: float, b: float) -> None:
            if pace_s:  # the window waits in its event loop until the next input event, as a user's does
                while (left := due[0] - time.perf_counter()) > 0:
                    QApplication.processEvents()
                    time.sleep(min(left, 0.002))
                due[0] = time.perf_counter() + pace_s
            tl.viewport.set_range(a, b)

        def frame() -> float:
            c = time.thread_time()  # the GUI thread's own CPU (the analysis worker may run meanwhile)
            ms = paint_frame(tl)
            cpus.append((time.thread_time() - c) * 1e3)
            walls.append(ms)
            return ms

        for _ in range(times):
            zoom_scenario(set_range, frame, lo, hi)
        return {"frames": len(walls), "median_ms": float(np.median(walls)), "p95_ms": float(np.percentile(walls, 95)),
                "max_ms": float(np.max(walls)), "cpu_median_ms": float(np.median(cpus)),
                "cpu_p95_ms": float(np.percentile(cpus, 95))}

    during = walk(1)
    while not done:
        QApplication.processEvents()
        time.sleep(0.01)
    after = walk(repeat)
    # the Statistics panel's whole-trace query starts once the analyses are shown, so it ran
    # beside the walk above: walk again once it is done too (nothing computing but the frames)
    stats = w.tools.statistics
    while stats.busy:
        QApplication.processEvents()
        time.sleep(0.01)
    stats_s = time.perf_counter() - t
    idle = walk(repeat)
    paced = walk(repeat, PACE_S)
    print(json.dumps({"during": during, "after": after, "idle": idle, "paced": paced, "first_frame_s": first,
                      "analyses_s": done[0] - t, "statistics_s": stats_s,
                      "code": str(Path(explorer.__file__).parents[1])}))
    os._exit(0)


WARM_UP = ["-w", "llama3.1-8b", "--phase", "prefill", "--seq", "512", "--layers", "1", "--detail", "instruction",
           "--cores", "all"]


def alternate_with_baseline(name: str, tree: Path, repeat: int) -> tuple[dict, dict]:
    """`tree`'s capture and this tree's, alternated `repeat` times, each into a path the bench
    emptied first (a capture replacing an old trace also pays for deleting it: the first capture
    of the run, which replaced the cached one, is left out): the best of each, with every run's
    figures and the machine's load beside it."""
    scratch = OUT / f".baseline-{name}.trnx"
    for t in (ROOT, tree):
        run(["capture", *WARM_UP, "-o", str(scratch), "--overwrite"], tree=t)
    shutil.rmtree(scratch, ignore_errors=True)
    ours, base = [], []
    for _ in range(repeat):
        shutil.rmtree(trace_path(name), ignore_errors=True)  # ours (bench/out), made again below: one big trace on disk at a time
        try:
            base.append(run(["capture", *CAPTURES[name], "-o", str(scratch), "--overwrite"], tree=tree))
            base[-1]["load"] = os.getloadavg()[0]
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        ours.append(ensure_capture(name, True)[1])
        ours[-1]["load"] = os.getloadavg()[0]
    for label, runs in (("this tree", ours), (f"baseline {tree}", base)):
        print(f"capture {name}, {label}: " + ", ".join(
            f"{r['wall_s']:.1f} s wall {r['cpu_s']:.1f} s CPU {r['peak_mib'] / 1024:.2f} GiB (load {r.get('load', 0):.1f})"
            for r in runs), flush=True)
    return {**best(ours), "runs": ours}, {**best(base), "runs": base}


def figure_capture(made: dict[str, dict], paths: dict[str, Path], baseline_tree: Path | None = None,
                   repeat: int = 1) -> list[dict]:
    rows = []
    for name, r in made.items():
        r["load"] = os.getloadavg()[0]
        base = None
        if baseline_tree is not None:
            r, base = alternate_with_baseline(name, baseline_tree, repeat)
        p = paths[name]
        tmp = OUT / f".raw-write-{name}"
        tmp.mkdir(exist_ok=True)
        try:
            raw = json.loads(run([__file__, "--raw-write", str(p), str(tmp)], python=True)["stdout"].strip().splitlines()[-1])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        n, size = events_of(p), disk_gib(p)
        rows.append({"figure": "capture", "trace": name, "ours": r, "events": n, "trace_gib": size, "raw_write": raw,
                     **({"baseline_tree": {"tree": str(baseline_tree), **base}} if base else {})})
        print(f"capture {name}: {r['wall_s']:.1f} s wall {r['cpu_s']:.1f} s CPU ({n / r['wall_s'] / 1e6:.1f}M events/s), peak "
              f"{r['peak_mib'] / 1024:.2f} GiB = {r['peak_mib'] / 1024 / size:.2f}x the {size:.2f} GiB trace; raw Arrow "
              f"write of its {raw['rows'] / 1e6:.1f}M rows {raw['write_s']:.1f} s ({raw['rows'] / raw['write_s'] / 1e6:.1f}M rows/s)"
              + (f"; baseline tree {base['wall_s']:.1f} s wall {base['cpu_s']:.1f} s CPU "
                 f"({n / base['wall_s'] / 1e6:.1f}M events/s), peak {base['peak_mib'] / 1024:.2f} GiB" if base else ""),
              flush=True)
    return rows


def main() -> None:
    use_private_settings()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--figures", default=",".join(FIGURES))
    ap.add_argument("--captures", default=",".join(CAPTURES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--recapture", action="store_true", help="capture again even when a cached capture matches")
    ap.add_argument("--baseline-tree", type=Path,
                    help="run this checkout's code too, alternated (capture, window and frames figures)")
    ap.add_argument("--opens", default=",".join(OPENS), help="the window figure's opens (default: all)")
    ap.add_argument("--anon-limit-gb", type=float,
                    help="kill the bench and its children if their anonymous memory exceeds this (GB)")
    ap.add_argument("--pandas-baseline", nargs="+", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--raw-write", nargs=2, type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--frames", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--rules", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.pandas_baseline:
        return pandas_baseline(a.pandas_baseline)
    if a.raw_write:
        return raw_write_baseline(*a.raw_write)
    if a.frames:
        return frames(a.frames, a.repeat)
    if a.rules:
        return rules(a.rules)
    global WATCHDOG
    if a.anon_limit_gb:
        WATCHDOG = AnonWatchdog(a.anon_limit_gb)
    figures = a.figures.split(",")
    names = [n for n in a.captures.split(",") if n]
    if "diff" in figures and "12M" in names and "12M-mx" not in names:
        names.append("12M-mx")
    paths, made = {}, {}
    for name in names:
        paths[name], r = ensure_capture(name, a.recapture or "capture" in figures)
        if r is not None:
            made[name] = r
    results = []
    if "capture" in figures:
        results += figure_capture(made, paths, a.baseline_tree, a.repeat)
    if "summary" in figures:
        results += figure_summary(paths, a.repeat)
    if "diff" in figures:
        results += figure_diff(paths, a.repeat)
    if "rules" in figures:
        results += figure_rules(paths, a.repeat)
    if "window" in figures:
        results += figure_window(paths, a.repeat, a.baseline_tree, tuple(a.opens.split(",")))
    if "frames" in figures:
        results += figure_frames(paths, a.repeat, a.baseline_tree)
    for r in results:
        for v in r.values():
            if isinstance(v, dict):
                v.pop("stdout", None)
    (OUT / "real-captures.json").write_text(json.dumps(results, indent=1))
    print(f"figures written to {OUT / 'real-captures.json'}")


if __name__ == "__main__":
    main()
