"""The GUI thread's own CPU per pass of the event loop after each navigation, on a big trace.

    QT_QPA_PLATFORM=offscreen python bench/gui_passes.py TRACE [--root DIR]

Opens TRACE in the real window (1920x1080), waits for the analysis panels, then does nothing
(the noise floor: the same passes with nothing asked of the window), selects the
first instruction and follows five deep links the way `bench/tools_gui.py` does: the kernels 45.5%,
27.6% and 66.3% of the way through the trace's kernel ids (824, 500 and 1200 on the 28M capture
these figures were first taken on) and the instructions half and a third of the way through the
instructions table (with `--deep`, three more: to instructions hundreds of rows down big
kernels). After each, it runs the event loop one pass at a time for 1.5 s (`--window`) and
reports the GUI thread's CPU time (`time.thread_time`) of the synchronous call plus the first
pass, of the worst pass, of the worst pass after the first (the first repaints the timeline at
the new place; the later ones are the panels following it), and of all of them. A pass is what a user waits through
before the window answers again, and its CPU time hardly depends on what else the machine
runs, where `tools_gui.py`'s wall-clock gaps, on a shared 2-core machine, are mostly the load.
Beside the CPU, each action reports its longest pass's wall time, that pass's CPU (a pass far
longer than its CPU waited: for a core, or for the GIL a worker held) and its major page faults
(reads from disk of a memory-mapped table the page cache had dropped: a wait holding the GIL), and `--stalls MS` samples
every thread's stack while a pass has lasted over MS and reports the commonest. A sampler in
Python needs the GIL itself, so it cannot see who holds it during a freeze: `--freeze-dump S`
has faulthandler's C watchdog (which runs without the GIL) write every thread's stack to
stderr when a pass has lasted S seconds, where the thread in a long C call is the holder.
`--spy S` has another process run `py-spy dump` on this one when a pass has lasted S seconds
(py-spy names the thread holding the GIL, and with `--native` its C frames: a page fault, a
lock); it needs `py-spy` on PATH or beside the interpreter (not a project dependency).
The longest pass's wall time is split by the kernel's scheduler statistics of the GUI
thread (/proc, Linux): on a core (its CPU), runnable but waiting for a core (`its_core_wait_ms`:
the machine's load, or this process's other threads), and the rest asleep (`its_asleep_ms`:
waiting for Python's GIL, the disk, or a lock); beside it, the CPU each other thread of the
process used in that pass (`its_others_cpu_ms`).
`--root` runs another checkout's `explorer` (the same bench on the code before a change).
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np


KERNEL_AT = (0.4555, 0.2764, 0.6634)  # where the kernel links point, as fractions of the sorted kernel ids


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the checkout whose explorer package runs (default: this one)")
    ap.add_argument("--deep", action="store_true",
                    help="also follow links to instructions 300 and 900 rows down three kernels of over 3,000 events "
                         "(the operator tree expands to them)")
    ap.add_argument("--window", type=float, default=1.5,
                    help="seconds of passes measured after each action (longer on a loaded machine, where the "
                         "workers' answers come late)")
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds of the event loop run before each action, for the previous one's trailing work")
    ap.add_argument("--stalls", type=float, default=0.0, metavar="MS",
                    help="sample every thread's stack while a pass has run longer than MS of wall time, and "
                         "report the most frequent stacks of the GUI thread and of the others")
    ap.add_argument("--spy", type=float, default=0.0, metavar="S",
                    help="when one pass has lasted S seconds, have another process run `py-spy dump --native` on "
                         "this one (the thread holding the GIL is marked 'gil'); the dumps go to stderr and, in short, "
                         "into the action's row")
    ap.add_argument("--freeze-dump", type=float, default=0.0, metavar="S",
                    help="when one pass has lasted S seconds, write every thread's Python stack to stderr "
                         "(faulthandler, which needs no GIL: the thread holding it shows where)")
    ap.add_argument("--worker-nice", type=int, default=None, metavar="N",
                    help="run the window's workers N nicer than the GUI thread (explorer.ui.worker.WORKER_NICENESS; "
                         "a tree without it runs as it is)")
    args = ap.parse_args(argv)
    from gui_window import open_analysed

    if args.worker_nice is not None:
        sys.path.insert(0, str(args.root))
        import explorer.ui.worker as worker

        if hasattr(worker, "WORKER_NICENESS"):
            worker.WORKER_NICENESS = args.worker_nice

    app, w, spin = open_analysed(args.trace, args.root, settle=args.settle + 1)
    first, links = _links(w)
    watch = _Watch(args.stalls) if args.stalls else None
    spy = _Spy(args.spy) if args.spy else None
    gui_tid = threading.get_native_id()
    # the noise floor: the same passes with nothing asked of the window (what the machine's load alone costs)
    actions = [("idle (nothing done)", lambda: None), ("select the first instruction", lambda: w.view.select(first))]
    for link in links:
        actions.append((f"deep link {link}", lambda link=link: w.tools.go_to_link(link)))
    if args.deep:
        actions += [(f"deep link {link}", lambda link=link: w.tools.go_to_link(link)) for link in _deep_links(w)]
    rows = []
    for name, act in actions:
        spin(max(args.settle, args.window))  # the previous action's trailing work done
        c = time.thread_time()
        act()
        sync = (time.thread_time() - c) * 1e3
        passes, walls, faults = [], [], []
        longest: dict = {}
        t = time.perf_counter()
        while time.perf_counter() - t < args.window:
            armed = args.freeze_dump and _arm(args.freeze_dump)  # (outside the pass: starting a thread takes time)
            threads = _sched_all()
            c, wall, f, s = time.thread_time(), time.perf_counter(), _major_faults(), _sched(gui_tid)
            if watch is not None:
                watch.begin()
            if spy is not None:
                spy.begin()
            app.processEvents()
            if spy is not None:
                spy.end()
            if watch is not None:
                watch.end()
            passes.append((time.thread_time() - c) * 1e3)
            walls.append((time.perf_counter() - wall) * 1e3)
            s = [(b - a) / 1e6 for a, b in zip(s, _sched(gui_tid))]
            faults.append(_major_faults() - f)
            if walls[-1] == max(walls):
                longest = {"its_core_wait_ms": round(s[1], 1),
                           "its_asleep_ms": round(max(walls[-1] - s[0] - s[1], 0.0), 1),
                           "its_others_cpu_ms": _others_cpu(threads, _sched_all(), gui_tid)}
            if armed:
                faulthandler.cancel_dump_traceback_later()
            time.sleep(0.002)
        rows.append({"action": name, "call_and_first_pass_ms": round(sync + passes[0], 1),
                     "worst_pass_ms": round(max(passes), 1),
                     # the first pass repaints the timeline at the new place; what the panels do after it:
                     "worst_later_pass_ms": round(max(passes[1:], default=0.0), 1),
                     "all_passes_ms": round(sync + sum(passes), 1),
                     # wall time of the longest pass, with its CPU: a pass far longer than its CPU waited
                     # (for a core, or for Python's GIL held by a worker in a long C call)
                     "longest_pass_wall_ms": round(max(walls), 1),
                     "its_cpu_ms": round(passes[walls.index(max(walls))], 1),
                     # pages the GUI thread read from disk in that pass (a memory-mapped table evicted from the
                     # page cache): it waits for the disk holding the GIL, so no other thread runs either
                     "its_major_faults": faults[walls.index(max(walls))], "major_faults": sum(faults),
                     # where that pass's wall went (the GUI thread on a core, waiting for one, asleep) and
                     # what the process's other threads ran meanwhile
                     **longest})
        if spy is not None:
            rows[-1]["spy"] = spy.report()
        if watch is not None:
            rows[-1]["stalls"] = watch.report()
        print(json.dumps(rows[-1]), flush=True)
    w.close()
    if watch is not None:
        watch.stopped = True
    if spy is not None:
        spy.close()
    result = {"trace": str(args.trace), "root": str(args.root), "load_1min": os.getloadavg()[0], "actions": rows}
    print(json.dumps(result))
    return result


def _major_faults() -> int:
    """Major page faults of this (the GUI) thread so far: each one a read from disk."""
    import resource

    return resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)).ru_majflt


def _sched(tid: int) -> tuple[int, int]:
    """(ns on a core, ns runnable but waiting for one) of a thread so far (Linux's schedstat; zeros elsewhere)."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            on, waiting, _ = f.read().split()
    except (OSError, ValueError):
        return 0, 0
    return int(on), int(waiting)


def _sched_all() -> dict[int, int]:
    """Every thread of this process: its ns on a core so far."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return {}
    return {t: _sched(t)[0] for t in tids}


def _others_cpu(before: dict[int, int], after: dict[int, int], gui: int) -> dict[str, float]:
    """CPU (ms) each thread but the GUI one used between two `_sched_all`, by name, busiest first."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = collections.Counter()
    for tid, ns in after.items():
        if tid != gui and ns - before.get(tid, ns) > 0:
            name = names.get(tid) or _comm(tid)
            out[name.rstrip("0123456789_") or name] += (ns - before.get(tid, ns)) / 1e6
    return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v >= 0.5}


