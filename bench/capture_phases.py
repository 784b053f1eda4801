"""Run `trnx capture ARGS` in this process and print, at exit, the main thread's CPU and wall time by
the capture's functions (exclusive: a function's callees that are listed here count for themselves):
where the thread that simulates and builds the rows spends its time, and where it waits (wall well
above CPU: for the writer's queue, a core, or the disk).

    cd TREE && .venv/bin/python /path/to/bench/capture_phases.py capture -q -w llama3.1-70b \\
        --phase prefill --seq 4096 --detail instruction --cores all -o /tmp/x.trnx

Prints on stderr `PHASES wall W cpu C (u U s S)`, then one line per function (CPU, wall), the main
thread's whole time first. The code measured is the working directory's (as bench/thread_cpu.py), so a baseline tree
runs the same way; a function a tree does not have is left out. Other threads' work (the writer's
`trace-prepare` and `trace-writer`) is not counted: bench/thread_cpu.py gives it.
"""

from __future__ import annotations

import atexit
import collections
import importlib
import os
import resource
import runpy
import sys
import threading
import time
from typing import Any

CPU: collections.Counter[str] = collections.Counter()
WALL: collections.Counter[str] = collections.Counter()
_stack: list[list[float]] = []  # per open call: [callees' CPU, callees' wall]
T0 = time.perf_counter()

# (module, class or None, function, label); a module that imported a function by name is patched too
WRAPPED = [
    ("simcore.timing.window", None, "schedule_window", "schedule_window", ["simcore.capture.engine"]),
    ("simcore.lowering.kernels", None, "lower_kernel", "lower_kernel", ["simcore.capture.engine"]),
    ("simcore.capture.engine", None, "simulate", "simulate (its own lines)", []),
    ("simcore.capture.tables", "TraceTables", "add_kernels", "add_kernels", []),
    ("simcore.capture.core_rows", "FlowStream", "add", "flows into batches", []),
    ("simcore.capture.core_rows", None, "track_rows", "track_rows", ["simcore.capture.tables"]),
    ("simcore.capture.tables", "TraceTables", "write", "tables' write loop", []),
    ("simcore.trace.writer", "TraceWriter", "prepare", "batches' preparation", []),
    ("explorer.model.timeline.index_capture", "IndexRecorder", "__call__", "index recorder", []),
    ("explorer.model.timeline.index_capture", "IndexRecorder", "save", "index's save (its own lines)", []),
    ("explorer.model.timeline.index_capture", "IndexRecorder", "_validate", "index's save: validating", []),
    ("explorer.model.timeline.index_capture", None, "_index_small_tables", "index's save: small tables",
     []),
    ("explorer.model.timeline.index_cache", None, "save", "index's save: the file's write", []),
    ("explorer.model.timeline.index_cache", None, "stamp", "index's save: the files' stamp", []),
    ("simcore.trace.background", "BackgroundWriter", "write", "queueing (waits)", []),
    ("simcore.trace.background", "BackgroundWriter", "close", "close (waits)", []),
]


def _wrap(f: Any, label: str) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return f(*args, **kwargs)
        t, w = time.thread_time(), time.perf_counter()
        _stack.append([0.0, 0.0])
        try:
            return f(*args, **kwargs)
        finally:
            dt, dw = time.thread_time() - t, time.perf_counter() - w
            inner = _stack.pop()
            CPU[label] += dt - inner[0]
            WALL[label] += dw - inner[1]
            if _stack:
                _stack[-1][0] += dt
                _stack[-1][1] += dw
    return timed


def _install() -> None:
    for mod, owner, name, label, importers in WRAPPED:
        m = importlib.import_module(mod)
        obj = getattr(m, owner) if owner else m
        f = getattr(obj, name, None)
        if f is None:
            continue
        w = _wrap(f, label)
        setattr(obj, name, w)
        for other in importers:
            o = importlib.import_module(other)
            if getattr(o, name, None) is f:
                setattr(o, name, w)


def _report() -> None:
    main = time.thread_time()
    r = resource.getrusage(resource.RUSAGE_SELF)
    print(f"PHASES wall {time.perf_counter() - T0:.1f} cpu {r.ru_utime + r.ru_stime:.1f} "
          f"(u {r.ru_utime:.1f} s {r.ru_stime:.1f})", file=sys.stderr)
    print(f"  {'':30s} {'cpu':>6s} {'wall':>6s}", file=sys.stderr)
    print(f"  {'main thread':30s} {main:6.2f} {time.perf_counter() - T0:6.2f}", file=sys.stderr)
    for k, v in CPU.most_common():
        print(f"  {k:30s} {v:6.2f} {WALL[k]:6.2f}", file=sys.stderr)


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # the tree measured, not this script's directory
    atexit.register(_report)
    t = time.thread_time()
    _install()  # (imports the capture's modules: counted as imports below)
    CPU["imports"] += time.thread_time() - t
    WALL["imports"] += time.perf_counter() - T0
    sys.argv[0] = "trnx"
    runpy.run_module("explorer.cli.main", run_name="__main__", alter_sys=True)
