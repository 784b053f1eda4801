"""bench/trnx_peak.py, through which bench/real_captures.py and bench/analysis_speed.py time `trnx`
commands: the command runs as usual and the peak RSS reported is the child's own, not the larger
bench process's that started it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import trnx_peak  # noqa: E402


def test_the_child_runs_trnx_and_reports_its_own_peak():
    held = bytearray(300 * 2**20)  # this (parent) process holds 300 MiB more than any child needs
    held[::4096] = b"x" * len(held[::4096])  # (touched: resident)
    proc = subprocess.run(trnx_peak.command(["--help"]), capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0 and "Usage: trnx" in proc.stdout
    peak = trnx_peak.peak_mib(proc.stderr)
    assert peak is not None and 5 < peak < 250  # the child's interpreter and CLI, not the parent's 300 MiB
    del held
    assert trnx_peak.peak_mib("Traceback ...\nMemoryError") is None  # a child that died before its exit hook