def _comm(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return str(tid)


class _Spy:
    """Another process that runs `py-spy dump --native` on this one when a pass has lasted `late`
    seconds (it needs no GIL here: a frozen pass is seen from outside). The pass's start is shared
    through a mapped file the other process polls every 10 ms."""

    SCRIPT = r"""
import mmap, os, struct, subprocess, sys, time
pid, path, late, spy = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
with open(path, "r+b") as f:
    m = mmap.mmap(f.fileno(), 8)
done = 0.0
while True:
    time.sleep(0.01)
    start = struct.unpack("d", m[:8])[0]
    if start < 0 or os.getppid() != pid:
        break
    if start > 0 and start != done and time.monotonic() - start > late:
        done, at = start, time.monotonic() - start
        out = subprocess.run([spy, "dump", "--native", "--pid", str(pid)], capture_output=True, text=True).stdout
        sys.stdout.write(f"=== pass of {at:.2f} s so far (dumped {time.monotonic() - start:.2f} s in)\n{out}\n")
        sys.stdout.flush()
"""

    def __init__(self, late: float) -> None:
        import mmap
        import shutil
        import subprocess
        import tempfile

        spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        self.file = tempfile.NamedTemporaryFile(prefix="gui-passes-spy-")
        self.file.write(b"\0" * 8)
        self.file.flush()
        self.map = mmap.mmap(self.file.fileno(), 8)
        self.out = tempfile.TemporaryFile("w+")
        self.read_to = 0
        self.proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT, str(os.getpid()), self.file.name,
                                      str(late), spy], stdout=self.out)

    def _set(self, value: float) -> None:
        import struct

        self.map[:8] = struct.pack("d", value)

    def begin(self) -> None:
        self._set(time.monotonic())

    def end(self) -> None:
        self._set(0.0)

    def report(self) -> list[dict]:
        """The dumps since the last report: per dump, the thread holding the GIL and its innermost frames."""
        self.out.flush()
        self.out.seek(self.read_to)
        text = self.out.read()
        self.read_to = self.out.tell()
        if text:
            sys.__stderr__.write(text)
        dumps = []
        for dump in text.split("=== ")[1:]:
            lines = dump.splitlines()
            holder, frames = None, []
            for line in lines[1:]:
                if line.startswith("Thread "):
                    if holder is not None:
                        break
                    if "gil" in line:
                        holder = line.strip()
                elif holder is not None and line.strip():
                    frames.append(line.strip())
            dumps.append({"pass": lines[0], "gil": holder, "frames": frames[:12]})
        return dumps

    def close(self) -> None:
        self._set(-1.0)
        self.proc.wait(timeout=10)


