"""A guard for benches on a shared machine: kill the bench if its anonymous memory grows too large.

An address-space cap (`prlimit --as`) is the wrong guard for a memory-mapped reader: mapping a
trace of 8.4 GB takes 8.4 GB of address space although its pages are page cache the kernel can
reclaim, so the cap makes the mapping fail long before memory is short. What can push other
processes out is anonymous memory (heap, numpy arrays), which the kernel cannot drop. This
watchdog sums RssAnon (/proc/PID/status) over the bench and all its descendants every 0.2 s; past
the limit it says so in one line, kills every descendant and exits the bench with status 3.
It also keeps the peak of the descendants' anonymous memory per measured command (sampled, so
a spike shorter than 0.2 s can be missed), which the bench reports beside VmHWM (which counts the
mapped trace pages a process touched).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from process_memory import status_kib  # (bench/ is on sys.path)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            out += [int(c) for c in task.read_text().split()]
        except OSError:  # the task ended meanwhile
            pass
    return out


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (children, their children, ...)."""
    found, todo = [], _children(pid)
    while todo:
        p = todo.pop()
        found.append(p)
        todo += _children(p)
    return found


def rss_anon_kib(pid: int) -> int:
    """The process's anonymous resident memory in KiB (0 if it is gone)."""
    return status_kib("RssAnon", pid)


class AnonWatchdog:
    """Polls the anonymous memory of this process and its descendants; kills them all past `limit_gb`."""

    def __init__(self, limit_gb: float, period_s: float = 0.2) -> None:
        self.limit_kib = int(limit_gb * 1e9 / 1024)
        self.limit_gb = limit_gb
        self.period_s = period_s
        self.peak_children_kib = 0  # reset by the bench before each measured command
        threading.Thread(target=self._loop, name="anon-watchdog", daemon=True).start()

    def reset_peak(self) -> int:
        """The descendants' peak anonymous memory (KiB) since the last reset, and start again."""
        peak, self.peak_children_kib = self.peak_children_kib, 0
        return peak

    def _loop(self) -> None:
        me = os.getpid()
        while True:
            kids = descendants(me)
            theirs = sum(rss_anon_kib(p) for p in kids)
            self.peak_children_kib = max(self.peak_children_kib, theirs)
            total = theirs + rss_anon_kib(me)
            if total > self.limit_kib:
                print(f"anon watchdog: the bench and its {len(kids)} child processes hold {total * 1024 / 1e9:.2f} GB of "
                      f"anonymous memory, over the {self.limit_gb:g} GB limit (--anon-limit-gb): killed them all",
                      file=sys.stderr, flush=True)
                for p in kids:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                os._exit(3)
            time.sleep(self.period_s)
