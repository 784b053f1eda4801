"""bench/capture_phases.py, which splits a capture's main-thread CPU by function: the capture runs and
writes its trace as `trnx capture` does, and the split names the functions the CPU and wall time went to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_capture_runs_and_its_main_thread_time_is_split_by_function(tmp_path):
    out = tmp_path / "t.trnx"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "capture_phases.py"), "capture", "-q", "-w", "llama3.1-8b",
                           "--phase", "prefill", "--seq", "512", "--layers", "1", "--detail", "instruction", "-o", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "meta.json").exists()
    lines = proc.stderr.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("PHASES wall "))
    assert lines[head + 1].split() == ["cpu", "wall"]
    split = {line[:32].strip(): [float(x) for x in line[32:].split()] for line in lines[head + 2:] if line.startswith("  ")}
    assert {"main thread", "imports", "schedule_window", "track_rows"} <= set(split), split
    assert 0 < split["schedule_window"][0] < split["main thread"][0]
    assert split["main thread"][1] >= split["schedule_window"][1] > 0  # wall: the thread's whole run, and the part
