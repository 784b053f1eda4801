"""This process's memory as the benches report it: resident now, and the peak so far (MiB)."""

from __future__ import annotations

import resource


def status_kib(field: str, pid: int | str = "self") -> int:
    """A memory field of /proc/PID/status in KiB (`VmRSS`, `RssAnon`, ...); 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_mib() -> float:
    """Resident set size now (VmRSS), including touched pages of memory-mapped traces."""
    return status_kib("VmRSS") / 1024


def peak_mib() -> float:
    """Peak resident set size of this process so far (ru_maxrss, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
