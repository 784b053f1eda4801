"""bench/disk_write.py, which times a write through the page cache against the same write around it
(O_DIRECT, and simcore's DirectFile as the trace writer uses it): each mode writes and reports, and
removes its file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_each_mode_writes_reports_and_removes_its_file(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "disk_write.py"), "--mib", "32", "--repeat", "1",
                           "--dir", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = re.findall(r"^(buffered|direct|direct-trace) +32 MiB: +([\d.]+) s, +(\d+) MB/s", proc.stdout, re.M)
    assert [r[0] for r in runs] == ["buffered", "direct", "direct-trace"], proc.stdout
    assert all(int(r[2]) > 0 for r in runs), proc.stdout
    assert list(tmp_path.iterdir()) == []
