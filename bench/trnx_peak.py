"""Run `trnx ARGS` in this process and print its own peak RSS (VmHWM) last on stderr at exit, for the
benches that time commands as child processes (bench/real_captures.py, bench/analysis_speed.py).

    python bench/trnx_peak.py summary TRACE --json      (stderr ends with `PEAK_KB 123456`)

Why the child reports it rather than the parent reading wait4's ru_maxrss: exec carries the forking
parent's high-water mark over, and a bench's own process (after writing or mapping traces) is larger
than the commands it times. VmHWM counts the pages of a memory-mapped trace the command touched. The
code measured is the working directory's, put first on the path as `python -c` or `python -m` would,
so a bench can run a baseline checkout's code by starting this in that checkout.
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
from pathlib import Path

from process_memory import status_kib  # (bench/ is on sys.path until __main__ replaces it)

MARK = "PEAK_KB"


def command(args: list[str]) -> list[str]:
    """The command line that runs `trnx ARGS` this way (with the Python running the bench)."""
    return [sys.executable, str(Path(__file__).resolve()), *args]


def peak_mib(stderr: str) -> float | None:
    """The peak a run printed (MiB), or None when it printed none (it died before exiting)."""
    kib = [line.split()[1] for line in stderr.splitlines() if line.startswith(f"{MARK} ")]
    return int(kib[-1]) / 1024 if kib else None


def _report() -> None:
    print(f"\n{MARK} {status_kib('VmHWM')}", file=sys.stderr)


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # the tree measured, not this script's directory
    atexit.register(_report)
    sys.argv[0] = "trnx"
    runpy.run_module("explorer.cli.main", run_name="__main__", alter_sys=True)
