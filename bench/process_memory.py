"""This process's memory as the benches report it: resident now, and the peak so far (MiB)."""

from __future__ import annotations

import resource


def rss_mib() -> float:
    """Resident set size now (VmRSS), including touched pages of memory-mapped traces."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_mib() -> float:
    """Peak resident set size of this process so far (ru_maxrss, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
