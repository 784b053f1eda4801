"""Write MIB MiB (8 GiB by default) to a file through the page cache and around it (O_DIRECT), alternated, and print
each run's wall time, rate and the writing thread's CPU: what a big capture's table files cost the
thread that writes them, on this machine's disk and kernel (simcore/trace/diskwrite.py).

    flock /work/heavy.lock nice -n 10 .venv/bin/python bench/disk_write.py --mib 8192 --repeat 2 \\
        --dir /tmp/x

Modes: `buffered` (plain writes, the kernel's writeback), `direct` (O_DIRECT from page-aligned
memory, one write in flight), `direct-trace` (simcore's DirectFile, as the trace writer uses it:
chunks hashed and written on two threads). Each writes CHUNK-sized pieces of the same bytes into a
fresh file, deleted after the run (the buffered one's dirty pages written back first, outside the
time, so the next run starts clean).
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcore.trace.diskwrite import DirectFile, DirectIO  # noqa: E402

CHUNK = 16 << 20


def _piece() -> mmap.mmap:
    m = mmap.mmap(-1, CHUNK)
    m.write(os.urandom(1 << 20) * (CHUNK >> 20))
    return m


def run(mode: str, path: Path, mib: int) -> str:
    piece = _piece()
    n = max(1, (mib << 20) // CHUNK)
    size = n * CHUNK
    p0, r0, t0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_THREAD), time.perf_counter()
    if mode == "direct-trace":
        io = DirectIO()
        f = DirectFile(path, io)
        for _ in range(n):
            f.write(piece)
        f.close()
        io.shutdown()
    else:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if mode == "direct" else 0)
        fd = os.open(path, flags, 0o644)
        for i in range(n):
            os.pwrite(fd, piece, i * CHUNK)
        os.close(fd)
    wall = time.perf_counter() - t0
    r1, p1 = resource.getrusage(resource.RUSAGE_THREAD), resource.getrusage(resource.RUSAGE_SELF)
    os.sync()  # (outside the time: the next run starts with no dirty pages)
    path.unlink()
    return (f"{mode:13s} {size >> 20} MiB: {wall:6.2f} s, {size / wall / 1e6:5.0f} MB/s, writing thread "
            f"user {r1.ru_utime - r0.ru_utime:.1f} s sys {r1.ru_stime - r0.ru_stime:.1f} s, process "
            f"user {p1.ru_utime - p0.ru_utime:.1f} s sys {p1.ru_stime - p0.ru_stime:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=8192, help="MiB written in each run (whole 16 MiB pieces)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp"))
    ap.add_argument("--modes", default="buffered,direct,direct-trace")
    ap.add_argument("--chunk-mib", type=int, help="DirectIO.CHUNK for direct-trace (default: simcore's)")
    ap.add_argument("--writers", type=int, help="DirectIO.WRITERS for direct-trace (default: simcore's)")
    ap.add_argument("--in-flight", type=int, help="DirectIO.IN_FLIGHT for direct-trace (default: simcore's)")
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    if a.chunk_mib:
        DirectIO.CHUNK = a.chunk_mib << 20
    if a.writers:
        DirectIO.WRITERS = a.writers
    if a.in_flight:
        DirectIO.IN_FLIGHT = a.in_flight
    print(f"direct-trace: chunks of {DirectIO.CHUNK >> 20} MiB, {DirectIO.IN_FLIGHT} in flight, "
          f"{DirectIO.WRITERS} writing thread(s)")
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    for _ in range(a.repeat):
        for mode in a.modes.split(","):
            print(run(mode, a.dir / f"disk-write-{os.getpid()}.bin", a.mib), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