def _arm(seconds: float) -> bool:
    """faulthandler's watchdog for this pass (a new thread each time; under a tight `prlimit --as`
    starting it can fail, and that pass goes unwatched)."""
    try:
        faulthandler.dump_traceback_later(seconds, exit=False, file=sys.__stderr__)  # (the process's own fd 2)
    except (RuntimeError, ValueError, OSError):
        return False
    return True


class _Watch:
    """Samples every thread's stack each 5 ms while a pass of the event loop has lasted over
    `late_ms`: where the GUI thread was, and what the other threads ran meanwhile."""

    def __init__(self, late_ms: float) -> None:
        import threading

        self.late = late_ms / 1e3
        self.started: float | None = None
        self.gui = threading.get_ident()
        self.mine: collections.Counter[str] = collections.Counter()
        self.others: collections.Counter[str] = collections.Counter()
        self.stopped = False
        threading.Thread(target=self._run, daemon=True, name="gui-passes-watch").start()

    def begin(self) -> None:
        self.started = time.perf_counter()

    def end(self) -> None:
        self.started = None

    def _run(self) -> None:
        import sys

        from gui_stall import _where

        me = __import__("threading").get_ident()
        while not self.stopped:
            time.sleep(0.005)
            s = self.started
            if s is None or time.perf_counter() - s < self.late:
                continue
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                (self.mine if ident == self.gui else self.others)[_where(frame)] += 1

    def report(self) -> dict:
        out = {"gui": self.mine.most_common(4), "others": self.others.most_common(6)}
        self.mine.clear()
        self.others.clear()
        return out


def _links(w) -> tuple[object, list[str]]:
    """The first instruction (its EventRef) and the five links, from the trace shown in `w`."""
    index = w.view.index
    ins = index.tables["instructions"]
    kernels = np.sort(np.asarray(index.tables["kernels"].column("kernel_id")))
    kernel = [f"kernel:{int(kernels[min(round(len(kernels) * f), len(kernels) - 1)])}" for f in KERNEL_AT]
    instruction = [f"instruction:{int(ins.value('id', ins.n // d))}" for d in (2, 3)]
    return index.find_id(int(ins.value("id", 0))), [kernel[0], instruction[0], kernel[1], instruction[1], kernel[2]]


def _deep_links(w) -> list[str]:
    """Links to an instruction 900 rows down a kernel, 300 down the next, 900 down a third (kernels of
    over 3,000 events from the middle of the trace; in a smaller trace, its three biggest kernels and
    as far down as they go): the tree lays out every row before the one shown."""
    h = w.analysis.session.analysis.hierarchy
    k = h.kernels.assign(events=h.kernels["instruction_count"] + h.kernels["dma_count"])
    big = k[k["events"] > 3000]["kernel_id"].tolist()
    big = big[len(big) // 2:] if len(big) >= 6 else k.nlargest(3, "events")["kernel_id"].tolist()
    links = []
    for kernel, down in zip(big, (900, 300, 900)):
        nodes = h.children(f"kernel:{kernel}")["node"].tolist()
        at = min(down, len(nodes) - 1)
        found = [n for n in nodes[at:] if n.startswith("instruction:")] or [n for n in nodes[:at] if n.startswith("instruction:")][-1:]
        links += found[:1]
    return links


if __name__ == "__main__":
    main()
