"""Run `trnx ARGS` in this process and print, at exit, the CPU time (user + system) of each thread
by name, beside the process's wall and CPU time and peak RSS: which thread sets a command's pace.

    .venv/bin/python bench/thread_cpu.py capture -q -w llama3.1-70b --phase prefill --seq 4096 \\
        --detail instruction --cores all -o /tmp/x.trnx

Prints one line on stderr, e.g. `THREADCPU wall 56.4 process 26.1 (user 10.6 sys 15.5) main 14.2
trace-writer 9.4 trace-hash 2.5 peak 2.33 GiB` (pool threads summed under their prefix). The code
measured is the working directory's (`cd TREE && python .../thread_cpu.py ...`, put first on the
path, as `python -m` would), so it can be alternated with a baseline tree, as bench/real_captures.py does.
"""

from __future__ import annotations

import atexit
import collections
import os
import resource
import runpy
import sys
import threading
import time

from process_memory import status_kib  # (bench/ is on sys.path until __main__ replaces it)

CPU: collections.Counter[str] = collections.Counter()
_run = threading.Thread.run


def _timed_run(self: threading.Thread) -> None:
    try:
        _run(self)
    finally:
        CPU[self.name.split("_")[0]] += time.thread_time()  # (a pool's threads: `trace-hash_0`, ...)


def _report(t0: float) -> None:
    CPU["main"] += time.thread_time()
    r = resource.getrusage(resource.RUSAGE_SELF)
    hwm = status_kib("VmHWM")
    print(f"THREADCPU wall {time.perf_counter() - t0:.1f} process {r.ru_utime + r.ru_stime:.1f} "
          f"(user {r.ru_utime:.1f} sys {r.ru_stime:.1f}) " + " ".join(f"{k} {v:.1f}" for k, v in CPU.most_common())
          + f" peak {hwm / 2**20:.2f} GiB", file=sys.stderr)


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # the tree measured, not this script's directory
    threading.Thread.run = _timed_run
    atexit.register(_report, time.perf_counter())
    sys.argv[0] = "trnx"
    runpy.run_module("explorer.cli.main", run_name="__main__", alter_sys=True)
